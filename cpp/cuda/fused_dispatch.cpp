// Mode switch over the per-precision translation units of both kernel families.
#include "cuda/fused_modes.h"
#if defined(FUSEDCONV_WITH_HOPPER)
#include "cuda/hopper/wgmma_entry.h"
#endif

namespace fusedconv::fused {

bool hopper_kernels_built() {
#if defined(FUSEDCONV_WITH_HOPPER)
  return true;
#else
  return false;
#endif
}

Fit plan_fused(const Params& p, Mode mode, Family family, int max_smem_bytes) {
  if (family == Family::kWgmma) {
#if defined(FUSEDCONV_WITH_HOPPER)
    return hopper::plan(p, mode, max_smem_bytes);
#else
    return Fit::kNotBuilt;
#endif
  }
  if (is_autocast_mode(mode)) return Fit::kNotBuilt;  // the wgmma kernel's modes only
  return by_mode(
      mode, [&](bool split3x) { return plan_f32(p, split3x, max_smem_bytes); },
      [&](bool bf16) { return plan_f16(p, bf16, max_smem_bytes); });
}

cudaError_t launch_fused(const Params& p, Mode mode, Family family, int max_smem_bytes,
                         cudaStream_t stream) {
  if (family == Family::kWgmma) {
#if defined(FUSEDCONV_WITH_HOPPER)
    return hopper::launch(p, mode, max_smem_bytes, stream);
#else
    return cudaErrorInvalidValue;
#endif
  }
  if (is_autocast_mode(mode)) return cudaErrorInvalidValue;
  return by_mode(
      mode, [&](bool split3x) { return launch_f32(p, split3x, max_smem_bytes, stream); },
      [&](bool bf16) { return launch_f16(p, bf16, max_smem_bytes, stream); });
}

}  // namespace fusedconv::fused
