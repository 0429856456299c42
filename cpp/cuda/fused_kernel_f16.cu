// 16-bit instantiations: bfloat16 and float16 inputs, m16n8k16 MMAs with fp32 accumulate.
#include "cuda/fused_launch.cuh"
#include "cuda/fused_modes.h"

namespace fusedconv::fused {
namespace {
using OpBF16 = cute::SM80_16x8x16_F32BF16BF16F32_TN;
using OpFP16 = cute::SM80_16x8x16_F32F16F16F32_TN;
using SmallBF16 = SmallConfig<cutlass::bfloat16_t, OpBF16, false>;
using LargeBF16 = LargeConfig<cutlass::bfloat16_t, OpBF16, false>;
using SmallFP16 = SmallConfig<cutlass::half_t, OpFP16, false>;
using LargeFP16 = LargeConfig<cutlass::half_t, OpFP16, false>;
}  // namespace

Fit plan_f16(const Params& p, bool bf16, int max_smem_bytes) {
  return bf16 ? plan_mode<SmallBF16, LargeBF16>(p, max_smem_bytes)
              : plan_mode<SmallFP16, LargeFP16>(p, max_smem_bytes);
}

cudaError_t launch_f16(const Params& p, bool bf16, int max_smem_bytes, cudaStream_t stream) {
  return bf16 ? launch_mode<SmallBF16, LargeBF16>(p, max_smem_bytes, stream)
              : launch_mode<SmallFP16, LargeFP16>(p, max_smem_bytes, stream);
}

}  // namespace fusedconv::fused
