#pragma once
// The shifted-plane Hopper kernel (C_in = 16, C_out <= 64, k = 3, q_in <= kW): conv3d as an
// implicit GEMM with no gather. Routed for bf16 and fp16 data only (shifted_rule.h): its TF32
// form ran at v49's level in the lab (BENCHMARKS.md, session 31 lab), its autocast form (float32
// data, 16-bit operands) slower than v49's in the package (v50). The GEMM is
// transposed: M = the 64 output channels (A = the weights, laid out once per CTA), N = two
// output rows x kW positions (B = the input plane).
// A ring slot holds one input plane's 4 rows in a swizzled K-major layout (a row of the layout =
// one position's 16 channels), so tap (kr, kp, kq)'s B operand is slot kr's plane at a start
// kp * kW + kq positions on: 27 taps x kKSteps wgmma 64 x 2kW per output plane read both
// operands straight from shared memory, and no thread touches them in between.
// CTA = two warpgroups, each on its own work items (batch index x 2 output rows; items
// blockIdx.x * 2 + wg, + 2 * gridDim.x, ...) with its own ring of 3 planes and named barrier;
// only the weights are shared. A plane loads through registers (16 channels x 4 rows x kW per
// warpgroup): the next plane's loads are in flight under the current output plane's wgmmas and
// land in the slot the output plane frees. The running min (torch.min's NaN rule) stays in the
// accumulator's registers; the epilogue adds the bias, moves the (64, N) tile into the ring
// and runs the channel softmax one position per thread.
// Columns past q_out (the ring's pitch is kW) are computed and never stored; a finite bias is
// added once after the min, a non-finite one per plane (so Inf - Inf gives eager's NaN).
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/array.h>

#include "cuda/fused_math.cuh"
#include "cuda/fused_params.h"
#include "cuda/hopper/shifted_config.cuh"

namespace fusedconv::fused::hopper {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    shifted_conv_min_softmax_kernel(const Params p, const ShiftedGeometry g) {
#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  using Element = typename Cfg::Element;
  using Op = typename Cfg::Op;
  constexpr int kW = Cfg::kW, kCin = Cfg::kCin, kE = Cfg::kE;
  extern __shared__ __align__(1024) char smem[];
  Op* sW = reinterpret_cast<Op*>(smem);               // (27 taps) x swizzled (64 channels, 16)
  const int wg = threadIdx.x / 128, wtid = threadIdx.x % 128;
  char* sWg = smem + Cfg::kWeightBytes + wg * Cfg::kWgBytes;
  Op* sRing = reinterpret_cast<Op*>(sWg);             // (3 slots) x swizzled (positions, 16)
  float* sTile = reinterpret_cast<float*>(sWg);       // the epilogue's (64, kLdC) tile, over the ring
  const Element* x = static_cast<const Element*>(p.x);
  const Element* w = static_cast<const Element*>(p.weight);
  const Element* bias = static_cast<const Element*>(p.bias);
  Element* y = static_cast<Element*>(p.y);

  // Weights once per CTA, zero past C_out; the ring's slack rows (read only by columns past
  // q_out) zeroed once.
  for (int e = threadIdx.x; e < Cfg::kTaps * Cfg::kTapElems; e += Cfg::kThreads) {
    const int ci = e % kCin, n = (e / kCin) % Cfg::kM, tap = e / Cfg::kTapElems;
    const int kr = tap / 9, kp = tap / 3 % 3, kq = tap % 3;
    sW[tap * Cfg::kTapElems + Cfg::swizzled(n, ci)] =
        n < p.c_out ? to_mma<Op>(w[n * p.ws_n + ci * p.ws_c + kr * p.ws_r + kp * p.ws_p + kq * p.ws_q]) : Op(0.0f);
  }
  for (int e = wtid; e < Cfg::kSlots * Cfg::kSlack * kCin; e += 128) {
    const int s = e / (Cfg::kSlack * kCin), r = e % (Cfg::kSlack * kCin);
    sRing[s * Cfg::kSlotElems + Cfg::kPositions * kCin + r] = Op(0.0f);
  }
  __syncthreads();

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
  // wgmma accumulator layout) and their biases: added after the min when finite, else in
  // every plane.
  float bias_end[2], bias_plane[2];
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int n = get<0>(tCcC(2 * h));
    const float b = bias != nullptr && n < p.c_out ? float(bias[n * p.bs_n]) : 0.0f;
    bias_end[h] = isfinite(b) ? b : 0.0f;
    bias_plane[h] = isfinite(b) ? 0.0f : b;
  }

  auto wg_sync = [&] { cutlass::arch::NamedBarrier::arrive_and_wait(128, wg); };

  // One plane's share of this thread: (position, 16-byte chunk of kE channels) units
  // u = i * 128 + wtid, so that a warp stores 512 contiguous (swizzled) bytes.
  // The raw values, converted only at the store: a conversion at the load would wait for the
  // loads before the wgmmas are issued (package build, session 32: autocast 157 us, not 122;
  // converting here, 151 in session 33, so the rule keeps autocast off this kernel).
  Element staged[Cfg::kUnitsPerThread][kE];
  auto load_plane = [&](int b, int p0, int r) {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kUnitsPerThread; ++i) {
      const int u = i * 128 + wtid, pos = u / Cfg::kChunks, chunk = u % Cfg::kChunks;
      const int row = p0 + pos / kW, q = pos % kW;
      const bool inside = row < p.p_in && q < p.q_in;
      const Element* src = x + b * p.xs_b + kE * chunk * p.xs_c + r * p.xs_r + row * p.xs_p + q;
      CUTE_UNROLL
      for (int c = 0; c < kE; ++c) staged[i][c] = inside ? src[c * p.xs_c] : Element(0.0f);
    }
  };
  auto store_plane = [&](int slot) {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kUnitsPerThread; ++i) {
      const int u = i * 128 + wtid, pos = u / Cfg::kChunks, chunk = u % Cfg::kChunks;
      cutlass::AlignedArray<Op, kE> v;  // 16 bytes
      CUTE_UNROLL
      for (int c = 0; c < kE; ++c) v[c] = to_mma<Op>(staged[i][c]);
      *reinterpret_cast<uint4*>(sRing + slot * Cfg::kSlotElems + Cfg::swizzled(pos, kE * chunk)) =
          reinterpret_cast<const uint4&>(v);
    }
  };

  const int r_out = p.r_out;
  for (int item = blockIdx.x * Cfg::kWarpgroups + wg; item < g.items; item += gridDim.x * Cfg::kWarpgroups) {
    const int b = item / g.pairs, p0 = 2 * (item % g.pairs);
    wg_sync();  // the previous item's epilogue is done with the ring
    for (int s = 0; s < Cfg::kSlots; ++s) {
      load_plane(b, p0, s);
      store_plane(s);
    }
    cutlass::arch::fence_view_async_shared();  // generic-proxy writes -> wgmma reads
    wg_sync();
    for (int d = 0; d < r_out; ++d) {
      const bool more = d + Cfg::kSlots < p.r_in;
      if (more) load_plane(b, p0, d + Cfg::kSlots);  // in flight under the wgmmas
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
      }
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      CUTE_UNROLL
      for (int v = 0; v < kVals; ++v) {
        const float a = acc(v) + bias_plane[(v / 2) % 2];
        tCrMin(v) = d == 0 || min_takes(a, tCrMin(v)) ? a : tCrMin(v);
      }
      if (more) {
        wg_sync();  // every warp's wgmmas are done with slot d % 3
        store_plane(d % Cfg::kSlots);
        cutlass::arch::fence_view_async_shared();
        wg_sync();
      }
    }

    // ---- Epilogue: (min + bias) tile into the ring, then the softmax of one position per thread.
    wg_sync();  // (no wgmma reads the ring any more)
    CUTE_UNROLL
    for (int v = 0; v < kVals; v += 2) {  // values v, v + 1: one channel, adjacent positions
      const int n = get<0>(tCcC(v)), pos = get<1>(tCcC(v));
      *reinterpret_cast<float2*>(sTile + n * Cfg::kLdC + pos) =
          make_float2(tCrMin(v) + bias_end[(v / 2) % 2], tCrMin(v + 1) + bias_end[(v / 2) % 2]);
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
