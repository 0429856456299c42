#pragma once
// The Hopper fused kernel: conv3d as an implicit GEMM on wgmma (A from registers, B = the
// weights from shared memory), streamed along the reduced axis R with rolling accumulators.
// "highest" (kSplit3x) issues two wgmmas per k-step into one accumulator: big(x) big(w) in
// TF32, then the two cross terms in one bf16 wgmma (wgmma_config.cuh; split_tf32_bf16 for w;
// x's big part is x itself, its bf16 pairs computed in the gather: bf16_pairs_truncated).
//
// CTA = one warpgroup = one batch index x a 4 x 16 (or 2 x 32) tile of output positions (P, Q)
// (Cfg::kWarpgroups = 2, TF32 at N = 64: two such tiles stacked along P, one warpgroup
// each, sharing the ring and the weights).
// Input plane i is gathered from the ring ONCE (A: 64 positions x K = C_in*kP*kQ) and
// multiplied by the k_r weight slices W_kr into the accumulators of the k_r output planes
// d = i - kr it feeds; plane d's accumulator starts from zero (ScaleOut::Zero) at kr = 0.
// After plane i's wgmmas are issued, output plane i - k_r (completed by plane i - 1) is
// folded into the running min (and argmin) while those wgmmas run: k_r + 1 accumulators
// rotate; TF32 (kIssueFirst) also readies and gathers plane i + 1 meanwhile. TF32 on large
// grids and 16-bit operands on persistent ones (kRetireEachPlane) retire plane i's wgmmas
// within its step instead and fold the output plane they complete at once: k_r accumulators
// and one A buffer, so 4 CTAs (TF32) fit per SM, or 5 without the argmin (kArgmin false,
// the forward's lean kernels; 3xTF32's lean kernel at N = 32: 3). A finite bias is added
// once after the min (the epilogue), otherwise per plane.
// The main loop is unrolled over the ring's kSlots planes, so every ring slot,
// accumulator, A buffer and B descriptor is a compile-time choice (ptxas serializes the
// wgmmas when an accumulator is picked at run time).
// A plane whose K fits one chunk (kChunk wgmma k-steps) takes the fast path: its A
// addresses are registers computed once per CTA. Longer K goes chunk by chunk through the
// k offset table in shared memory.
// C_out > kN splits the channels over n_split CTAs (kN each). Small batches split R over
// r_split CTAs per channel group: each takes r_chunk output planes (reading k_r - 1 planes
// more), and the group's R rank 0 merges the partial mins in rank order through distributed
// shared memory, so torch.min's first-index rule holds. The n_split x r_split CTAs of a tile
// are one cluster (consecutive blockIdx.x, rank = n_rank * r_split + r_rank).
// The channel softmax runs in the epilogue within each thread quad (a row's kN channels);
// with a channel split the groups exchange each row's max and sum through DSMEM.
// The ring (plane_ring.cuh) copies 32-bit planes, and 16-bit ones whose rows allow 4-byte
// pairs, with cp.async kPrefetch planes ahead; other 16-bit planes go through registers.
// Cfg::kTma (inputs that tma_fits): thread 0 loads each plane by one TMA box instead, on the
// slot's mbarrier; no footprint table and no per-thread copies.
// Work items (a tile's share of one CTA) past one wave: a TMA kernel that walks all of R
// runs a persistent grid (wgmma_launch.cuh, persistent_grid): CTA blockIdx.x takes item
// blockIdx.x, then (p.item_counter, no clusters) the next item no CTA has claimed, or items
// + gridDim.x, ... in turn. The weights are laid out once per CTA, and the next item's first
// planes load while the last one's results are written. gridDim.x is whole clusters, so a
// channel cluster's CTAs take one tile's items together.
// Cfg::kOwnItems (TF32's two warpgroups at C_out <= 64): each warpgroup walks its own items
// (items blockIdx.x * 2 + wg, + 2 * gridDim.x, ...) with its own ring, slot barriers and named
// barrier; only the weights (laid out once by the whole CTA) are shared.
#include <cooperative_groups.h>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

#include "cuda/fused_math.cuh"
#include "cuda/hopper/wgmma_config.cuh"
#include "cuda/hopper/wgmma_weights.cuh"
#include "cuda/plane_ring.cuh"

namespace fusedconv::fused::hopper {

// kClaims: this instantiation claims its items from p.item_counter (launch_config picks it
// only for the grids that claim). Its code costs the others registers (v61: TF32's lean
// kernel spilled 24 bytes instead of 8 and took 1 µs longer at B = 1, where nothing claims).
template <class Cfg, bool kClaims = false>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    wgmma_conv_min_softmax_kernel(const Params p, const WgGeometry g,
                                  const __grid_constant__ cute::TmaDescriptor tma_x) {
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  using Element = typename Cfg::Element;
  using ValA = typename Cfg::ValA;
  constexpr int BK = Cfg::kBlockK, kChunk = Cfg::kChunk;
  constexpr int kPitch = Cfg::kRowPitch, kTileQ = Cfg::kTileQ;

  extern __shared__ __align__(128) unsigned char smem[];
  ValA* sW = reinterpret_cast<ValA*>(smem);                         // (copies, b_tiles, N, BK)
  int* sKoff = reinterpret_cast<int*>(smem + g.off_koff);           // (k_steps*BK) bytes
  int64_t* sSrc = reinterpret_cast<int64_t*>(smem + g.off_src);     // footprint sources
  Element* sPlanes = reinterpret_cast<Element*>(smem + g.off_planes);  // (kSlots, plane_stride)

  const int tid = threadIdx.x;
  // This thread's warpgroup (its 64 positions: rows wg * kWgTileP.. of the CTA's tile, or with
  // kOwnItems its own item's tile) and its index within it (the MMA partitions'); compile-time
  // 0 and tid with one warpgroup.
  const int wg = Cfg::kWarpgroups > 1 ? tid / 128 : 0;
  const int wg_tid = Cfg::kWarpgroups > 1 ? tid % 128 : tid;
  const int cluster_ctas = g.n_split * g.r_split;
  // The ring this thread serves (kOwnItems: its warpgroup's), and its index among the ring's
  // threads; its first row within the item's tile (kOwnItems: 0, the tile is its own).
  constexpr int kItems = Cfg::kItemsPerCta, kRingThreads = Cfg::kRingThreads;
  const int ring_id = Cfg::kOwnItems ? wg : 0;
  const int ring_tid = Cfg::kOwnItems ? wg_tid : tid;
  const int wg_row0 = Cfg::kOwnItems ? 0 : wg * Cfg::kWgTileP;
  // Work item = one CTA's share of a tile: blockIdx.x, and with a persistent grid (TMA
  // kernels without clusters, more items than one wave holds) every gridDim.x-th after it
  // (kOwnItems: items per warpgroup, kItems per CTA).
  int work = int(blockIdx.x) * kItems + ring_id;
  const int walkers = int(gridDim.x) * kItems;
  const bool has_item = work < g.work_items;  // (false only for a last CTA's second warpgroup)
  // An item's batch index and first output row / column; returns its rank in the cluster.
  auto item_origin = [&](int item, int& bb, int& pp0, int& qq0) {
    int c, rk, t, tp, tq;
    g.by_cluster(c, rk, item);
    g.by_tiles(bb, t, c);
    g.by_tiles_q(tp, tq, t);
    pp0 = tp * Cfg::kTileP;
    qq0 = tq * kTileQ;
    return rk;
  };
  int b, p0, q0;
  // rank == block_rank_in_cluster(), the same for every item (gridDim.x is whole clusters)
  const int rank = item_origin(work, b, p0, q0);
  int n_rank, r_rank;
  g.by_r_split(n_rank, r_rank, rank);
  const int foot_pq = g.foot_p * kPitch;

  // This CTA's output planes along R: all of them (r_split == 1) or one part of a cluster.
  const int d_begin = r_rank * g.r_chunk;
  const int d_end = min(p.r_out, d_begin + g.r_chunk);
  const int i_begin = d_begin, i_end = d_end + p.k_r - 1;  // input planes it reads

  // This CTA's channels: n0 .. n0 + c_here - 1.
  const int n0 = n_rank * Cfg::kN;
  const int c_here = min(Cfg::kN, p.c_out - n0);
  const Element* x = static_cast<const Element*>(p.x);
  const Element* w = static_cast<const Element*>(p.weight) + int64_t(n0) * p.ws_n;
  const Element* bias = p.bias ? static_cast<const Element*>(p.bias) + int64_t(n0) * p.bs_n : nullptr;

  using Ring = PlaneRing<Element, kRingThreads>;
  constexpr int KR = Cfg::kKR, kAcc = Cfg::kAccSlots, kSlots = Cfg::kSlots;
  constexpr int kABuf = Cfg::kABuffers, kPrefetch = Cfg::kPrefetch;
  Ring ring{};
  ring.xb = x + int64_t(b) * p.xs_b + int64_t(i_begin) * p.xs_r + int64_t(p0) * p.xs_p +
            int64_t(q0) * p.xs_q;  // plane i is ring plane i - i_begin
  ring.xs_r = p.xs_r;
  ring.sSrc = sSrc;
  ring.sPlanes = sPlanes + ring_id * kSlots * g.plane_stride;
  ring.plane_stride = g.plane_stride;
  ring.elems = p.c_in * foot_pq;
  ring.pairs = g.pairs;
  // TMA: plane r of this CTA's footprint is the box at (q0, p0, r, 0, b); slot s fills on
  // sBar[s], which completes once per plane it receives.
  uint64_t* sBars = reinterpret_cast<uint64_t*>(smem + g.off_bars);  // (kSlots, kItems)
  uint64_t* sBar = sBars + ring_id * kSlots;                           // this ring's (kSlots)
  constexpr bool tma = Cfg::kTma;
  // Plane r of the item at (bb, pp0, qq0) into slot s.
  auto load_tma_at = [&](int s, int r, int bb, int pp0, int qq0) {  // the ring's thread 0 only
    const uint32_t bytes = uint32_t(sizeof(Element)) * ring.elems;
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&sBar[s], bytes);
    cute::SM90_TMA_LOAD_5D::copy(&tma_x, &sBar[s], uint64_t(cute::TMA::CacheHintSm90::EVICT_NORMAL),
                                 ring.slot(s), qq0, pp0, r, 0, bb);
  };
  auto load_tma = [&](int s, int r) { load_tma_at(s, r, b, p0, q0); };
  // Every item loads its planes from slot 0 on, so slot s completes a phase per plane: its
  // parity at an item's start is bit s of item_phase, which flips by item_flip per item
  // (the planes slot s receives in one item, odd or even).
  uint32_t item_phase = 0, item_flip = 0;
  CUTE_UNROLL
  for (int s = 0; s < kSlots; ++s) {
    const int planes_s = i_end - i_begin > s ? (i_end - i_begin - 1 - s) / kSlots + 1 : 0;
    item_flip |= uint32_t(planes_s & 1) << s;
  }
  // Waits until plane i (ring slot s = (i - i_begin) % kSlots, compile-time) has landed.
  auto wait_tma = [&](int s, int i) {
    const uint32_t parity = (uint32_t((i - i_begin) / kSlots) ^ (item_phase >> s)) & 1u;
    cutlass::arch::ClusterBarrier::wait(&sBar[s], parity);
  };
  // K in one chunk: the weights' first round of global loads (and the bias load) goes out
  // before the footprint table is built, so that its latency overlaps that work (session 14
  // profile: the wait for them and the barrier after them were 9.5% of a CTA's warp time;
  // v28: bf16 B = 1024 -5%). K in chunks keeps all its weight rounds after the ring's first
  // copies (v28's order lost 4-5% there: bf16 and 3xTF32 at C_in = 16). Its sequence below is
  // deliberately not shared with the one-chunk path: with the same order but this path's
  // object built early and the first store peeled off the loop, the lab still measured bf16
  // +3% and 3xTF32 +6% (BENCHMARKS.md, v30), so `early` stays unused there.
  constexpr bool kWeightsEarly = Cfg::kOneChunk;
  int64_t* sWoff = sSrc + ring.elems;
  auto offsets = [&] {
    weight_offsets<Cfg>(p, g, tid, foot_pq, sWoff, sKoff);
    __syncthreads();  // the weight offsets are read by every thread
  };
  auto load_bias = [&] { return (tid < c_here && bias != nullptr) ? float(bias[tid * p.bs_n]) : 0.0f; };
  float bias_n = 0.0f;
  [[maybe_unused]] WeightTiles<Cfg> early(p, w, c_here, tid);
  if constexpr (kWeightsEarly) {
    offsets();
    early.load(g, sWoff, 0);
    bias_n = load_bias();
  }
  ring.init(ring_tid, p.c_in, g.foot_p, kPitch, g.by_foot_pq, p.p_in - p0, p.q_in - q0, p.xs_c,
            p.xs_p, p.xs_q, kSlots, !tma);
  if (tma && tid == 0) {  // (tma: compile-time)
    cute::prefetch_tma_descriptor(&tma_x);
    for (int s = 0; s < kItems * kSlots; ++s) cutlass::arch::ClusterTransactionBarrier::init(&sBars[s], 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();  // the source table (or the TMA barriers) is read by every thread below

  // Prologue: the first kLead + kPrefetch planes start while the weights are laid out.
  constexpr int kLead = Cfg::kLead;
  CUTE_UNROLL
  for (int s = 0; s < kLead + kPrefetch; ++s) {
    if (i_begin + s < i_end) {
      if constexpr (tma) {
        if (ring_tid == 0 && has_item) load_tma(s, i_begin + s);
      } else if (ring.copies_async()) ring.load_async(ring_tid, ring.plane(s), ring.slot(s));
      else ring.load_sync(ring_tid, ring.plane(s), ring.slot(s));
    }
    cp_async_fence();
  }
  const Element* src_next = ring.plane(kLead + kPrefetch);  // the next plane the ring loads

  // ---- weights: B tiles in the canonical K-major layout ---------------------------------
  Tensor sB = make_tensor(make_smem_ptr(sW), typename Cfg::SmemLayoutB{});  // (N,BK,tiles)
  // kSplit3x: the cross terms' bf16 tiles, after the b_tiles TF32 ones of the weights at `base`
  auto bf16_tiles = [&](ValA* base) {
    return make_tensor(make_smem_ptr(reinterpret_cast<cutlass::bfloat16_t*>(base + g.b_tiles * Cfg::kTileBElems)),
                       typename Cfg::SmemLayoutBH{});  // (N,16,tiles)
  };
  Tensor sBH = bf16_tiles(sW);
  constexpr int kBatch = WeightTiles<Cfg>::kBatch;
  if constexpr (kWeightsEarly) {
    early.store(g, tid, sB, sBH, 0);
    for (int t0 = kBatch; t0 < g.b_tiles; t0 += kBatch) {
      early.load(g, sWoff, t0);
      early.store(g, tid, sB, sBH, t0);
    }
  } else {
    bias_n = load_bias();
    offsets();
    WeightTiles<Cfg> weights(p, w, c_here, tid);
    for (int t0 = 0; t0 < g.b_tiles; t0 += kBatch) {
      weights.load(g, sWoff, t0);
      weights.store(g, tid, sB, sBH, t0);
    }
  }
  cutlass::arch::fence_view_async_shared();  // generic-proxy writes -> wgmma reads

  // ---- MMA partitioning -------------------------------------------------------------------
  TiledMMA tiled_mma = make_tiled_mma(typename Cfg::MmaOp{});
  auto thr_mma = tiled_mma.get_thread_slice(wg_tid);
  Tensor cA = make_identity_tensor(Shape<_64, Int<BK * kChunk>>{});  // (64,BK*kChunk) -> (m,k)
  Tensor cC = make_identity_tensor(Shape<_64, Int<Cfg::kN>>{});      // (64,N) -> (m,n)
  Tensor tCcA = thr_mma.partition_A(cA);                             // (MMA,1,kChunk)
  Tensor tCcC = thr_mma.partition_C(cC);                             // (MMA,1,1)
  using FragA = decltype(make_tensor<ValA>(shape(tCcA)));           // (MMA,1,kChunk)
  constexpr int kParts = Cfg::kWeightCopies;                         // (kSplit3x: TF32 big, bf16 pairs)
  FragA tCrA[kABuf][kParts];                                         // A buffers
  Tensor tCsB = thr_mma.partition_B(sB);                             // (MMA,1,1,tiles)
  Tensor tCrB = thr_mma.make_fragment_B(tCsB);                       // (1,1,1,tiles) descriptors
  TiledMMA tiled_mma_h = make_tiled_mma(typename Cfg::MmaOpH{});     // kSplit3x: the cross terms
  auto thr_mma_h = tiled_mma_h.get_thread_slice(wg_tid);
  using Acc = decltype(partition_fragment_C(tiled_mma, Shape<_64, Int<Cfg::kN>>{}));
  Acc acc[kAcc];                                                     // kAcc x (MMA,1,1)
  Tensor tCrMin = make_tensor<float>(shape(tCcC));                   // (MMA,1,1) running min
  Tensor tCrArg = make_tensor<int>(shape(tCcC));                     // (MMA,1,1) its index
  constexpr int kVals = decltype(size(tCcC))::value;
  constexpr int kValsA = decltype(size<0>(tCcA))::value;

  // The k of A value v in k-step s (kSplit3x: the TF32 columns' logical k, Cfg::permute_k).
  auto a_k = [&](int v, int s) {
    const int k = get<1>(tCcA(v, 0, s));
    return Cfg::kSplit3x ? k - k % BK + Cfg::permute_k(k % BK) : k;
  };
  // A rows: m = 16*warp + q-offset; footprint row m / 16, column m % 16. Every row of this
  // thread is its first row plus a static offset.
  const int m0 = get<0>(tCcA(0, 0, 0));
  const int a_thread = int(sizeof(Element)) * ((wg_row0 + m0 / kTileQ) * kPitch + m0 % kTileQ);
  auto a_row_bytes = [&](int v, int s) {  // static after unrolling
    const int dm = get<0>(tCcA(v, 0, s)) - m0;
    return int(sizeof(Element)) * ((dm / kTileQ) * kPitch + dm % kTileQ);
  };

  // The bias per channel in shared memory: registers are the scarce resource here.
  float* sBias = reinterpret_cast<float*>(smem + g.off_bias);  // (N)
  if (tid < Cfg::kN) sBias[tid] = bias_n;
  // With a finite bias, min over R of (conv + bias) = (min over R of conv) + bias exactly
  // (rounding is monotone), so the inference fold leaves the bias to the epilogue. The
  // argmin fold (torch.min's first index among rounded ties) and an infinite bias (inf - inf
  // is NaN per plane) add it per plane.
  const bool track_argmin = Cfg::kArgmin && p.argmin != nullptr;  // (launch_config checks p.argmin)
  const bool bias_per_plane = __syncthreads_or(!isfinite(bias_n)) || track_argmin;
  fill(tCrMin, INFINITY);
  fill(tCrArg, 0);
  // (the barrier above: weights, k offsets and zero channels are in place; the CTA's last)
  if (Cfg::kOwnItems && !has_item) return;

  // Fast path: this thread's A byte offsets in a ring slot for the one chunk, in registers.
  int a_off[kChunk][kValsA];
  CUTE_UNROLL
  for (int s = 0; s < kChunk; ++s) {
    CUTE_UNROLL
    for (int v = 0; v < kValsA; ++v)
      a_off[s][v] = Cfg::kOneChunk ? a_thread + sKoff[a_k(v, s)] : 0;
  }

  const char* planes = reinterpret_cast<const char*>(ring.sPlanes);  // (kOwnItems: this ring's)
  const int slot_bytes = int(sizeof(Element)) * g.plane_stride;
  // One A value at byte offset `off` of a plane into the buffer (not kSplit3x).
  auto put = [&](FragA* rA, int v, int s, const char* plane, int off) __attribute__((always_inline)) {
    rA[0](v, 0, s) = to_mma<ValA>(*reinterpret_cast<const Element*>(plane + off));
  };
  // kSplit3x: k-step s's four A values at byte offsets off (TF32 value order (g, k), (g + 8, k),
  // (g, k + 1), (g + 8, k + 1), k = 2 (lane % 4): ALayout_64x8 with permuted columns) into the
  // TF32 part, x itself from the ring slot (the TF32 wgmma truncates it to big), and as bf16
  // pairs (ALayout_64x16's registers: rows g, g + 8 of k..k + 1 for big(x), then for small(x))
  // into part 1's four registers, computed here (session 43: cheaper than v57's split pass).
  auto put_split = [&](FragA* rA, int s, const char* plane, const int (&off)[4]) __attribute__((always_inline)) {
    if constexpr (Cfg::kSplit3x) {
      static_assert(kValsA == 4 && kParts == 2, "TF32 m64k8 A values, two parts");
      uint32_t raw[4];  // x itself: the TF32 part (the wgmma truncates it to its big part)
      CUTE_UNROLL
      for (int v = 0; v < 4; ++v) {
        raw[v] = *reinterpret_cast<const uint32_t*>(plane + off[v]);
        rA[0](v, 0, s) = cutlass::tfloat32_t::bitcast(raw[v]);
      }
      uint32_t bf16[4];  // part 1's registers: tops of (v0, v2), (v1, v3), then their smalls
      bf16_pairs_truncated(__uint_as_float(raw[0]), __uint_as_float(raw[2]), bf16[0], bf16[2]);
      bf16_pairs_truncated(__uint_as_float(raw[1]), __uint_as_float(raw[3]), bf16[1], bf16[3]);
      CUTE_UNROLL
      for (int q = 0; q < 4; ++q) rA[1](q, 0, s) = cutlass::tfloat32_t::bitcast(bf16[q]);
    }
  };
  // k-step s's A values at byte offsets off into the buffer (all parts).
  auto put_step = [&](FragA* rA, int s, const char* plane, const int (&off)[kValsA]) __attribute__((always_inline)) {
    if constexpr (Cfg::kSplit3x) {
      put_split(rA, s, plane, off);
    } else {
      CUTE_UNROLL
      for (int v = 0; v < kValsA; ++v) put(rA, v, s, plane, off[v]);
    }
  };
  auto fence_a = [&](FragA* rA) __attribute__((always_inline)) {
    CUTE_UNROLL
    for (int q = 0; q < kParts; ++q) warpgroup_fence_operand(rA[q]);
  };
  // Gathers the one chunk of the plane in `slot` through the register offsets.
  auto gather_fast = [&](FragA* rA, const char* slot) __attribute__((always_inline)) {
    CUTE_UNROLL
    for (int s = 0; s < kChunk; ++s) {
      int off[kValsA];
      CUTE_UNROLL
      for (int v = 0; v < kValsA; ++v) off[v] = a_off[s][v] + a_row_bytes(v, s);
      put_step(rA, s, slot, off);
    }
    fence_a(rA);
  };
  // Gathers chunk c of the plane in `slot` through the k offset table.
  auto gather_chunk = [&](FragA* rA, const char* slot, int c) __attribute__((always_inline)) {
    CUTE_UNROLL
    for (int s = 0; s < kChunk; ++s) {
      int off[kValsA];
      CUTE_UNROLL
      for (int v = 0; v < kValsA; ++v) off[v] = a_thread + sKoff[c * kChunk * BK + a_k(v, s)] + a_row_bytes(v, s);
      put_step(rA, s, slot, off);
    }
    fence_a(rA);
  };

  // The B descriptors (1,1,1,tiles): tCrB, or (kRebuildB) rebuilt in each step from a base
  // the compiler cannot hoist (the empty asm hides its value), so that they do not stay live
  // across the plane loop.
  auto b_descriptors = [&] {
    if constexpr (Cfg::kRebuildB) {
      ValA* base = sW;
      asm volatile("" : "+l"(base));
      return thr_mma.make_fragment_B(thr_mma.partition_B(make_tensor(make_smem_ptr(base), typename Cfg::SmemLayoutB{})));
    } else {
      return tCrB;
    }
  };
  // kSplit3x (kRebuildB): the cross terms' bf16 B descriptors, rebuilt in each step alike.
  auto b_descriptors_h = [&] {
    if constexpr (Cfg::kSplit3x) {
      ValA* base = sW;
      asm volatile("" : "+l"(base));
      return thr_mma_h.make_fragment_B(thr_mma_h.partition_B(bf16_tiles(base)));
    } else {
      return tCrB;  // (unused)
    }
  };

  // The wgmmas of one chunk (k-steps kstep0..) of plane i = i_begin + u (mod kSlots) into
  // the accumulators of output planes i - kr. Output planes outside [d_begin, d_end) are
  // computed too and never folded: no branch around a wgmma depends on them.
  auto issue = [&](FragA* rA, auto u_c, int kstep0, auto k_steps) __attribute__((always_inline)) {
    constexpr int u = decltype(u_c)::value;
    auto rB = b_descriptors();
    [[maybe_unused]] auto rBH = b_descriptors_h();
    CUTE_UNROLL
    for (int j = 0; j < kAcc; ++j) warpgroup_fence_operand(acc[j]);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int s = 0; s < kChunk; ++s) {
      const int kstep = kstep0 + s;  // padded B tiles are zero
      CUTE_UNROLL
      for (int kr = 0; kr < KR; ++kr) {
        Acc& a = acc[((u - kr) % kAcc + kAcc) % kAcc];  // output plane i - kr
        const auto t = kr * k_steps + kstep;
        tiled_mma.accumulate_ = (kr == 0 && kstep == 0) ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
        if constexpr (Cfg::kSplit3x) {  // the cross terms (bf16) first: the small sums; small * small dropped
          tiled_mma_h.accumulate_ = tiled_mma.accumulate_;
          gemm(tiled_mma_h, rA[1](_, _, s), rBH(_, _, 0, t), a);
          tiled_mma.accumulate_ = GMMA::ScaleOut::One;
        }
        gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, t), a);
      }
    }
    warpgroup_commit_batch();
    CUTE_UNROLL
    for (int j = 0; j < kAcc; ++j) warpgroup_fence_operand(acc[j]);
  };

  // Output plane d (complete in `a`), plus the bias when bias_per_plane, into the running
  // min (and argmin).
  auto fold = [&](Acc& a, int d) __attribute__((always_inline)) {
    warpgroup_fence_operand(a);
    if (bias_per_plane) {
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) min_update(tCrMin(v), tCrArg(v), a(v) + sBias[get<1>(tCcC(v))], d);
    } else {
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) tCrMin(v) = min_nan(tCrMin(v), a(v));
    }
  };

  // Step i's ring work: loads plane i + kLead + kPrefetch (into the slot of plane i - 2 + kLead,
  // whose last gather every thread finished before the previous barrier), waits for this thread's
  // copies of plane i + kLead and meets the other threads, after which plane i + kLead is ready.
  // The register-staged ring only fetches here; `store_next` writes the plane into its slot at the
  // end of the step, read two barriers later. By TMA, thread 0 issues the load and every thread
  // waits on the slot's mbarrier instead of its own copies; the barrier still guards the slot the
  // load reuses.
  // The plane step i loads (i + kLead + kPrefetch): whether it exists, and its ring slot.
  // The barrier of the threads sharing the ring: the CTA's, or (kOwnItems) the warpgroup's.
  auto ring_sync = [&] {
    if constexpr (Cfg::kOwnItems) cutlass::arch::NamedBarrier::sync(kRingThreads, ring_id);
    else __syncthreads();
  };
  auto loads_next = [&](int i) { return i + kLead + kPrefetch < i_end; };
  auto next_slot = [&](auto u_c) { return ring.slot((decltype(u_c)::value + kLead + kPrefetch) % kSlots); };
  auto advance = [&](auto u_c, int i) __attribute__((always_inline)) {
    constexpr int u = decltype(u_c)::value;
    if constexpr (tma) {
      if (ring_tid == 0 && loads_next(i)) load_tma((u + kLead + kPrefetch) % kSlots, i + kLead + kPrefetch);
      wait_tma((u + kLead) % kSlots, i + kLead);
    } else if (ring.copies_async()) {
      if (loads_next(i)) ring.load_async(ring_tid, src_next, next_slot(u_c));
      cp_async_fence();
      cp_async_wait<kPrefetch>();
    } else {
      if (loads_next(i)) ring.fetch(ring_tid, src_next);
    }
    ring_sync();  // plane i + kLead is in its slot for every thread
  };
  auto store_next = [&](auto u_c, int i) __attribute__((always_inline)) {
    if (loads_next(i)) {
      if (!tma && !ring.copies_async()) ring.store(ring_tid, src_next, next_slot(u_c));
      src_next += p.xs_r;
    }
  };
  // Ring slot u's plane, where the gather reads A.
  auto slot_of = [&](int u) { return planes + u * slot_bytes; };

  // Plane i = i_begin + u (mod kSlots). kIssueFirst: plane i is ready and gathered into A
  // buffer u % kABuf when the step starts; its wgmmas are issued first, and the barrier of
  // plane i + 1, its gather into the other A buffer and the fold of the output plane that
  // plane i - 1 completed run while they execute. Otherwise the step readies plane i, then
  // gathers and issues it (one chunk, or chunk by chunk). The last step of a period and
  // every step of the partial last period (kTail) retire all wgmmas before the fold: ptxas
  // serializes every wgmma of the kernel when a wgmma group is still in flight across the
  // loop's back edge or a skipped step (C7514).
  auto step = [&](auto u_c, int i, auto tail_c) __attribute__((always_inline)) {
    constexpr int u = decltype(u_c)::value;
    [[maybe_unused]] constexpr bool kTail = decltype(tail_c)::value;  // (K in chunks retires every chunk)
    const int d_fold = i - KR;           // completed by plane i - 1
    Acc& a_fold = acc[(u + 1) % kAcc];   // = (u - KR) mod kAcc
    if constexpr (Cfg::kRetireEachPlane) {
      // Plane i's wgmmas, the barrier of plane i + 1 while they run, then their retirement:
      // output plane i - KR + 1 is complete (folded at once, its accumulator next holds
      // output plane i + 1) and the one A buffer is free for plane i + 1's gather.
      const bool more = i + 1 < i_end;
      issue(tCrA[0], u_c, 0, Int<kChunk>{});
      if (more) advance(u_c, i);
      warpgroup_wait<0>();
      // kAcc = KR here, so a_fold holds output plane d_fold + 1, the one just completed.
      if (d_fold + 1 >= d_begin) fold(a_fold, d_fold + 1);
      if (more) gather_fast(tCrA[0], slot_of((u + 1) % kSlots));
    } else if constexpr (Cfg::kIssueFirst) {
      const bool more = i + 1 < i_end;         // plane i + 1 exists
      issue(tCrA[u % kABuf], u_c, 0, Int<kChunk>{});
      if (more) advance(u_c, i);
      static_assert(kABuf == 2, "the next plane's gather needs the other A buffer");
      if constexpr (kTail || u == kSlots - 1) warpgroup_wait<0>();
      else warpgroup_wait<1>();                // plane i - 1 is done: its A buffer is free
      if (more) gather_fast(tCrA[(u + 1) % kABuf], slot_of((u + 1) % kSlots));
      if (d_fold >= d_begin) fold(a_fold, d_fold);
    } else if constexpr (Cfg::kOneChunk) {
      advance(u_c, i);
      FragA* rA = tCrA[u % kABuf];
      if constexpr (kABuf == 1) warpgroup_wait<0>();  // the buffer's last reader is done
      gather_fast(rA, slot_of(u));
      issue(rA, u_c, 0, Int<kChunk>{});
      if constexpr (kTail || u == kSlots - 1) warpgroup_wait<0>();
      else if constexpr (kABuf == 2) warpgroup_wait<1>();  // plane i - 1 is done
      if (d_fold >= d_begin) fold(a_fold, d_fold);
    } else {
      // Pairs of chunks through buffers 0 and 1: each gather overlaps the other buffer's
      // wgmmas. All groups retire at the end of a pair: a wgmma group in flight across this
      // run-time loop's back edge makes ptxas serialize every wgmma of the kernel (C7515).
      // An odd last chunk is in buffer 0 after the last pair (also a plane's only chunk: 3xTF32
      // at k_r = 5 takes this path for every K).
      advance(u_c, i);
      const char* slot = slot_of(u);
      warpgroup_wait<0>();
      if (d_fold >= d_begin) fold(a_fold, d_fold);
      gather_chunk(tCrA[0], slot, 0);
      for (int c = 0; c + 1 < g.chunks; c += 2) {
        issue(tCrA[0], u_c, c * kChunk, g.k_steps);
        gather_chunk(tCrA[1], slot, c + 1);
        issue(tCrA[1], u_c, (c + 1) * kChunk, g.k_steps);
        warpgroup_wait<1>();  // chunk c is done with buffer 0
        if (c + 2 < g.chunks) gather_chunk(tCrA[0], slot, c + 2);
        warpgroup_wait<0>();
      }
      if (g.chunks % 2 != 0) {
        issue(tCrA[0], u_c, (g.chunks - 1) * kChunk, g.k_steps);
        warpgroup_wait<0>();
      }
    }
    store_next(u_c, i);
  };

  for (;;) {  // work items (one unless the grid is persistent)
    if constexpr (Cfg::kIssueFirst) {  // plane i_begin ready and gathered before the loop
      if constexpr (tma) wait_tma(0, i_begin);
      cp_async_wait<kPrefetch>();
      ring_sync();
      gather_fast(tCrA[0], slot_of(0));
    }

    {  // the plane loop: whole periods of kSlots planes, then the partial last one
      int i0 = i_begin;
      for (; i0 + kSlots <= i_end; i0 += kSlots) {
        [&]<int... U>(cute::integer_sequence<int, U...>) __attribute__((always_inline)) {
          (step(Int<U>{}, i0 + U, cute::false_type{}), ...);
        }(cute::make_integer_sequence<int, kSlots>{});
      }
      [&]<int... U>(cute::integer_sequence<int, U...>) __attribute__((always_inline)) {
        ((i0 + U < i_end ? step(Int<U>{}, i0 + U, cute::true_type{}) : void()), ...);
      }(cute::make_integer_sequence<int, kSlots>{});
    }
    warpgroup_wait<0>();
    cp_async_wait<0>();
    // Claims the next item now so that the atomic's latency hides behind the epilogue.
    const bool claims = kClaims && p.item_counter != nullptr && has_item;  // (launch_config: TMA, no clusters)
    int claimed = 0;
    if (claims && ring_tid == 0) claimed = atomicAdd(p.item_counter, 1);
    if constexpr (!Cfg::kRetireEachPlane) {  // the last output plane, in the accumulator of its position in the period
      const int d_last = d_end - 1;
      const int j_last = (d_last - i_begin) % kAcc;
      CUTE_UNROLL
      for (int j = 0; j < kAcc; ++j)
        if (j == j_last) fold(acc[j], d_last);
    }

    // ---- R split: R rank 0 merges the partial (min, argmin) of ranks 1.. in order ---------
    if (g.r_split > 1) {
      float* sRedMin = reinterpret_cast<float*>(smem + g.off_red);    // (kVals, kThreads)
      int* sRedArg = reinterpret_cast<int*>(sRedMin + kVals * Cfg::kThreads);
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) {
        sRedMin[v * Cfg::kThreads + tid] = tCrMin(v);
        if constexpr (Cfg::kArgmin) sRedArg[v * Cfg::kThreads + tid] = tCrArg(v);
      }
      cute::cluster_sync();  // every rank's partials are written
      if (r_rank == 0) {
        auto cluster = cooperative_groups::this_cluster();
        for (int r = 1; r < g.r_split; ++r) {
          const float* peer_min = cluster.map_shared_rank(sRedMin, rank + r);
          const int* peer_arg = cluster.map_shared_rank(sRedArg, rank + r);
          CUTE_UNROLL
          for (int v = 0; v < kVals; ++v)
            min_update(tCrMin(v), tCrArg(v), peer_min[v * Cfg::kThreads + tid],
                       Cfg::kArgmin ? peer_arg[v * Cfg::kThreads + tid] : 0);
        }
      }
    }

    // ---- epilogue: softmax over the channels of each position (one quad holds a row) ------
    // Values v and v^1 are columns 2t, 2t+1 of one row; v / 2 % 2 picks row g or g + 8. All
    // of a thread's values lie in one output row pp (rows g and g + 8 of the warp's 16).
    // (R ranks other than 0 run it on partial mins and write nothing: they only take part
    // in the cluster barriers.)
    // With a channel split, a row's max and sum combine the groups' in group order (the same
    // float sum in every CTA): each group's R rank 0 publishes its rows in sXch.
    constexpr int kRows = 64 * Cfg::kWarpgroups;  // the CTA's positions
    float* sXch = reinterpret_cast<float*>(smem + g.off_xch);  // (max | sum, kRows)
    auto combine_groups = [&](float (&v)[2], int half, auto op) {
      if (r_rank == 0 && tid % 4 == 0) {
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) sXch[half * kRows + wg * 64 + get<0>(tCcC(2 * h))] = v[h];
      }
      cute::cluster_sync();  // every group's rows are published
      if (r_rank == 0) {
        auto cluster = cooperative_groups::this_cluster();
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int row = half * kRows + wg * 64 + get<0>(tCcC(2 * h));
          v[h] = cluster.map_shared_rank(sXch, 0)[row];
          for (int j = 1; j < g.n_split; ++j) v[h] = op(v[h], cluster.map_shared_rank(sXch, j * g.r_split)[row]);
        }
      }
    };
    if (!bias_per_plane) {
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) tCrMin(v) += sBias[get<1>(tCcC(v))];
    }
    float row_max[2] = {-INFINITY, -INFINITY};
    CUTE_UNROLL
    for (int v = 0; v < kVals; ++v)
      if (get<1>(tCcC(v)) < c_here) row_max[(v / 2) % 2] = nan_max(row_max[(v / 2) % 2], tCrMin(v));
    float row_sum[2] = {0.0f, 0.0f};
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h)
      for (int off = 1; off <= 2; off <<= 1)
        row_max[h] = nan_max(row_max[h], __shfl_xor_sync(0xffffffffu, row_max[h], off));
    if (g.n_split > 1) combine_groups(row_max, 0, [](float a, float b) { return nan_max(a, b); });
    CUTE_UNROLL
    for (int v = 0; v < kVals; ++v) {
      const float e = expf(tCrMin(v) - row_max[(v / 2) % 2]);
      tCrMin(v) = e;
      if (get<1>(tCcC(v)) < c_here) row_sum[(v / 2) % 2] += e;
    }
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h)
      for (int off = 1; off <= 2; off <<= 1)
        row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], off);
    if (g.n_split > 1) combine_groups(row_sum, 1, [](float a, float b) { return a + b; });
    if (cluster_ctas > 1) cute::cluster_sync();  // the peers are done with this shared memory
    if (r_rank != 0) return;
    // The next item: the one claimed (a CTA that runs faster takes more items: with fixed
    // shares, TIMELINE showed an SM's 5 CTAs ending up to 20% apart), or the next share.
    int next = work + walkers;
    if (claims) {
      // (kItems) tickets, in the weight offsets' space: the weights were laid out long ago.
      // (Static shared memory would push the near-limit kernels' dynamic requests past the
      // opt-in limit.)
      int* sClaimed = reinterpret_cast<int*>(sWoff);
      if (ring_tid == 0) sClaimed[ring_id] = walkers + claimed;
      ring_sync();
      next = sClaimed[ring_id];
    }
    // The next item's first planes load while this one's results are written: every thread is
    // done with the ring (the barrier), so thread 0 refills slots 0.. at once.
    const bool has_next = tma && next < g.work_items;
    int next_b = 0, next_p0 = 0, next_q0 = 0;
    if (has_next) {
      item_origin(next, next_b, next_p0, next_q0);
      if (!claims) ring_sync();  // (a claim has met the other threads here already)
      if (ring_tid == 0) {
        CUTE_UNROLL
        for (int s = 0; s < kLead + kPrefetch; ++s)
          if (i_begin + s < i_end) load_tma_at(s, i_begin + s, next_b, next_p0, next_q0);
      }
    }
    const float row_inv[2] = {1.0f / row_sum[0], 1.0f / row_sum[1]};

    // y at this thread's first (n, pp, qq); every value is a static channel / row offset away.
    const int mC0 = get<0>(tCcC(0)), nC0 = get<1>(tCcC(0));  // row g: g + 8 < kTileQ
    const int pp = p0 + wg_row0 + mC0 / kTileQ, qq0 = q0 + mC0 % kTileQ;
    const int64_t plane_out = int64_t(p.p_out) * p.q_out;
    const int64_t off0 = (int64_t(b) * p.c_out + n0 + nC0) * plane_out + int64_t(pp) * p.q_out + qq0;
    Element* y = static_cast<Element*>(p.y) + off0;
    int32_t* arg = track_argmin ? p.argmin + off0 : nullptr;
    if (pp < p.p_out) {
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) {
        const int dm = get<0>(tCcC(v)) - mC0, n = get<1>(tCcC(v));
        if (n < c_here && qq0 + dm < p.q_out) {
          const int64_t off = (n - nC0) * plane_out + dm;
          y[off] = Element(tCrMin(v) * row_inv[(v / 2) % 2]);
          if (track_argmin) arg[off] = tCrArg(v);
        }
      }
    }
    if (!has_next) break;
    work = next, b = next_b, p0 = next_p0, q0 = next_q0;
    item_phase ^= item_flip;
    fill(tCrMin, INFINITY);
    fill(tCrArg, 0);
  }  // work items
#endif
}

}  // namespace fusedconv::fused::hopper
