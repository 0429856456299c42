// Mode and width switch over the generated per-(mode, N) units of the Hopper kernels.
#include "cuda/hopper/wgmma_entry.h"

namespace fusedconv::fused::hopper {
namespace {

// N: the smallest of 8, 16, 24, 32 that holds C_out, or for C_out > 32 its share of
// ceil(C_out / 32) channel groups (C_out = 48: two CTAs of N = 24 rather than 32 + 16).
template <Mode kMode, class F>
auto by_width(int c_out, F&& f) {
  const int groups = (c_out + 31) / 32;
  const int width = (c_out + groups - 1) / groups;
  if (width <= 8) return f.template operator()<kMode, 8>();
  if (width <= 16) return f.template operator()<kMode, 16>();
  if (width <= 24) return f.template operator()<kMode, 24>();
  return f.template operator()<kMode, 32>();  // plan_width rejects more than 8 groups
}

template <class F>
auto by_mode_width(Mode mode, int c_out, F&& f) {
  switch (mode) {
    case Mode::kTF32: return by_width<Mode::kTF32>(c_out, f);
    case Mode::k3xTF32: return by_width<Mode::k3xTF32>(c_out, f);
    case Mode::kBF16: return by_width<Mode::kBF16>(c_out, f);
    case Mode::kBF16F32: return by_width<Mode::kBF16F32>(c_out, f);
    case Mode::kFP16F32: return by_width<Mode::kFP16F32>(c_out, f);
    case Mode::kFP16: break;
  }
  return by_width<Mode::kFP16>(c_out, f);
}

}  // namespace

Fit plan(const Params& p, Mode mode, int max_smem_bytes) {
  return by_mode_width(mode, p.c_out, [&]<Mode kMode, int N>() {
    return plan_width<kMode, N>(p, max_smem_bytes);
  });
}

cudaError_t launch(const Params& p, Mode mode, int max_smem_bytes, cudaStream_t stream) {
  return by_mode_width(mode, p.c_out, [&]<Mode kMode, int N>() {
    return launch_width<kMode, N>(p, max_smem_bytes, stream);
  });
}

}  // namespace fusedconv::fused::hopper
