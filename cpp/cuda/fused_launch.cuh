#pragma once
// Host-side planning and launch of the fused kernel for one precision mode: picks the
// CTA configuration (by C_out) and the output tile shape (least padded work that fits the
// shared-memory budget), then launches on the given stream.
// Fit::kSharedMemory also covers k_q > 5 (the fixed footprint row pitch).
#include <climits>

#include "cuda/fused_kernel.cuh"
#include "cuda/smem_opt_in.cuh"

namespace fusedconv::fused {

template <class Cfg>
Fit plan_config(const Params& p, int max_smem_bytes, Geometry* best) {
  if (p.c_out > Cfg::kBlockN) return Fit::kTooManyChannels;
  // Keep the int geometry arithmetic far from overflow; such problems fail the smem check.
  if (p.c_in > 4096 || p.k_r > 64 || p.k_p > 64 || p.k_q > 64) return Fit::kSharedMemory;
  if (p.k_q > Cfg::kMaxKQ) return Fit::kSharedMemory;  // row pitch of the footprint
  *best = make_geometry<Cfg>(p);
  if (best->smem_bytes > max_smem_bytes) return Fit::kSharedMemory;
  if (1LL * p.batch * best->tiles_p * best->tiles_q > INT_MAX) return Fit::kGridSize;
  return Fit::kOk;
}

template <class Cfg>
cudaError_t launch_config(const Params& p, const Geometry& planned, cudaStream_t stream) {
  constexpr auto kernel = fused_conv_min_softmax_kernel<Cfg>;
  const Geometry g = with_divisors(p, planned);
  if (const cudaError_t err = allow_dynamic_smem<kernel>(g.smem_bytes); err != cudaSuccess) return err;
  const int blocks = p.batch * g.tiles_p * g.tiles_q;
  kernel<<<blocks, Cfg::kThreads, g.smem_bytes, stream>>>(p, g);
  return cudaGetLastError();
}

// One configuration, planned (and launched when it fits).
template <class Cfg>
Fit plan_one(const Params& p, int max_smem_bytes) {
  Geometry g;
  return plan_config<Cfg>(p, max_smem_bytes, &g);
}

template <class Cfg>
cudaError_t launch_one(const Params& p, int max_smem_bytes, cudaStream_t stream) {
  Geometry g;
  if (plan_config<Cfg>(p, max_smem_bytes, &g) != Fit::kOk) return cudaErrorInvalidValue;
  return launch_config<Cfg>(p, g, stream);
}

// Small: C_out <= 32 (one quad holds a row's channels). Large: C_out <= 128.
template <class Small, class Large>
Fit plan_mode(const Params& p, int max_smem_bytes) {
  return p.c_out <= Small::kBlockN ? plan_one<Small>(p, max_smem_bytes) : plan_one<Large>(p, max_smem_bytes);
}

template <class Small, class Large>
cudaError_t launch_mode(const Params& p, int max_smem_bytes, cudaStream_t stream) {
  return p.c_out <= Small::kBlockN ? launch_one<Small>(p, max_smem_bytes, stream)
                                   : launch_one<Large>(p, max_smem_bytes, stream);
}

}  // namespace fusedconv::fused
