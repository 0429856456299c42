#pragma once
// The Hopper kernel's prologue step that lays out this CTA's weights (its channel group) as
// wgmma B tiles in shared memory, plus the table of each k's byte offset in a ring slot.
#include <cute/tensor.hpp>

#include "cuda/fused_math.cuh"
#include "cuda/hopper/wgmma_config.cuh"

namespace fusedconv::fused::hopper {

// Row kk = kr * k_slice + k of B (k_slice = k_steps * BK, padded): its element offset in the
// weight (-1 when padded) into sWoff ((k_r * k_slice) int64); per k of a plane also its byte
// offset in a ring slot into sKoff ((k_slice) ints; padded k reads the all-zero channel C_in).
// Divisions by the geometry's precomputed divisors. The caller syncs before WeightTiles reads.
template <class Cfg>
__device__ __forceinline__ void weight_offsets(const Params& p, const WgGeometry& g, int tid, int foot_pq,
                                               int64_t* sWoff, int* sKoff) {
  constexpr int BK = Cfg::kBlockK, KR = Cfg::kKR, kPitch = Cfg::kRowPitch;
  const int k_slice = g.k_steps * BK;
  for (int kk = tid; kk < KR * k_slice; kk += Cfg::kThreads) {
    int kr, k, c, tap, kp, kq;
    g.by_k_slice(kr, k, kk);
    g.by_kpq(c, tap, k);
    g.by_kq(kp, kq, tap);
    const bool real = k < g.k_plane;
    if (kr == 0) {
      sKoff[k] = int(sizeof(typename Cfg::Element)) * (real ? c * foot_pq + kp * kPitch + kq : p.c_in * foot_pq);
    }
    sWoff[kk] = real ? kr * p.ws_r + c * p.ws_c + kp * p.ws_p + kq * p.ws_q : int64_t(-1);
  }
}

// This CTA's weights (its channel group, w at its first channel, c_here channels) as wgmma B
// tiles in shared memory, in the canonical K-major layout (sB: (N, BK, tiles); kSplit3x: sB
// the TF32 big parts in permuted columns, sBH: (N, 16, tiles) the bf16 (small ; big) pairs). Each thread owns fixed
// (n, column) pairs of the B tiles and walks the tiles: one offset load, one global load and
// one store per element, consecutive threads on consecutive k (coalesced for a contiguous
// weight), kBatch tiles of all its pairs in flight per round trip (all of B for C_in * k_p *
// k_q <= 32 and k_r = 3). load(t0) issues a round's global loads and store(t0) writes them,
// so that the caller can overlap the first round with other set-up.
template <class Cfg>
struct WeightTiles {
  using Element = typename Cfg::Element;
  using ValA = typename Cfg::ValA;
  static constexpr int BK = Cfg::kBlockK;
  static constexpr int kPairs = Cfg::kN * BK;
  static constexpr int kOwn = (kPairs + Cfg::kThreads - 1) / Cfg::kThreads;  // pairs per thread
  static constexpr int kBatch = 12;                                           // tiles per round
  const Element* w_n[kOwn];
  int col[kOwn], n_of[kOwn];
  bool live[kOwn];
  float vals[kOwn][kBatch];

  __device__ WeightTiles(const Params& p, const Element* w, int c_here, int tid) {
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      const int q = tid + j * Cfg::kThreads;
      n_of[j] = q / BK, col[j] = q % BK;
      live[j] = q < kPairs && n_of[j] < c_here;
      w_n[j] = w + n_of[j] * p.ws_n;
    }
  }
  __device__ void load(const WgGeometry& g, const int64_t* sWoff, int t0) {
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      CUTE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int t = t0 + u;
        const int64_t off = (live[j] && t < g.b_tiles) ? sWoff[t * BK + col[j]] : int64_t(-1);
        vals[j][u] = off >= 0 ? float(w_n[j][off]) : 0.0f;
      }
    }
  }
  template <class SmemB, class SmemBH>
  __device__ void store(const WgGeometry& g, int tid, SmemB& sB, SmemBH& sBH, int t0) const {
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      if (tid + j * Cfg::kThreads >= kPairs) break;
      CUTE_UNROLL
      for (int u = 0; u < kBatch; ++u) {
        const int t = t0 + u;
        if (t >= g.b_tiles) break;
        if constexpr (Cfg::kSplit3x) {
          cutlass::tfloat32_t big;
          uint32_t pair;
          split_tf32_bf16(vals[j][u], big, pair);
          sB(n_of[j], Cfg::unpermute_k(col[j]), t) = big;
          sBH(n_of[j], col[j], t) = cutlass::bfloat16_t::bitcast(uint16_t(pair >> 16));  // small(w) x big(x)
          sBH(n_of[j], col[j] + BK, t) = cutlass::bfloat16_t::bitcast(uint16_t(pair));    // big(w) x small(x)
        } else {
          sB(n_of[j], col[j], t) = ValA(vals[j][u]);
        }
      }
    }
  }
};

}  // namespace fusedconv::fused::hopper
