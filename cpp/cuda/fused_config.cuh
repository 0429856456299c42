#pragma once
// Static configurations of the fused kernel and the run-time geometry (tile shape and
// shared-memory carve-up) that host planner and kernel compute identically.
#include <cute/tensor.hpp>
#include <cutlass/fast_math.h>

#include "cuda/fused_params.h"

namespace fusedconv::fused {

// Element type, MMA atom and warp tiling of one kernel instantiation.
//   kWarpsM x kWarpsN warps; each warp owns kTilesM m16 tiles and kTilesN n8 tiles, so a
//   CTA computes kBlockM = 16*kWarpsM*kTilesM output positions x kBlockN = 8*kWarpsN*kTilesN
//   channels. Channel tiles past C_out are skipped at run time.
template <class Element_, class MmaOp_, bool kSplit3x_, int kWarpsM_, int kWarpsN_, int kTilesM_,
          int kTilesN_>
struct KernelConfig {
  using Element = Element_;  // x, weight, bias and y element type
  using MmaOp = MmaOp_;
  using MmaTraits = cute::MMA_Traits<MmaOp>;
  using ValA = typename MmaTraits::ValTypeA;  // register type the MMA consumes
  static constexpr bool kSplit3x = kSplit3x_;
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
  static constexpr int kTilesM = kTilesM_, kTilesN = kTilesN_;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kBlockM = 16 * kWarpsM * kTilesM;
  static constexpr int kBlockN = 8 * kWarpsN * kTilesN;
  static constexpr int kBlockK = cute::size<2>(typename MmaTraits::Shape_MNK{});  // 8 or 16
  // B fragment values per lane per n8 x k tile (2 for TF32, 4 for 16-bit).
  static constexpr int kFragB = cute::size<1>(typename MmaTraits::BLayout{});
  static constexpr int kPrefetch = 2;  // input planes in flight beyond the kR in use
  // CTAs per SM the register budget must allow (__launch_bounds__): 3 x 4 warps for the
  // 128-thread single-MMA configurations (<= 168 registers; 3xTF32 would spill there),
  // otherwise whatever the registers give.
  static constexpr int kMinBlocks = (kThreads == 128 && !kSplit3x) ? 3 : 1;
  // Output tiles are (kBlockM / 16) x 16 positions; a footprint row is stored with a fixed
  // pitch of 20 elements, so every A row offset of a thread is a compile-time constant
  // from its first row (k_q <= 5 on the fused path).
  static constexpr int kTileQ = 16;
  static constexpr int kRowPitch = 20;
  static constexpr int kMaxKQ = kRowPitch - kTileQ + 1;
};

// (warps 4x1, 2 m16 tiles, 4 n8 tiles): C_out <= 32, 128 positions per CTA.
// (warps 4x2, 1 m16 tile, 8 n8 tiles):  C_out <= 128, 64 positions per CTA.
template <class Element, class MmaOp, bool kSplit3x>
using SmallConfig = KernelConfig<Element, MmaOp, kSplit3x, 4, 1, 2, 4>;
template <class Element, class MmaOp, bool kSplit3x>
using LargeConfig = KernelConfig<Element, MmaOp, kSplit3x, 4, 2, 1, 8>;

// Run-time layout of one launch; all offsets are in bytes from the dynamic smem base.
struct Geometry {
  int tile_p, tile_q;          // output tile (tile_p * tile_q == kBlockM)
  int tiles_p, tiles_q;        // tiles per batch index along P and Q
  int foot_p, foot_q;          // input footprint of a tile: tile_p + k_p - 1 rows, kRowPitch
  int plane_stride;            // elements per ring slot: >= (C_in + 1) * foot_p * foot_q;
                               //   the extra channel is all zeros (target of padded k)
  int slots;                   // ring depth: k_r + kPrefetch
  int k_plane, k_plane_pad;    // K per input plane: C_in*kP*kQ, padded to kBlockK
  int k_blocks;                // k_plane_pad / kBlockK
  int n_tiles;                 // ceil(C_out / 8)
  int off_koff, off_src, off_planes, off_red, smem_bytes;
  // The prologue's run-time divisors (multiply-high and shift; see hopper::WgGeometry),
  // set by with_divisors at launch.
  cutlass::FastDivmod by_tiles;    // CTA -> (batch index, tile)
  cutlass::FastDivmod by_tiles_q;  // tile -> (tile row, tile column)
  cutlass::FastDivmod by_foot_pq;  // footprint element -> (channel, element in its plane)
  cutlass::FastDivmod by_n_tiles;  // B fragment -> (kr * k_blocks + kb, n8 tile)
  cutlass::FastDivmod by_k_blocks; // kr * k_blocks + kb -> (kr, kb)
  cutlass::FastDivmod by_kpq;      // k -> (channel, tap)
  cutlass::FastDivmod by_kq;       // tap -> (kp, kq)
};

CUTE_HOST_DEVICE constexpr int round_up(int v, int m) { return (v + m - 1) / m * m; }

template <class Cfg>
CUTE_HOST_DEVICE Geometry make_geometry(const Params& p) {
  using WeightStore = typename Cfg::Element;  // weights kept in smem in the input type
  Geometry g{};
  g.tile_q = Cfg::kTileQ;
  g.tile_p = Cfg::kBlockM / Cfg::kTileQ;
  g.tiles_p = (p.p_out + g.tile_p - 1) / g.tile_p;
  g.tiles_q = (p.q_out + g.tile_q - 1) / g.tile_q;
  g.foot_p = g.tile_p + p.k_p - 1;
  g.foot_q = Cfg::kRowPitch;  // columns past tile_q + k_q - 1 are loaded but never read
  g.plane_stride = round_up((p.c_in + 1) * g.foot_p * g.foot_q, 8);
  g.slots = p.k_r + Cfg::kPrefetch;
  g.k_plane = p.c_in * p.k_p * p.k_q;
  g.k_plane_pad = round_up(g.k_plane, Cfg::kBlockK);
  g.k_blocks = g.k_plane_pad / Cfg::kBlockK;
  g.n_tiles = (p.c_out + 7) / 8;
  // [weights as B fragments][k byte offsets][source offsets of a plane's footprint]
  // [ring of planes][softmax exchange]
  const int weight_bytes =
      p.k_r * g.k_blocks * g.n_tiles * 32 * Cfg::kFragB * int(sizeof(WeightStore));
  g.off_koff = round_up(weight_bytes, 16);
  g.off_src = g.off_koff + round_up(g.k_plane_pad * int(sizeof(int)), 16);
  g.off_planes = g.off_src + round_up(p.c_in * g.foot_p * g.foot_q * int(sizeof(int64_t)), 16);
  g.off_red = g.off_planes + round_up(g.slots * g.plane_stride * int(sizeof(typename Cfg::Element)), 16);
  g.smem_bytes = g.off_red + (Cfg::kWarpsN > 1 ? Cfg::kWarpsN * Cfg::kBlockM * int(sizeof(float)) : 0);
  return g;
}

// g with its divisors set.
inline Geometry with_divisors(const Params& p, Geometry g) {
  g.by_tiles = cutlass::FastDivmod(g.tiles_p * g.tiles_q);
  g.by_tiles_q = cutlass::FastDivmod(g.tiles_q);
  g.by_foot_pq = cutlass::FastDivmod(g.foot_p * g.foot_q);
  g.by_n_tiles = cutlass::FastDivmod(g.n_tiles);
  g.by_k_blocks = cutlass::FastDivmod(g.k_blocks);
  g.by_kpq = cutlass::FastDivmod(p.k_p * p.k_q);
  g.by_kq = cutlass::FastDivmod(p.k_q);
  return g;
}

}  // namespace fusedconv::fused
