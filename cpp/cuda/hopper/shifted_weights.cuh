#pragma once
// The shifted-plane kernel's prologue step that lays out the weights as its A operand: 27 taps
// of swizzled (64 output channels, 16 input channels) tiles, zero past C_out.
// The weight is dense with the output channel outermost (shifted_rule.h: any order of the
// other four axes, so dims 3 and 4's permuted strides too) and 16-byte aligned: a pass copies
// output channels [n0, n0 + kPassRows / 16) as one block by one bulk copy (TMA) into a
// staging copy; then consecutive threads move consecutive (output, input channel) rows of one
// tap from it, converted to the operand type, into the tap's tile.
// One element per thread straight into the tiles cost 21 µs (bf16) to 36 µs (float32
// weights), and a warp per row of 27 taps still 11.5 µs, of a 109-127 µs kernel at C_in =
// 16 (BENCHMARKS.md, v51); 16-byte loads through registers into the staging copy took 2.9 µs
// of the prologue's 5.3 µs, the bulk copy 1.8 (H100, BENCHMARKS.md v54's stamps).
// The kClusterCtas CTAs of a cluster split the passes and write each row into every CTA's
// tiles (distributed shared memory): all CTAs reading all weights from L2 at once took ~7 µs
// (BENCHMARKS.md, v52's prologue stamps). The kernel arrives on the cluster barrier at its
// start; the wait here, before the first remote write, makes sure every peer runs.
#include <cooperative_groups.h>
#include <cuda/ptx>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include "cuda/fused_math.cuh"
#include "cuda/fused_params.h"

namespace fusedconv::fused::hopper {

template <class Cfg>
__device__ __forceinline__ void load_shifted_weights(const Params& p, typename Cfg::Op* sW, void* stage,
                                                     uint64_t* sBar) {
  using Element = typename Cfg::Element;
  using Op = typename Cfg::Op;
  constexpr int kTaps = Cfg::kTaps, kRowElems = Cfg::kCin * kTaps;  // one output channel's weights
  constexpr int kPassChannels = Cfg::kPassRows / Cfg::kCin;
  constexpr int kRowsPerThread = Cfg::kPassRows / Cfg::kThreads;
  static_assert(Cfg::kPassRows % Cfg::kThreads == 0 && kRowElems * sizeof(Element) % 16 == 0,
                "whole rows per thread; a channel's weights are whole 16-byte units (bulk copies)");
  Element* sStage = static_cast<Element*>(stage);  // the pass's channels as they lie in global memory
  const Element* w = static_cast<const Element*>(p.weight);
  const int ws_c = int(p.ws_c), ws_r = int(p.ws_r), ws_p = int(p.ws_p), ws_q = int(p.ws_q);  // < kRowElems
  constexpr int kCtas = Cfg::kClusterCtas;
  const int rank = int(cute::block_rank_in_cluster());
  Op* sW_of[kCtas];  // every CTA's tiles: this one's, then the peers' (distributed shared memory)
  CUTE_UNROLL
  for (int r = 0; r < kCtas; ++r) {
    sW_of[r] = r == 0 ? sW : cooperative_groups::this_cluster().map_shared_rank(sW, (rank + r) % kCtas);
  }
  if (threadIdx.x == 0) {
    cutlass::arch::ClusterTransactionBarrier::init(sBar, 1);
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  int phase = 0;
  for (int pass = rank; pass < Cfg::kWeightPasses; pass += kCtas) {
    const int n0 = pass * kPassChannels;
    const int live = cute::max(0, cute::min(kPassChannels, p.c_out - n0));  // channels past C_out are zero
    if (live > 0) {
      if (threadIdx.x == 0) {
        const int bytes = live * kRowElems * int(sizeof(Element));
        if (pass != rank) cutlass::arch::fence_view_async_shared();  // the last pass's reads -> this copy's writes
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(sBar, bytes);
        cute::SM90_BULK_COPY_G2S::copy(w + int64_t(n0) * kRowElems, sBar, sStage, bytes);
      }
      cutlass::arch::ClusterBarrier::wait(sBar, phase);
      phase ^= 1;
    }
    if (pass == rank) cute::cluster_wait();  // the peers run: their tiles may be written
    int stage_at[kRowsPerThread], tile_at[kRowsPerThread];  // this thread's rows (n, ci)
    bool row_live[kRowsPerThread];
    CUTE_UNROLL
    for (int j = 0; j < kRowsPerThread; ++j) {
      const int r = threadIdx.x + j * Cfg::kThreads, n = r / Cfg::kCin, ci = r % Cfg::kCin;
      stage_at[j] = n * kRowElems + ci * ws_c;
      tile_at[j] = Cfg::swizzled(n0 + n, ci);
      row_live[j] = n < live;
    }
#pragma unroll 3
    for (int tap = 0; tap < kTaps; ++tap) {
      const int tap_at = (tap / 9) * ws_r + (tap / 3 % 3) * ws_p + (tap % 3) * ws_q;
      CUTE_UNROLL
      for (int j = 0; j < kRowsPerThread; ++j) {
        const Op v = row_live[j] ? to_mma<Op>(sStage[stage_at[j] + tap_at]) : Op(0.0f);
        CUTE_UNROLL
        for (int r = 0; r < kCtas; ++r) sW_of[r][tap * Cfg::kTapElems + tile_at[j]] = v;
      }
    }
    __syncthreads();
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_cluster);  // these generic writes -> every CTA's wgmma reads
  cute::cluster_sync();  // every CTA's tiles are whole
}

}  // namespace fusedconv::fused::hopper
