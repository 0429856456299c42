// float32 instantiations of the Hopper kernel: TF32 (one wgmma) and 3xTF32 (three).
#include "cuda/fused_modes.h"
#include "cuda/hopper/wgmma_launch.cuh"

namespace fusedconv::fused::hopper {
namespace {
using TF32 = ModeKernels<float, cutlass::tfloat32_t, false>;
using Split3x = ModeKernels<float, cutlass::tfloat32_t, true>;
}  // namespace

Fit plan_f32(const Params& p, bool split3x, int max_smem_bytes) {
  return split3x ? Split3x::plan(p, max_smem_bytes) : TF32::plan(p, max_smem_bytes);
}

cudaError_t launch_f32(const Params& p, bool split3x, int max_smem_bytes, cudaStream_t stream) {
  return split3x ? Split3x::launch(p, max_smem_bytes, stream)
                 : TF32::launch(p, max_smem_bytes, stream);
}

}  // namespace fusedconv::fused::hopper
