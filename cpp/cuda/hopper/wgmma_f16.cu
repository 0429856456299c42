// 16-bit instantiations of the Hopper kernel: bfloat16 and float16, fp32 accumulate.
#include "cuda/fused_modes.h"
#include "cuda/hopper/wgmma_launch.cuh"

namespace fusedconv::fused::hopper {
namespace {
using BF16 = ModeKernels<cutlass::bfloat16_t, cutlass::bfloat16_t, false>;
using FP16 = ModeKernels<cutlass::half_t, cutlass::half_t, false>;
}  // namespace

Fit plan_f16(const Params& p, bool bf16, int max_smem_bytes) {
  return bf16 ? BF16::plan(p, max_smem_bytes) : FP16::plan(p, max_smem_bytes);
}

cudaError_t launch_f16(const Params& p, bool bf16, int max_smem_bytes, cudaStream_t stream) {
  return bf16 ? BF16::launch(p, max_smem_bytes, stream) : FP16::launch(p, max_smem_bytes, stream);
}

}  // namespace fusedconv::fused::hopper
