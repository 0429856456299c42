#pragma once
// Per-precision entry points, one translation unit each (they compile in parallel), for
// the mma.sync kernel (fused_kernel_*.cu, sm_80+); the wgmma kernel's are in
// hopper/wgmma_entry.h.
#include "cuda/fused_params.h"

namespace fusedconv::fused {

Fit plan_f32(const Params& p, bool split3x, int max_smem_bytes);
cudaError_t launch_f32(const Params& p, bool split3x, int max_smem_bytes, cudaStream_t stream);
Fit plan_f16(const Params& p, bool bf16, int max_smem_bytes);
cudaError_t launch_f16(const Params& p, bool bf16, int max_smem_bytes, cudaStream_t stream);

// Calls f32(split3x) or f16(bf16) for a mode.
template <class F32, class F16>
auto by_mode(Mode mode, F32&& f32, F16&& f16) {
  switch (mode) {
    case Mode::kTF32: return f32(false);
    case Mode::k3xTF32: return f32(true);
    case Mode::kBF16: return f16(true);
    case Mode::kFP16: break;
    case Mode::kBF16F32:  // wgmma only: plan_fused and launch_fused return before by_mode
    case Mode::kFP16F32: break;
  }
  return f16(false);
}

}  // namespace fusedconv::fused
