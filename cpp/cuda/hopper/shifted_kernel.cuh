#pragma once
// The shifted-plane Hopper kernel (C_in = 16, C_out <= 64, k = 3, q_in <= kW): conv3d as an
// implicit GEMM with no gather. Routed for 16-bit operands (bf16 / fp16 data and autocast) and
// for TF32 (shifted_rule.h). The GEMM is transposed: M = the 64 output channels (A = the
// weights, laid out once per CTA, by a cluster's CTAs together: shifted_weights.cuh), N = two output rows x kW positions
// (B = the input plane).
// A ring slot holds one input plane's 4 rows in a swizzled K-major layout (a row of the layout =
// one position's 16 channels), so tap (kr, kp, kq)'s B operand is slot kr's plane at a start
// kp * kW + kq positions on: 27 taps x kKSteps wgmma 64 x 2kW per output plane read both
// operands straight from shared memory, and no thread touches them in between.
// CTA = two warpgroups, each on its own work items (batch index x 2 output rows; items
// blockIdx.x * 2 + wg, + 2 * gridDim.x, ...) with its own ring of 3 planes and named barrier;
// only the weights are shared. They issue their planes' wgmmas in turn (ping-pong). A plane
// loads through registers (16 channels x 4 rows x kW per warpgroup) about a plane ahead and is
// stored into the slot its output plane's kr = 0 taps free, under that plane's other taps.
// The running min (torch.min's NaN rule) stays in the accumulator's registers; the epilogue
// adds the bias, moves the (64, N) tile into shared memory past slot 0 and runs the channel
// softmax one position per thread, while the next item's first planes load.
// Columns past q_out (the ring's pitch is kW) are computed and never stored; a finite bias is
// added once after the min, and a CTA whose bias has a non-finite value adds it per plane (so
// Inf - Inf gives eager's NaN).
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/array.h>

#include "cuda/fused_math.cuh"
#include "cuda/fused_params.h"
#include "cuda/hopper/shifted_config.cuh"
#include "cuda/hopper/shifted_weights.cuh"

namespace fusedconv::fused::hopper {

template <class Cfg>
__global__ void __cluster_dims__(Cfg::kClusterCtas, 1, 1) __launch_bounds__(Cfg::kThreads, 1)
    shifted_conv_min_softmax_kernel(const Params p, const ShiftedGeometry g) {
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  cluster_arrive_relaxed();  // the weights' prologue waits for the peers before it writes their tiles
  using Element = typename Cfg::Element;
  using Op = typename Cfg::Op;
  constexpr int kW = Cfg::kW, kCin = Cfg::kCin, kE = Cfg::kE;
  extern __shared__ __align__(1024) char smem[];
  Op* sW = reinterpret_cast<Op*>(smem);               // (27 taps) x swizzled (64 channels, 16)
  const int wg = threadIdx.x / 128, wtid = threadIdx.x % 128;
  char* sWg = smem + Cfg::kWeightBytes + wg * Cfg::kWgBytes;
  Op* sRing = reinterpret_cast<Op*>(sWg);             // (3 slots) x swizzled (positions, 16)
  float* sTile = reinterpret_cast<float*>(sWg + Cfg::kSlotBytes);  // the epilogue's (64, kLdC) tile, past slot 0
  const Element* x = static_cast<const Element*>(p.x);
  const Element* bias = static_cast<const Element*>(p.bias);
  Element* y = static_cast<Element*>(p.y);

  // With a finite bias, min over R of (conv + bias) = (min over R of conv) + bias exactly
  // (rounding is monotone): the fold is one min.NaN per value and the bias waits for the
  // epilogue. A non-finite one is added per plane (inf - inf is NaN), uniformly per CTA: a
  // per-plane add on every problem cost 16 us of 148 at C_in = 16 (BENCHMARKS.md, v51).
  static_assert(Cfg::kThreads >= Cfg::kM, "one thread per channel checks its bias");
  const bool bias_nonfinite = bias != nullptr && int(threadIdx.x) < p.c_out && !isfinite(float(bias[threadIdx.x * p.bs_n]));

  // ---- MMA partitioning -------------------------------------------------------------------
  TiledMMA tiled_mma = make_tiled_mma(typename Cfg::MmaOp{});
  auto thr_mma = tiled_mma.get_thread_slice(wtid);
  Tensor sA = make_tensor(make_smem_ptr(sW), typename Cfg::SmemLayoutA{});     // (64,16)
  Tensor sB = make_tensor(make_smem_ptr(sRing), typename Cfg::SmemLayoutB{});  // (N,16)
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));  // (1,1,kKSteps) descriptors of tap 0
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));  // (1,1,kKSteps) descriptors of slot 0, tap 0
  Tensor cC = make_identity_tensor(Shape<_64, Int<Cfg::kN>>{});    // (64,N) -> (channel, position)
  Tensor tCcC = thr_mma.partition_C(cC);                           // (MMA,1,1)
  Tensor acc = partition_fragment_C(tiled_mma, Shape<_64, Int<Cfg::kN>>{});  // (MMA,1,1)
  Tensor tCrMin = make_tensor<float>(shape(tCcC));                 // (MMA,1,1) running min
  constexpr int kVals = decltype(size(tCcC))::value;

  // This thread's two channels (values v with (v / 2) % 2 = h are channel row h of the
  // wgmma accumulator layout) and their biases: per plane when bias_per_plane, else after
  // the min.
  float bias_n[2];
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int n = get<0>(tCcC(2 * h));
    bias_n[h] = bias != nullptr && n < p.c_out ? float(bias[n * p.bs_n]) : 0.0f;
  }

  auto wg_sync = [&] { cutlass::arch::NamedBarrier::arrive_and_wait(128, wg); };

  // One plane's share of this thread: (position, 16-byte chunk of kE channels) units
  // u = i * 128 + wtid, so that a warp stores 512 contiguous (swizzled) bytes.
  // The raw values, converted only at the store: a conversion at the load would wait for the
  // loads before the wgmmas are issued (package build, session 32: autocast 157 us, not 122).
  //
  // A thread's units share one chunk and sit kUnitStride positions apart, so that, with kW a
  // multiple of kUnitStride, unit i is at a fixed (row, q) step from the thread's first: one
  // pointer per item (item_src) and 32-bit offsets (rule: a batch index's span < 2^31), not a
  // 64-bit pointer per (unit, channel), which took 64 registers.
  constexpr int kUnitStride = 128 / Cfg::kChunks;
  static_assert(kW % kUnitStride == 0, "a unit's row and q step are compile-time");
  using Staged = Element[Cfg::kUnitsPerThread][kE];
  Staged staged, staged2;  // planes in flight: the next one; at an item's start, also the third
  const Element* item_src = x;
  int row0 = 0;  // the item's first input row
  const int thread_q = wtid / Cfg::kChunks, thread_chunk = wtid % Cfg::kChunks;
  const int xs_c = int(p.xs_c), xs_p = int(p.xs_p), xs_r = int(p.xs_r);
  auto start_item = [&](int item) {
    const int b = item / g.pairs;
    row0 = 2 * (item % g.pairs);
    item_src = x + b * p.xs_b + kE * thread_chunk * p.xs_c + row0 * p.xs_p + thread_q;
  };
  auto load_plane = [&](int r, Staged& dst) {
    const Element* src = item_src + r * xs_r;
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kUnitsPerThread; ++i) {
      constexpr int kPerRow = kW / kUnitStride;
      const int row = i / kPerRow, q = (i % kPerRow) * kUnitStride;
      const bool inside = row0 + row < p.p_in && thread_q + q < p.q_in;
      CUTE_UNROLL
      for (int c = 0; c < kE; ++c) dst[i][c] = inside ? src[c * xs_c + row * xs_p + q] : Element(0.0f);
    }
  };
  auto store_plane = [&](int slot, const Staged& src) {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kUnitsPerThread; ++i) {
      const int pos = i * kUnitStride + thread_q, chunk = thread_chunk;
      cutlass::AlignedArray<Op, kE> v;  // 16 bytes
      CUTE_UNROLL
      for (int c = 0; c < kE; ++c) v[c] = to_mma<Op>(src[i][c]);
      *reinterpret_cast<uint4*>(sRing + slot * Cfg::kSlotElems + Cfg::swizzled(pos, kE * chunk)) =
          reinterpret_cast<const uint4&>(v);
    }
  };
  // An item's planes 0, 1, 2 start in slots 0, 1, 2: plane 0 goes into slot 0, which the
  // epilogue's tile leaves free, and planes 1 and 2 are loaded, while the previous item's
  // epilogue runs (first_planes); they are stored after it (rest_of_ring).
  auto first_planes = [&] {  // staged: plane 0
    store_plane(0, staged);
    load_plane(1, staged);
    load_plane(2, staged2);
  };
  auto rest_of_ring = [&] {
    store_plane(1, staged);
    store_plane(2, staged2);
    if (Cfg::kSlots < p.r_in) load_plane(Cfg::kSlots, staged);  // in flight under plane 0's taps
    cutlass::arch::fence_view_async_shared();  // generic-proxy writes -> wgmma reads
    wg_sync();
  };

  // Ping-pong: the two warpgroups issue their planes' wgmmas in turn (A0 B0 A1 B1 ..., by two
  // named barriers, until one runs out), so that one drains, folds and stores while the
  // tensor cores run the other's: TF32 161.3 -> 150.9 us at C_in = 16 (BENCHMARKS.md, v52).
  const int r_out = p.r_out, wg_stride = gridDim.x * Cfg::kWarpgroups;
  auto items_of = [&](int w) {
    const int first = blockIdx.x * Cfg::kWarpgroups + w;
    return first < g.items ? (g.items - first + wg_stride - 1) / wg_stride : 0;
  };
  const int other_chains = items_of(wg ^ 1) * r_out;
  int chain = 0;

  int item = blockIdx.x * Cfg::kWarpgroups + wg;
  if (item < g.items) {  // the first plane's loads fly under the weights' prologue
    start_item(item);
    load_plane(0, staged);
  }
  // Weights once per CTA (staged in the warpgroups' space, which they leave barrier-synced);
  // then the bias check's block-wide OR, and the ring's slack rows (read only by columns past
  // q_out) zeroed once.
  load_shifted_weights<Cfg>(p, sW, smem + Cfg::kWeightBytes, reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset));
  const bool bias_per_plane = __syncthreads_or(bias_nonfinite);  // here, not at the start: it held every load back 0.8 µs
  for (int e = wtid; e < Cfg::kSlots * Cfg::kSlack * kCin; e += 128) {
    const int s = e / (Cfg::kSlack * kCin), r = e % (Cfg::kSlack * kCin);
    sRing[s * Cfg::kSlotElems + Cfg::kPositions * kCin + r] = Op(0.0f);
  }
  if (item < g.items) first_planes();

  for (; item < g.items; item += wg_stride) {
    const int b = item / g.pairs, p0 = 2 * (item % g.pairs);
    const bool has_next = item + wg_stride < g.items;
    wg_sync();  // the previous item's epilogue is done with its tile
    rest_of_ring();
    fill(tCrMin, INFINITY);
    for (int d = 0; d < r_out; ++d) {
      // Plane d + 3 replaces plane d in slot d % 3, which only the kr = 0 taps read: they go in
      // a wgmma group of their own, and the store waits for that group alone, so that it runs
      // under the kr = 1, 2 taps; plane d + 4's loads (or the next item's plane 0) then fly
      // under the rest of this plane.
      const bool refill = d + Cfg::kSlots < p.r_in;
      if (wg == 0 ? chain >= 1 && chain - 1 < other_chains : chain < other_chains)
        cutlass::arch::NamedBarrier::sync(256, 2 + wg);  // the other warpgroup's previous plane is issued
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int kr = 0; kr < 3; ++kr) {
        const int slot = (d + kr) % Cfg::kSlots;
        CUTE_UNROLL
        for (int kp = 0; kp < 3; ++kp) {
          CUTE_UNROLL
          for (int kq = 0; kq < 3; ++kq) {
            // Descriptor offsets in 16-byte units: a tap's weights, a slot, a shift by positions.
            auto dA = tCrA.data() + (kr * 9 + kp * 3 + kq) * (Cfg::kTapBytes / 16);
            auto dB = tCrB.data() + slot * (Cfg::kSlotBytes / 16) + (kp * kW + kq) * (Cfg::kRowBytes / 16);
            CUTE_UNROLL
            for (int k = 0; k < Cfg::kKSteps; ++k) {  // TF32: channels 0..7, 8..15
              tiled_mma.accumulate_ = (kr | kp | kq | k) ? GMMA::ScaleOut::One : GMMA::ScaleOut::Zero;
              gemm(tiled_mma, make_tensor(dA, tCrA.layout())(_, _, k), make_tensor(dB, tCrB.layout())(_, _, k), acc);
            }
          }
        }
        if (kr == 0) warpgroup_commit_batch();
      }
      warpgroup_commit_batch();
      if (wg == 0 ? chain < other_chains : chain + 1 < other_chains)
        cutlass::arch::NamedBarrier::arrive(256, 3 - wg);  // this plane is issued: the other's turn
      ++chain;
      if (refill) {
        warpgroup_wait<1>();  // this warp's kr = 0 taps are done
        wg_sync();            // every warp's: slot d % 3 is free
        store_plane(d % Cfg::kSlots, staged);
        cutlass::arch::fence_view_async_shared();
      }
      if (d + Cfg::kSlots + 1 < p.r_in) {
        load_plane(d + Cfg::kSlots + 1, staged);
      } else if (d == cute::max(0, r_out - 2) && has_next) {  // staged is free from here on
        start_item(item + wg_stride);
        load_plane(0, staged);
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      if (bias_per_plane) {
        CUTE_UNROLL
        for (int v = 0; v < kVals; ++v) {
          const float a = acc(v) + bias_n[(v / 2) % 2];
          tCrMin(v) = min_takes(a, tCrMin(v)) ? a : tCrMin(v);
        }
      } else {
        CUTE_UNROLL
        for (int v = 0; v < kVals; ++v) tCrMin(v) = min_nan(tCrMin(v), acc(v));
      }
      if (refill) wg_sync();  // plane d + 3 is in slot d % 3 before plane d + 1's taps read it
    }

    // ---- Epilogue: (min + bias) tile past slot 0, then the softmax of one position per thread;
    // meanwhile the next item's plane 0 goes into slot 0 and its planes 1, 2 load.
    wg_sync();  // (no wgmma reads the ring any more)
    if (has_next) first_planes();
    CUTE_UNROLL
    for (int v = 0; v < kVals; v += 2) {  // values v, v + 1: one channel, adjacent positions
      const int n = get<0>(tCcC(v)), pos = get<1>(tCcC(v));
      const float b_end = bias_per_plane ? 0.0f : bias_n[(v / 2) % 2];
      *reinterpret_cast<float2*>(sTile + n * Cfg::kLdC + pos) = make_float2(tCrMin(v) + b_end, tCrMin(v + 1) + b_end);
    }
    wg_sync();
    for (int pos = wtid; pos < Cfg::kN; pos += 128) {
      const int pp = p0 + pos / kW, qq = pos % kW;
      if (pp >= p.p_out || qq >= p.q_out) continue;
      float* col = sTile + pos;
      float mx = -INFINITY;
      for (int n = 0; n < p.c_out; ++n) mx = nan_max(mx, col[n * Cfg::kLdC]);
      float sum = 0.0f;
      for (int n = 0; n < p.c_out; ++n) {  // the column is this thread's: keep each exp in it
        const float e = expf(col[n * Cfg::kLdC] - mx);
        col[n * Cfg::kLdC] = e;
        sum += e;
      }
      const float inv = 1.0f / sum;
      Element* dst = y + (int64_t(b) * p.c_out * p.p_out + pp) * p.q_out + qq;
      const int64_t plane_out = int64_t(p.p_out) * p.q_out;
      for (int n = 0; n < p.c_out; ++n) dst[n * plane_out] = Element(col[n * Cfg::kLdC] * inv);
    }
  }
#endif
}

}  // namespace fusedconv::fused::hopper
