// float32 instantiations: TF32 (one MMA) and 3xTF32 (big/small split, three MMAs).
// 3xTF32 has the C_out <= 32 configuration only: with more channels the composite (cuDNN in
// fp32) was faster in every shape measured on the H200 (1.06x to 1.88x; BENCHMARKS.md, v23).
#include "cuda/fused_launch.cuh"
#include "cuda/fused_modes.h"

namespace fusedconv::fused {
namespace {
using Op = cute::SM80_16x8x8_F32TF32TF32F32_TN;
using SmallTF32 = SmallConfig<float, Op, false>;
using LargeTF32 = LargeConfig<float, Op, false>;
using Small3x = SmallConfig<float, Op, true>;
}  // namespace

Fit plan_f32(const Params& p, bool split3x, int max_smem_bytes) {
  return split3x ? plan_one<Small3x>(p, max_smem_bytes)
                 : plan_mode<SmallTF32, LargeTF32>(p, max_smem_bytes);
}

cudaError_t launch_f32(const Params& p, bool split3x, int max_smem_bytes, cudaStream_t stream) {
  return split3x ? launch_one<Small3x>(p, max_smem_bytes, stream)
                 : launch_mode<SmallTF32, LargeTF32>(p, max_smem_bytes, stream);
}

}  // namespace fusedconv::fused
