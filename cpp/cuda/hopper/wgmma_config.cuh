#pragma once
// Static configuration and run-time geometry of the Hopper (sm_90a) fused kernel.
// One warpgroup per CTA; its 64 output positions are a 4 (P) x 16 (Q) tile, warp w owning
// row w, or (kTileP_ = 2, some TMA kernels) a 2 x 32 tile, warps 2r and 2r + 1 owning row r
// (kWarpgroups_ = 2, TF32 at N = 64, stacks two such tiles along P in one CTA).
// C_out <= kN channels sit in one wgmma m64nNk* accumulator.
// CuTe declares wgmma n = 24 only with CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED, which must be
// set before its first header: cpp/CMakeLists.txt defines it for the whole object library.
#if !defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED)
#error "compile the Hopper kernels with -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED"
#endif
#include <climits>

#include <cute/atom/mma_atom.hpp>
#include <cute/tensor.hpp>
#include <cutlass/fast_math.h>

#include "cuda/fused_config.cuh"  // round_up
#include "cuda/fused_params.h"
#include "cuda/plane_ring.cuh"

namespace fusedconv::fused::hopper {

template <class ValA, int N>
struct WgmmaOp;  // the register-A (RS) wgmma atom for an element type and width N
template <int N> struct WgmmaOp<cutlass::tfloat32_t, N> {
  using type = decltype(cute::SM90::GMMA::rs_op_selector<cute::tfloat32_t, cute::tfloat32_t, float,
                                                        cute::Shape<cute::_64, cute::Int<N>, cute::_8>>());
};
template <int N> struct WgmmaOp<cutlass::bfloat16_t, N> {
  using type = decltype(cute::SM90::GMMA::rs_op_selector<cute::bfloat16_t, cute::bfloat16_t, float,
                                                        cute::Shape<cute::_64, cute::Int<N>, cute::_16>>());
};
template <int N> struct WgmmaOp<cutlass::half_t, N> {
  using type = decltype(cute::SM90::GMMA::rs_op_selector<cute::half_t, cute::half_t, float,
                                                        cute::Shape<cute::_64, cute::Int<N>, cute::_16>>());
};

// kLongChunk_: k-steps per chunk when K does not fit one chunk (0: half a one-chunk plane).
// kRetire_: every plane's wgmmas retire within its step (see kRetireEachPlane).
// kTma_: input planes load by TMA (inputs that tma_fits), else by cp.async.
// kArgmin_: the kernel can write the argmin (the backward's recompute asks for it); false
// compiles it out (an inference-only kernel, kVals registers fewer).
// kTileP_: output rows per warpgroup's tile, 4 (tiles of 4 x 16) or 2 (2 x 32; TMA kernels only).
// kWarpgroups_: warpgroups per CTA, each with its own 64 positions (rows stacked along P) and
// accumulators, sharing the weights and the ring (a footprint kWarpgroups_ * kTileP_ rows
// high): a plane's load, barrier and weights serve all of them. 2 only in TF32's N = 64
// kernel (launch_group64: K in chunks, TMA), whose weights leave room for one CTA per SM.
// kOwnItems_: the warpgroups share only the weights; each takes its own work items (a tile
// kTileP_ rows high) with its own ring, TMA barriers and named barrier, so that one's
// epilogue and ring start run under the other's wgmmas (no channel or R split: no cluster).
template <class Element_, class ValA_, int kN_, int kKR_, bool kSplit3x_, bool kOneChunk_, int kLongChunk_ = 0,
          bool kRetire_ = false, bool kTma_ = false, bool kArgmin_ = true, int kTileP_ = 4, int kWarpgroups_ = 1,
          bool kOwnItems_ = false>
struct WgmmaConfig {
  using Element = Element_;  // x, weight, bias and y element type
  using ValA = ValA_;        // operand type the wgmma consumes
  using MmaOp = typename WgmmaOp<ValA, kN_>::type;
  static constexpr int kN = kN_;            // accumulator width: C_out <= kN
  static constexpr int kKR = kKR_;          // kernel extent along R (1..3, 5)
  static constexpr bool kSplit3x = kSplit3x_;
  // K of a plane fits one chunk: A addresses live in registers (a separate instantiation,
  // so that the chunk loop of longer K does not cost this path registers).
  static constexpr bool kOneChunk = kOneChunk_;
  static constexpr bool kArgmin = kArgmin_;
  static constexpr int kWarpgroups = kWarpgroups_;
  static constexpr int kThreads = 128 * kWarpgroups_;  // a warpgroup per 64 positions
  static constexpr bool kOwnItems = kOwnItems_;
  static constexpr int kItemsPerCta = kOwnItems_ ? kWarpgroups_ : 1;  // work items a CTA runs at once
  static constexpr int kRingThreads = kThreads / kItemsPerCta;        // the threads of one ring
  static constexpr int kWgTileP = kTileP_, kTileQ = 64 / kTileP_;  // one warpgroup's rows, columns
  static constexpr int kTileP = kTileP_ * kWarpgroups_ / kItemsPerCta;  // a work item's rows
  static_assert(kTileP_ == 4 || (kTileP_ == 2 && kTma_), "4 x 16 tiles, or 2 x 32 by TMA");
  static_assert(kWarpgroups_ == 1 || (kWarpgroups_ == 2 && kTma_ && !kOneChunk_ && !kSplit3x_),
                "two warpgroups: K in chunks by TMA (launch_group64)");
  static_assert(!kOwnItems_ || kWarpgroups_ > 1, "own items: one per warpgroup");
  static constexpr int kMaxKQ = 5;
  // Planes by TMA: each footprint row is one TMA box row, which must be whole 16-byte
  // units. One kernel per ring: the cp.async ring's state, compiled into a TMA kernel as its
  // fallback, cost that kernel 7% (TF32) to 24% (bf16) on the reference (lab, session 16).
  static constexpr bool kTma = kTma_;
  // Footprint row pitch (elements): a footprint row, kTileQ + kMaxKQ - 1 = 20 elements; by
  // TMA a whole number of 16 bytes (the box row): 20 floats or 24 16-bit elements at 4 x 16.
  // The 2 x 32 tile's rows of 36 would put the gather's kp taps 36 = 4 mod 32 words apart, in
  // the banks of the kq taps' words: by a bank model of the gather's loads
  // (.ci/lab/gather_banks.py: C_in = 3, 3 x 3 taps) 1.9 wavefronts per TF32 LDS (1.0 at
  // 4 x 16), and on the H200 the TF32, autocast and 3xTF32 kernels lost 4-17% there (lab,
  // session 23). 44 floats (1.0 wavefront) and 48 16-bit elements (1.0) won instead
  // (BENCHMARKS.md, v42).
  static constexpr int kRowPitch = !kTma          ? kTileQ + kMaxKQ - 1
                                   : kTileP_ == 2 ? (sizeof(Element_) == 4 ? 44 : 48)
                                                  : round_up(kTileQ + kMaxKQ - 1, 16 / int(sizeof(Element_)));
  static_assert(kRowPitch >= kTileQ + kMaxKQ - 1, "a pitch holds a footprint row");
  // kRetireEachPlane (TF32 one chunk; 16-bit operands at N = 24 or 32, k_r = 3 by TMA): a step
  // retires its plane's wgmmas before folding the output plane they complete and gathering the
  // next plane into the one A buffer, so kKR accumulators and one A buffer suffice (fewer
  // registers, more CTAs per SM).
  // 3xTF32 retires only in its lean kernel (no argmin) at N = 24 and 32, k_r = 3 by TMA. At N = 32
  // (v41): 168 registers, 3 CTAs per SM where the kept one takes 200 and 2 (lab, H200: 199.7 ->
  // 186.9 µs at C_out = 32). At N = 24 (v59): 128 registers with no spill, 4 per SM where the
  // kept one holds 3 (lab, H100, kept / lean µs: B = 128 109.5 / 108.8, B = 32 40.8 / 32.6, B =
  // 1024 827 / 802; v41's lean kernel held 3 too and lost 1-2%, beside the split pass).
  static constexpr bool kRetire16 = sizeof(ValA_) == 2 && (kN_ == 24 || kN_ == 32) && kKR_ == 3 && kTma_;
  static constexpr bool kRetire3x = kSplit3x_ && !kArgmin_ && (kN_ == 24 || kN_ == 32) && kKR_ == 3 && kTma_;
  static constexpr bool kRetireEachPlane =
      kRetire_ && kOneChunk_ && (kSplit3x_ ? kRetire3x : (sizeof(ValA_) == 4 || kRetire16));
  // Output planes in flight: the kKR a plane feeds plus the one being folded meanwhile.
  static constexpr int kAccSlots = kRetireEachPlane ? kKR : kKR + 1;
  static constexpr int kBlockK = 32 / int(sizeof(ValA));  // 8 (TF32) or 16 (16-bit): 32 B of K
  // k-steps gathered into one register buffer; a plane of K <= kOneChunkK is one chunk.
  // Longer K goes in smaller chunks through two buffers in turn, so that one chunk's gather
  // overlaps the other's wgmmas: half a one-chunk plane, or kLongChunk k-steps (3 and 9 for
  // TF32, 3 for 16-bit operands and 3xTF32, where WidthKernels::with_config_of takes them).
  static constexpr int kOneChunkSteps = sizeof(ValA) == 2 ? 2 : 4;
  static constexpr int kOneChunkK = kOneChunkSteps * kBlockK;
  static constexpr int kChunk = kOneChunk ? kOneChunkSteps : kLongChunk_ > 0 ? kLongChunk_ : kOneChunkSteps / 2;
  // A buffers: two let a gather overlap the wgmmas of the previous plane (one chunk) or
  // chunk (longer K); "highest" (kSplit3x) in one chunk holds two parts per buffer and keeps one.
  static constexpr int kABuffers = ((kSplit3x && kOneChunk) || kRetireEachPlane) ? 1 : 2;
  static constexpr int kPrefetch = 2;       // planes in flight beyond the one in use
  // Order of a one-chunk plane step: the wgmmas first, then the next plane's barrier and
  // gather (into the other A buffer) and the fold while they run (the barrier runs one plane
  // ahead); or the plane's gather first. Measured on the H200: TF32 gains issuing first
  // (N = 32: 105.9 -> 96.4 µs at C_out = 32, 211.5 -> 196.4 at 64; N = 16 73.1 -> 71.3; the
  // reference equal); 16-bit operands lose (bf16 reference 83.0 -> 90.8, autocast 87.4 ->
  // 90.3) and so does 3xTF32 with its one A buffer (C_out = 64: 514.1 -> 555.3). A retiring
  // kernel always issues first (its one A buffer holds the next plane at the step's end).
  static constexpr bool kIssueFirst = kOneChunk && (kRetireEachPlane || (!kSplit3x && sizeof(ValA) == 4));
  static constexpr int kLead = kIssueFirst ? 1 : 0;  // step i's barrier readies plane i + kLead
  // Ring slots: at step i, the plane the slowest warp may still gather (i - 1 + kLead), the
  // one the step's barrier readies (i + kLead) and kPrefetch in flight, so that one barrier
  // per plane suffices. A multiple of kAccSlots and of kABuffers: the main loop is unrolled
  // over kSlots planes, so that ring slot, accumulator and A buffer of every plane are
  // compile-time constants.
  static constexpr int kSlots = [] {
    int s = 1;  // the least common multiple of kAccSlots and kABuffers ...
    while (s % kAccSlots != 0 || s % kABuffers != 0) ++s;
    return s >= kPrefetch + 2 ? s : s * ((kPrefetch + 1 + s) / s);  // ... times what reaches 4
  }();
  static_assert(kSlots >= kPrefetch + 2 && kSlots % kAccSlots == 0 && kSlots % kABuffers == 0);
  // "highest" (kSplit3x): x w = big(x) big(w) in TF32 plus the cross terms big(x) small(w) +
  // small(x) big(w) in one bf16 wgmma, whose 16 k are a TF32 k-step's 8 twice over (A = [big |
  // small] of x, B = [small ; big] of w, split_tf32_bf16): two wgmmas of 32 bytes of K per
  // k-step where 3xTF32 took three. The TF32 k-step's columns are permuted (permute_k) so
  // that a thread's TF32 and bf16 A values are the same (row, k) pairs: one load each.
  static constexpr int kWeightCopies = kSplit3x ? 2 : 1;  // TF32 big; bf16 (small ; big)
  using MmaOpH = typename WgmmaOp<cutlass::bfloat16_t, kN_>::type;  // the cross terms' wgmma
  // TF32 column j of a k-step holds logical k = 2 (j % 4) + j / 4: a thread's columns t and
  // t + 4 (its TF32 A values) are then k = 2t and 2t + 1, the pair its bf16 registers hold.
  __host__ __device__ static constexpr int permute_k(int j) { return 2 * (j % 4) + j / 4; }
  __host__ __device__ static constexpr int unpermute_k(int k) { return k / 2 + 4 * (k % 2); }
  // The B descriptors rebuilt in every plane step (one add each) instead of held across the
  // plane loop (v41): held, 3xTF32's 36 at k_r = 3 (72 registers) took its one-chunk kernel
  // to 237 registers, 2 CTAs per SM; rebuilt, 168 and 3 per SM (reference 206.3 -> 171.5 µs,
  // B = 1024 1562 -> 1261, lab, H200). TF32 and bf16 hold theirs: rebuilt, their lean kernels
  // were equal (TF32) or 2-4% slower (bf16).
  static constexpr bool kRebuildB = kSplit3x;
  // "highest" splits x in the gather (bf16_pairs_truncated), in one chunk since session 43;
  // until then (v55-v57) a split pass wrote each input plane's pairs once into split planes in
  // shared memory, which cost more than the gather's arithmetic (BENCHMARKS.md, session 43).
  // CTAs per SM the register budget must allow (65536 / (128 * kMinBlocks) registers).
  // More CTAs per SM mean fewer, fuller waves and more overlap (H200 lab): TF32 N = 32 in
  // one chunk spills 68 B at 168 registers and still gains (113 -> 106 µs at C_out = 32,
  // 249 -> 212 at 64), TF32 N = 16 spills 40 B at 128 and gains (83 -> 73 µs at C_out = 16);
  // 16-bit N = 24 fits 128 (99 -> 84 µs, bf16 reference); TF32 N = 24 and 16-bit N = 32 lose
  // at 128 (120 B spilled each); 3xTF32 needed ~234 (v40). float32 data with 16-bit operands
  // (autocast) at N = 24: 88.3 µs at 3 per SM vs 88.2 at 4 (B = 128), 616 vs 630 (B = 1024).
  // k_r = 5 holds two accumulators more and takes one CTA per SM less: at the k_r <= 3
  // bounds its one-chunk kernels spill (local ptxas, nvcc 13.0: TF32 N = 24 64 B at 168, bf16
  // N = 24 320 B at 128, TF32 N = 32 retiring 1260 B at 128). 3xTF32 took 2 (255
  // registers) until v41 rebuilt its B descriptors in each step (kRebuildB): its one-chunk
  // kernel at N <= 24 now fits 3 without a spill (v58: 160 registers by TMA, 163 by cp.async at
  // k_r = 3), at N = 32 it takes 200; at k_r = 5 it gathers in chunks (WidthKernels::kHasKR5).
  // A 4th per SM (128 registers, 24 B spilled by TMA, 56 B by cp.async) lost 4% at the
  // reference and 12% at B = 8 (lab, H100, v58); its lean kernel at N = 24 (v59) fits 4 in
  // 128 registers with no spill: one accumulator and the argmin fewer.
  // Float32 data with 16-bit operands by TMA at N = 24 (autocast) also fits 128 (v34: 127
  // registers until v33's item loop took it to 162, 3 per SM; capped at 128 no spill at k_r = 1
  // and 3, 4 B at 2; lab, H200: reference 64.0 -> 55.1 µs, B = 1024 426 -> 381, B = 1 equal).
  // 16-bit retiring (v36): 5 per SM, 96 registers with 68 B spilled (at 4 per SM it gained
  // only 2-3%: bf16 reference 52.35 -> 51.46 µs, at 5 49.75; B = 1024 358.3 -> 347.6 / 335.5);
  // the autocast kernels alike (v37: 96 registers, 68 B); without the argmin (v38) 16 B.
  // TF32 retiring without the argmin fits 5 too (v38: 96 registers, 8 B spilled; with it 140 B).
  // At N = 32 the lean kernels (v39) take 4: 128 registers without a spill, where 5 spilled
  // (bf16 56 B) and won at B >= 128 by 2-4% but lost 8% at B = 64 (lab, H200, session 21).
  // TF32 K in chunks of 9 k-steps (WidthKernels::kNineChunks) holds 9 k-steps of A per
  // buffer: 215 registers at N = 32, 189 at 24, 2 CTAs per SM (no spill; shared memory holds
  // no more at its K). N = 64 (16-bit operands, launch_group64) holds 32 accumulator registers
  // per output plane: 255 registers, 2 per SM (bf16 8 B spilled, autocast none); TF32's two
  // warpgroups 255 each, one CTA per SM (no spill).
  static constexpr int kMinBlocks =
      kWarpgroups_ > 1 ? 1
      : (kN_ > 32 || (!kOneChunk_ && kLongChunk_ >= 9)) ? 2
      : kSplit3x ? ((kRetireEachPlane && kN <= 24) ? 4 : (kRetireEachPlane || (kOneChunk && kN <= 24)) ? 3 : 2)
               : (kRetireEachPlane && (sizeof(ValA) == 2 || !kArgmin)) ? (kN <= 24 ? 5 : 4)
               : ((kN <= 16 || (sizeof(ValA) == 2 && kN <= 24 && (sizeof(Element) == 2 || kTma)) ||
                   kRetireEachPlane)
                      ? 4
                      : 3) -
                     (kKR_ >= 4 ? 1 : 0);
  // Largest R split. Measured on the H200 (B=1 reference, TF32): 10.4 µs at 4, 12.1 at 8
  // (each CTA reads k_r - 1 extra planes; more, shorter CTAs cost more).
  static constexpr int kMaxSplit = 4;
  // Largest cluster (the portable limit): C_out > kN splits the channels over up to this
  // many CTAs, times the R split.
  static constexpr int kMaxCluster = 8;
  // B in shared memory: canonical K-major, no swizzle; (N, BK) per tile, tiles (kr, k-step)
  // one after another. The tile mode is large and static; only the used tiles exist.
  using SmemLayoutB = decltype(cute::tile_to_shape(
      cute::SM90::GMMA::Layout_K_INTER_Atom<ValA>{},
      cute::Shape<cute::Int<kN>, cute::Int<kBlockK>, cute::Int<4096>>{}));
  static constexpr int kTileBElems = kN * kBlockK;
  // kSplit3x: the bf16 tiles (N, 16) of the cross terms, after the TF32 ones (same bytes each).
  using SmemLayoutBH = decltype(cute::tile_to_shape(
      cute::SM90::GMMA::Layout_K_INTER_Atom<cutlass::bfloat16_t>{},
      cute::Shape<cute::Int<kN>, cute::_16, cute::Int<4096>>{}));
  static_assert(cute::size<1>(typename cute::MMA_Traits<MmaOp>::Shape_MNK{}) == kN &&
                    cute::size<2>(typename cute::MMA_Traits<MmaOp>::Shape_MNK{}) == kBlockK,
                "one k-step of one accumulator is one wgmma m64nNk(BK)");
  static_assert(cute::size<0>(SmemLayoutB{}) == kN && cute::size<1>(SmemLayoutB{}) == kBlockK,
                "one B tile is (N, BK)");
};

// Run-time layout of one launch; offsets in bytes from the dynamic smem base.
struct WgGeometry {
  int tiles_p, tiles_q;  // output tiles per batch index
  int foot_p;            // footprint rows: kTileP + k_p - 1
  int plane_stride;      // elements per ring slot
  int k_plane, k_steps, chunks;
  int b_tiles;           // k_r * k_steps B tiles per weight copy
  int n_split;           // channel groups: CTAs of one cluster with kN channels each
  int r_split;           // CTAs of one cluster (per channel group) sharing the planes along R
  int r_chunk;           // output planes per CTA of a cluster: ceil(r_out / r_split)
  int pairs;             // 16-bit x copied by 4-byte pairs (PlaneRing::pairs)
  int work_items;        // CTAs the problem needs (a persistent grid has fewer: each takes several)
  int off_koff, off_bias, off_src, off_planes, off_red, off_xch, off_bars, smem_bytes;
  // The prologue's run-time divisors, with multipliers computed on the host: a division by
  // one is a multiply-high and a shift instead of a ~20-instruction dependent chain, which
  // every CTA ran for its index, its footprint table and its weight offsets. Set by
  // with_divisors at launch only (planning builds several geometries per call).
  cutlass::FastDivmod by_cluster;  // blockIdx.x -> (tile CTA, rank in the cluster)
  cutlass::FastDivmod by_r_split;  // rank -> (channel group, R rank)
  cutlass::FastDivmod by_tiles;    // tile CTA -> (batch index, tile)
  cutlass::FastDivmod by_tiles_q;  // tile -> (tile row, tile column)
  cutlass::FastDivmod by_foot_pq;  // footprint element -> (channel, element in its plane)
  cutlass::FastDivmod by_k_slice;  // B row -> (kr, k)
  cutlass::FastDivmod by_kpq;      // k -> (channel, tap)
  cutlass::FastDivmod by_kq;       // tap -> (kp, kq)
};

// CTAs of one R rank: batch x output tiles x channel groups (times g.r_split: the grid).
CUTE_HOST_DEVICE long long tile_ctas(const Params& p, const WgGeometry& g) {
  return 1LL * p.batch * g.tiles_p * g.tiles_q * g.n_split;
}

// Whether x's planes can load by TMA: a ring slot's first C_in channels are one dense box
// (kRowPitch, foot_p, 1, C_in, 1) of x seen as a 5-D tensor (Q, P, R, C, B), which needs unit
// stride along Q, 16-byte aligned rows and base, 16-byte box rows and box sides <= 256. TMA
// zero-fills what lies outside x, as the cp.async ring does.
template <class Cfg>
CUTE_HOST_DEVICE bool tma_fits(const Params& p, int foot_p) {
  constexpr int kBytes = int(sizeof(typename Cfg::Element));
  static_assert(Cfg::kTma && Cfg::kRowPitch * kBytes % 16 == 0, "a slot row is a TMA box row");
  auto aligned = [](int64_t stride, int extent) { return extent == 1 || (stride * kBytes) % 16 == 0; };
  return p.xs_q == 1 &&
         aligned(p.xs_p, p.p_in) && aligned(p.xs_r, p.r_in) && aligned(p.xs_c, p.c_in) &&
         aligned(p.xs_b, p.batch) && reinterpret_cast<uintptr_t>(p.x) % 16 == 0 && p.c_in <= 256 &&
         foot_p <= 256;
}

// sm_count: the device's SMs. C_out > kN takes n_split = ceil(C_out / kN) CTAs per tile, one
// per kN channels. Small batches split R over up to kMaxSplit CTAs per channel group while
// the grid stays within one CTA per SM (measured on the H200 for B = 1..8: grids of 64-128
// CTAs beat both fewer, longer CTAs and a full wave of three per SM); r_split > 0 asks for
// that split instead (within the same caps). The n_split x r_split CTAs of a tile form one
// cluster.
template <class Cfg>
CUTE_HOST_DEVICE WgGeometry make_wg_geometry(const Params& p, int sm_count, int r_split = 0) {
  WgGeometry g{};
  g.tiles_p = (p.p_out + Cfg::kTileP - 1) / Cfg::kTileP;
  g.tiles_q = (p.q_out + Cfg::kTileQ - 1) / Cfg::kTileQ;
  g.n_split = (p.c_out + Cfg::kN - 1) / Cfg::kN;
  const long long tiles = tile_ctas(p, g);
  const long long ctas = (tiles + Cfg::kItemsPerCta - 1) / Cfg::kItemsPerCta;  // (kOwnItems: two tiles each)
  const long long fill = r_split > 0 ? r_split : ctas > 0 ? sm_count / ctas : 1;
  const int max_split = g.n_split >= Cfg::kMaxCluster ? 1 : Cfg::kMaxCluster / g.n_split;
  const int cap = max_split < Cfg::kMaxSplit ? max_split : Cfg::kMaxSplit;
  g.r_split = int(fill < 1 ? 1 : (fill > cap ? cap : fill));
  if (g.r_split > p.r_out) g.r_split = p.r_out;
  g.r_chunk = (p.r_out + g.r_split - 1) / g.r_split;
  g.r_split = (p.r_out + g.r_chunk - 1) / g.r_chunk;  // no CTA without output planes
  g.work_items = int(tiles * g.r_split < INT_MAX ? tiles * g.r_split : INT_MAX);  // (plan_config rejects more)
  g.foot_p = Cfg::kTileP + p.k_p - 1;
  // 16-bit footprint rows start at even elements (q0, the pitch and x's other strides are
  // even) of a 4-byte aligned x with unit stride along Q, and an even Q extent keeps every
  // pair wholly inside or outside x: cp.async by pairs.
  using Element = typename Cfg::Element;
  g.pairs = sizeof(Element) == 2 && p.xs_q == 1 && p.q_in % 2 == 0 &&
            (p.xs_b | p.xs_c | p.xs_r | p.xs_p) % 2 == 0 && reinterpret_cast<uintptr_t>(p.x) % 4 == 0;
  static_assert(Cfg::kRowPitch % 2 == 0 && Cfg::kTileQ % 2 == 0, "pairs need even rows");
  // (TMA writes 128-byte aligned slots)
  constexpr int kSlotAlign = Cfg::kTma ? 128 / int(sizeof(Element)) : 8;
  g.plane_stride = round_up((p.c_in + 1) * g.foot_p * Cfg::kRowPitch, kSlotAlign);
  constexpr int kMinSlot = PlaneRing<typename Cfg::Element, Cfg::kRingThreads>::kMinSlotElems;
  if (g.plane_stride < kMinSlot) g.plane_stride = kMinSlot;
  g.k_plane = p.c_in * p.k_p * p.k_q;
  // k-steps padded to whole chunks (zero weights, zero-channel A): no branch around a wgmma
  // within a chunk.
  g.chunks = (g.k_plane + Cfg::kBlockK * Cfg::kChunk - 1) / (Cfg::kBlockK * Cfg::kChunk);
  g.k_steps = g.chunks * Cfg::kChunk;
  g.b_tiles = p.k_r * g.k_steps;
  // [weights: copies x b_tiles x (N, BK)][k byte offsets][bias, N floats][footprint source offsets and
  //  weight offsets per k][ring][cluster merge area when r_split > 1]
  //  [softmax exchange when n_split > 1]
  const int weight_bytes = Cfg::kWeightCopies * g.b_tiles * Cfg::kTileBElems * int(sizeof(typename Cfg::ValA));
  g.off_koff = round_up(weight_bytes, 128);
  g.off_bias = g.off_koff + round_up(g.k_steps * Cfg::kBlockK * int(sizeof(int)), 16);
  g.off_src = g.off_bias + round_up(Cfg::kN * int(sizeof(float)), 16);
  // footprint sources (C_in*foot_p*pitch) and weight offsets per (kr, k) (k_r*k_steps*BK),
  // int64 each
  g.off_planes = g.off_src + round_up((p.c_in * g.foot_p * Cfg::kRowPitch +
                                      Cfg::kKR * g.k_steps * Cfg::kBlockK) * int(sizeof(int64_t)), 16);
  if (Cfg::kTma) g.off_planes = round_up(g.off_planes, 128);
  g.off_red = g.off_planes + round_up(Cfg::kItemsPerCta * Cfg::kSlots * g.plane_stride *
                                          int(sizeof(typename Cfg::Element)), 16);  // a ring per item
  // Cluster reduction: each CTA's (min, argmin) fragments, read by rank 0 through DSMEM;
  // then the softmax's row max and row sum of each channel group (64 floats each).
  g.off_xch = g.off_red + (g.r_split > 1 ? Cfg::kThreads * Cfg::kN / 2 * 8 : 0);
  g.off_bars = g.off_xch + (g.n_split > 1 ? 2 * 64 * Cfg::kWarpgroups * int(sizeof(float)) : 0);
  g.smem_bytes = g.off_bars + (Cfg::kTma ? Cfg::kItemsPerCta * Cfg::kSlots * int(sizeof(uint64_t)) : 0);
  return g;
}

// g with its divisors set (~74 ns of host time each geometry, so once per launch).
template <class Cfg>
WgGeometry with_divisors(const Params& p, WgGeometry g) {
  g.by_cluster = cutlass::FastDivmod(g.n_split * g.r_split);
  g.by_r_split = cutlass::FastDivmod(g.r_split);
  g.by_tiles = cutlass::FastDivmod(g.tiles_p * g.tiles_q);
  g.by_tiles_q = cutlass::FastDivmod(g.tiles_q);
  g.by_foot_pq = cutlass::FastDivmod(g.foot_p * Cfg::kRowPitch);
  g.by_k_slice = cutlass::FastDivmod(g.k_steps * Cfg::kBlockK);
  g.by_kpq = cutlass::FastDivmod(p.k_p * p.k_q);
  g.by_kq = cutlass::FastDivmod(p.k_q);
  return g;
}

}  // namespace fusedconv::fused::hopper
