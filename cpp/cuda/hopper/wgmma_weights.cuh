#pragma once
// The Hopper kernel's prologue step that lays out this CTA's weights (its channel group) as
// wgmma B tiles in shared memory, plus the table of each k's byte offset in a ring slot.
#include <cute/tensor.hpp>

#include "cuda/fused_math.cuh"
#include "cuda/hopper/wgmma_config.cuh"

namespace fusedconv::fused::hopper {

// w: the weight at this CTA's first channel; c_here: its channels. sWoff: (k_r * k_slice)
// int64 scratch; sKoff: (k_slice) ints; sB: (N, BK, tiles) in the canonical K-major layout,
// weight copies (3xTF32: big, cross, small) one after another along the tile mode.
template <class Cfg, class SmemB>
__device__ __forceinline__ void fill_weights(const Params& p, const WgGeometry& g,
                                             const typename Cfg::Element* w, int c_here, int tid,
                                             int foot_pq, int64_t* sWoff, int* sKoff, SmemB& sB) {
  using Element = typename Cfg::Element;
  using ValA = typename Cfg::ValA;
  constexpr int BK = Cfg::kBlockK, KR = Cfg::kKR, kPitch = Cfg::kRowPitch;
  // Row kk = kr * k_slice + k of B (k_slice = k_steps * BK, padded): its element offset in
  // the weight (-1 when padded); per k of a plane also its byte offset in a ring slot
  // (padded k reads the all-zero channel C_in). Divisions by the geometry's precomputed divisors.
  const int k_slice = g.k_steps * BK;
  for (int kk = tid; kk < KR * k_slice; kk += Cfg::kThreads) {
    int kr, k, c, tap, kp, kq;
    g.by_k_slice(kr, k, kk);
    g.by_kpq(c, tap, k);
    g.by_kq(kp, kq, tap);
    const bool real = k < g.k_plane;
    if (kr == 0) sKoff[k] = int(sizeof(Element)) * (real ? c * foot_pq + kp * kPitch + kq : p.c_in * foot_pq);
    sWoff[kk] = real ? kr * p.ws_r + c * p.ws_c + kp * p.ws_p + kq * p.ws_q : int64_t(-1);
  }
  __syncthreads();
  // Each thread owns fixed (n, column) pairs of the B tiles and walks the tiles: one
  // shared-memory offset load, one global load and one store per element, consecutive
  // threads on consecutive k (coalesced for a contiguous weight), and kBatch tiles of all
  // its pairs in flight (all of B for C_in * k_p * k_q <= 32 and k_r = 3) per round trip.
  constexpr int kPairs = Cfg::kN * BK;
  constexpr int kOwn = (kPairs + Cfg::kThreads - 1) / Cfg::kThreads;  // pairs per thread
  constexpr int kBatch = 12;                                           // tiles per round
  const Element* w_n[kOwn];
  int col[kOwn], n_of[kOwn];
  bool live[kOwn];
  CUTE_UNROLL
  for (int j = 0; j < kOwn; ++j) {
    const int q = tid + j * Cfg::kThreads;
    n_of[j] = q / BK, col[j] = q % BK;
    live[j] = q < kPairs && n_of[j] < c_here;
    w_n[j] = w + n_of[j] * p.ws_n;
  }
  for (int t0 = 0; t0 < g.b_tiles; t0 += kBatch) {
    float vals[kOwn][kBatch];
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      CUTE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int t = t0 + u;
        const int64_t off = (live[j] && t < g.b_tiles) ? sWoff[t * BK + col[j]] : int64_t(-1);
        vals[j][u] = off >= 0 ? float(w_n[j][off]) : 0.0f;
      }
    }
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      if (tid + j * Cfg::kThreads >= kPairs) break;
      CUTE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int t = t0 + u;
        if (t >= g.b_tiles) break;
        if constexpr (Cfg::kSplit3x) {
          cutlass::tfloat32_t big, cross, small;
          split_tf32(vals[j][u], big, cross, small);
          sB(n_of[j], col[j], t) = big;
          sB(n_of[j], col[j], t + g.b_tiles) = cross;
          sB(n_of[j], col[j], t + 2 * g.b_tiles) = small;
        } else {
          sB(n_of[j], col[j], t) = ValA(vals[j][u]);
        }
      }
    }
  }
}

}  // namespace fusedconv::fused::hopper
