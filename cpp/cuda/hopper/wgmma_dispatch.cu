// Mode and width switch over the generated per-(mode, N) units of the Hopper kernels.
#include "cuda/hopper/wgmma_entry.h"
#include "cuda/hopper/width_rule.h"

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

// The N = 64 kernel of a mode, where width_rule.h asks for it and it takes p.
bool launched_in_groups_of_64(const Params& p, Mode mode, int max_smem_bytes, cudaStream_t stream, cudaError_t* err) {
  const Operands operands = mode == Mode::kTF32 ? Operands::kTF32 : mode == Mode::k3xTF32 ? Operands::k3xTF32
                                                                                          : Operands::k16bit;
  if (!groups_of_64(p.c_out, p.c_in * p.k_p * p.k_q, p.k_r, operands)) return false;
  switch (mode) {
    case Mode::kTF32: return launch_group64<Mode::kTF32>(p, max_smem_bytes, stream, err);
    case Mode::kBF16: return launch_group64<Mode::kBF16>(p, max_smem_bytes, stream, err);
    case Mode::kFP16: return launch_group64<Mode::kFP16>(p, max_smem_bytes, stream, err);
    case Mode::kBF16F32: return launch_group64<Mode::kBF16F32>(p, max_smem_bytes, stream, err);
    case Mode::kFP16F32: return launch_group64<Mode::kFP16F32>(p, max_smem_bytes, stream, err);
    case Mode::k3xTF32: break;
  }
  return false;
}

}  // namespace

// (The groups of 32 plan every C_out the N = 64 kernel takes: it never widens what fits.)
Fit plan(const Params& p, Mode mode, int max_smem_bytes) {
  return by_mode_width(mode, p.c_out, [&]<Mode kMode, int N>() {
    return plan_width<kMode, N>(p, max_smem_bytes);
  });
}

cudaError_t launch(const Params& p, Mode mode, int max_smem_bytes, cudaStream_t stream) {
  if (cudaError_t err = cudaSuccess; launch_shifted(p, mode, max_smem_bytes, stream, &err)) return err;
  if (cudaError_t err = cudaSuccess; launched_in_groups_of_64(p, mode, max_smem_bytes, stream, &err)) return err;
  return by_mode_width(mode, p.c_out, [&]<Mode kMode, int N>() {
    return launch_width<kMode, N>(p, max_smem_bytes, stream);
  });
}

}  // namespace fusedconv::fused::hopper
