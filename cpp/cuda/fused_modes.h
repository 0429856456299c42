#pragma once
// Per-precision entry points, one translation unit each (they compile in parallel).
#include "cuda/fused_params.h"

namespace fusedconv::fused {

Fit plan_f32(const Params& p, bool split3x, int max_smem_bytes);
cudaError_t launch_f32(const Params& p, bool split3x, int max_smem_bytes, cudaStream_t stream);
Fit plan_f16(const Params& p, bool bf16, int max_smem_bytes);
cudaError_t launch_f16(const Params& p, bool bf16, int max_smem_bytes, cudaStream_t stream);

}  // namespace fusedconv::fused
