// Mode switch over the per-precision translation units (see fused_params.h).
#include "cuda/fused_modes.h"

namespace fusedconv::fused {

Fit plan_fused(const Params& p, Mode mode, int max_smem_bytes) {
  switch (mode) {
    case Mode::kTF32: return plan_f32(p, false, max_smem_bytes);
    case Mode::k3xTF32: return plan_f32(p, true, max_smem_bytes);
    case Mode::kBF16: return plan_f16(p, true, max_smem_bytes);
    case Mode::kFP16: return plan_f16(p, false, max_smem_bytes);
  }
  return Fit::kTooManyChannels;
}

cudaError_t launch_fused(const Params& p, Mode mode, int max_smem_bytes, cudaStream_t stream) {
  switch (mode) {
    case Mode::kTF32: return launch_f32(p, false, max_smem_bytes, stream);
    case Mode::k3xTF32: return launch_f32(p, true, max_smem_bytes, stream);
    case Mode::kBF16: return launch_f16(p, true, max_smem_bytes, stream);
    case Mode::kFP16: return launch_f16(p, false, max_smem_bytes, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace fusedconv::fused
