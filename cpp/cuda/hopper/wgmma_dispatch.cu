// Mode and width switch over the generated per-(mode, N) units of the Hopper kernels.
#include "cuda/hopper/wgmma_entry.h"

namespace fusedconv::fused::hopper {
namespace {

template <Mode kMode, class F>
auto by_width(int c_out, F&& f) {
  if (c_out <= 8) return f.template operator()<kMode, 8>();
  if (c_out <= 16) return f.template operator()<kMode, 16>();
  if (c_out <= 24) return f.template operator()<kMode, 24>();
  return f.template operator()<kMode, 32>();  // plan_width rejects C_out > 32
}

template <class F>
auto by_mode_width(Mode mode, int c_out, F&& f) {
  switch (mode) {
    case Mode::kTF32: return by_width<Mode::kTF32>(c_out, f);
    case Mode::k3xTF32: return by_width<Mode::k3xTF32>(c_out, f);
    case Mode::kBF16: return by_width<Mode::kBF16>(c_out, f);
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
