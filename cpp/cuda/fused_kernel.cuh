#pragma once
// The fused kernel: conv3d as an implicit GEMM on tensor cores (CuTe TiledMMA), streamed
// along the reduced axis R, with a NaN-aware running min (and argmin) in registers and the
// channel softmax in the epilogue. Only y (and optionally argmin) is written.
//
// CTA = one batch index x one (kBlockM/16) x 16 tile of output positions (P, Q).
// It walks the output planes r = 0..R_out-1. Input planes arrive through a ring of
// k_r + kPrefetch shared-memory slots: cp.async for 32-bit elements (zero-filled outside
// x), a register-staged copy for 16-bit ones.
// Output plane r is the GEMM  C(m, n) = sum_{kr, k} A_r+kr(m, k) * W_kr(n, k)  with
//   m = position in the tile, k = (c, kp, kq), A gathered from the ring (a k offset
//   table plus compile-time row offsets), W from shared memory, stored once as per-lane B fragments.
// After each plane the accumulators are folded into the running min and reset.
#include <cute/tensor.hpp>

#include "cuda/fused_config.cuh"
#include "cuda/fused_math.cuh"

namespace fusedconv::fused {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    fused_conv_min_softmax_kernel(const Params p, const Geometry g) {
  using namespace cute;
  using Element = typename Cfg::Element;
  using ValA = typename Cfg::ValA;
  constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, BK = Cfg::kBlockK;
  constexpr int kFragB = Cfg::kFragB;
  constexpr int kMT = Cfg::kTilesM, kNT = Cfg::kTilesN;  // m16 / n8 tiles per warp

  extern __shared__ __align__(16) unsigned char smem[];
  Element* sW = reinterpret_cast<Element*>(smem);                  // B fragments
  int* sKoff = reinterpret_cast<int*>(smem + g.off_koff);          // (k_plane_pad) bytes
  int64_t* sSrc = reinterpret_cast<int64_t*>(smem + g.off_src);    // (C_in*foot_p*foot_q)
  Element* sPlanes = reinterpret_cast<Element*>(smem + g.off_planes);  // (slots, plane_stride)
  float* sRed = reinterpret_cast<float*>(smem + g.off_red);        // (kWarpsN, BM)

  // Tile and footprint row widths are compile-time (g.tile_q, g.foot_q hold the same), and
  // run-time divisions go through the host-computed divisors (g.by_*).
  constexpr int kTileQ = Cfg::kTileQ, kTileP = BM / kTileQ, kPitch = Cfg::kRowPitch;
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  int b, tile, tile_p, tile_q;
  g.by_tiles(b, tile, int(blockIdx.x));
  g.by_tiles_q(tile_p, tile_q, tile);
  const int p0 = tile_p * kTileP;
  const int q0 = tile_q * kTileQ;
  const int foot_pq = g.foot_p * kPitch;

  const Element* x = static_cast<const Element*>(p.x);
  const Element* w = static_cast<const Element*>(p.weight);
  const Element* bias = static_cast<const Element*>(p.bias);
  const Element* xb = x + int64_t(b) * p.xs_b + int64_t(p0) * p.xs_p + int64_t(q0) * p.xs_q;

  // ---- ring loads: plane r of this tile's footprint, zero outside x -------------------
  // Element offsets of the footprint (c, ip, iq) inside a plane, -1 outside x: the same
  // for every plane, so the index arithmetic is done once per CTA.
  const int elems = p.c_in * foot_pq;
  for (int i = tid; i < elems; i += Cfg::kThreads) {
    int c, rem;
    g.by_foot_pq(c, rem, i);
    const int ip = rem / kPitch;
    const int iq = rem - ip * kPitch;
    const bool inside = (p0 + ip < p.p_in) && (q0 + iq < p.q_in);
    sSrc[i] = inside ? c * p.xs_c + int64_t(ip) * p.xs_p + int64_t(iq) * p.xs_q : int64_t(-1);
  }
  __syncthreads();
  auto load_plane = [&](int r, int slot) {
    const Element* src_plane = xb + int64_t(r) * p.xs_r;
    Element* dst = sPlanes + slot * g.plane_stride;
    for (int i = tid; i < elems; i += Cfg::kThreads) {
      const int64_t off = sSrc[i];
      const bool inside = off >= 0;
      const Element* src = inside ? src_plane + off : x;
      if constexpr (sizeof(Element) == 4) {
        SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>::copy(
            *reinterpret_cast<const uint32_t*>(src), *reinterpret_cast<uint32_t*>(dst + i), inside);
      } else {  // cp.async moves >= 4 bytes; 16-bit elements are copied through registers
        dst[i] = inside ? *src : Element(0.0f);
      }
    }
  };
  // 16-bit ring refill, split so the global latency hides behind a plane's MMAs:
  // fetch_plane issues up to kStaged loads per thread into registers, store_plane writes
  // them (and copies any remainder directly) once the plane's compute is done.
  constexpr int kStaged = 8;
  Element staged[kStaged];
  auto fetch_plane = [&](int r) {
    const Element* src_plane = xb + int64_t(r) * p.xs_r;
    CUTE_UNROLL
    for (int j = 0; j < kStaged; ++j) {
      const int i = tid + j * Cfg::kThreads;
      if (i < elems) {
        const int64_t off = sSrc[i];
        staged[j] = off >= 0 ? src_plane[off] : Element(0.0f);
      }
    }
  };
  auto store_plane = [&](int r, int slot) {
    const Element* src_plane = xb + int64_t(r) * p.xs_r;
    Element* dst = sPlanes + slot * g.plane_stride;
    CUTE_UNROLL
    for (int j = 0; j < kStaged; ++j) {
      const int i = tid + j * Cfg::kThreads;
      if (i < elems) dst[i] = staged[j];
    }
    for (int i = tid + kStaged * Cfg::kThreads; i < elems; i += Cfg::kThreads) {
      const int64_t off = sSrc[i];
      dst[i] = off >= 0 ? src_plane[off] : Element(0.0f);
    }
  };
  constexpr bool kAsyncRing = sizeof(Element) == 4;

  // Prologue: start the first planes, then fill weights and k offsets while they fly.
  for (int s = 0; s < p.k_r + Cfg::kPrefetch - 1; ++s) {
    if (s < p.r_in) load_plane(s, s);
    cp_async_fence();
  }

  // Weights as per-lane B fragments: sW[((kr*k_blocks + kb)*n_tiles + nt)*32 + lane][v]
  // holds the value at (n, k) = BLayout(lane, v) of that n8 x BK tile; zero past C_out/K.
  {
    auto b_layout = typename Cfg::MmaTraits::BLayout{};  // (lane, v) -> n + 8*k
    auto split_k = [&](int k, int& c, int& kp, int& kq) {  // k -> (channel, kp, kq)
      int tap;
      g.by_kpq(c, tap, k);
      g.by_kq(kp, kq, tap);
    };
    const int total = p.k_r * g.k_blocks * g.n_tiles * 32 * kFragB;
    for (int e = tid; e < total; e += Cfg::kThreads) {
      const int v = e % kFragB;
      const int ln = (e / kFragB) % 32;
      int kr_kb, nt, kr, kb;
      g.by_n_tiles(kr_kb, nt, e / (kFragB * 32));
      g.by_k_blocks(kr, kb, kr_kb);
      const int idx = b_layout(ln, v);
      const int n = nt * 8 + idx % 8;
      const int k = kb * BK + idx / 8;
      Element val = Element(0.0f);
      if (n < p.c_out && k < g.k_plane) {
        int c, kp, kq;
        split_k(k, c, kp, kq);
        val = w[n * p.ws_n + c * p.ws_c + kr * p.ws_r + kp * p.ws_p + kq * p.ws_q];
      }
      sW[e] = val;
    }
    // k -> offset in a ring slot; padded k reads the all-zero channel C_in.
    for (int k = tid; k < g.k_plane_pad; k += Cfg::kThreads) {
      int c, kp, kq;
      split_k(k, c, kp, kq);
      sKoff[k] = int(sizeof(Element)) * (k < g.k_plane ? c * foot_pq + kp * kPitch + kq
                                                       : p.c_in * foot_pq);
    }
    for (int s = 0; s < g.slots; ++s) {
      for (int i = tid; i < foot_pq; i += Cfg::kThreads) {
        sPlanes[s * g.plane_stride + p.c_in * foot_pq + i] = Element(0.0f);
      }
    }
  }

  // ---- MMA partitioning ---------------------------------------------------------------
  TiledMMA tiled_mma = make_tiled_mma(MMA_Atom<typename Cfg::MmaOp>{},
                                      Layout<Shape<Int<Cfg::kWarpsM>, Int<Cfg::kWarpsN>, _1>>{});
  auto thr_mma = tiled_mma.get_slice(tid);
  Tensor cA = make_identity_tensor(Shape<Int<BM>, Int<BK>>{});  // (BM,BK) -> (m,k)
  Tensor cB = make_identity_tensor(Shape<Int<BN>, Int<BK>>{});  // (BN,BK) -> (n,k)
  Tensor cC = make_identity_tensor(Shape<Int<BM>, Int<BN>>{});  // (BM,BN) -> (m,n)
  Tensor tCcA = thr_mma.partition_A(cA);                        // (MMA,MMA_M,1)
  Tensor tCcB = thr_mma.partition_B(cB);                        // (MMA,MMA_N,1)
  Tensor tCcC = thr_mma.partition_C(cC);                        // (MMA,MMA_M,MMA_N)
  Tensor tCrA = make_tensor<ValA>(shape(tCcA));                 // (MMA,MMA_M,1)
  Tensor tCrAx = make_tensor<ValA>(shape(tCcA));                // (MMA,MMA_M,1) 3xTF32 cross
  Tensor tCrAs = make_tensor<ValA>(shape(tCcA));                // (MMA,MMA_M,1) 3xTF32 small
  Tensor tCrB = make_tensor<ValA>(shape(tCcB));                 // (MMA,MMA_N,1)
  Tensor tCrBx = make_tensor<ValA>(shape(tCcB));                // (MMA,MMA_N,1) 3xTF32 cross
  Tensor tCrBs = make_tensor<ValA>(shape(tCcB));                // (MMA,MMA_N,1) 3xTF32 small
  Tensor tCrC = make_tensor<float>(shape(tCcC));                // (MMA,MMA_M,MMA_N) accumulators
  Tensor tCrCs = make_tensor<float>(shape(tCcC));               // (MMA,MMA_M,MMA_N) 3xTF32 small terms
  Tensor tCrMin = make_tensor<float>(shape(tCcC));              // (MMA,MMA_M,MMA_N) running min
  Tensor tCrArg = make_tensor<int>(shape(tCcC));                // (MMA,MMA_M,MMA_N) its index
  static_assert(decltype(size<0>(tCcC))::value == 4,
                "C fragment: values {0,1} on row g, {2,3} on row g+8");
  static_assert(decltype(size<1>(tCcA))::value == kMT && decltype(size<1>(tCcB))::value == kNT);

  // A rows: position m -> footprint (m / kTileQ, m % kTileQ). Every row of this thread is
  // its first row m0 (m0 % 16 < 8) plus a static offset dm (a multiple of 8 that keeps
  // m0 % 16 + dm % 16 < 16), so only m0's offset lives in a register.
  const int m0 = get<0>(tCcA(0, 0, 0));
  const char* a_thread = reinterpret_cast<const char*>(sPlanes) +
                         sizeof(Element) * ((m0 / kTileQ) * kPitch + m0 % kTileQ);
  auto a_row_bytes = [&](int v, int mt) {  // static after unrolling
    const int dm = get<0>(tCcA(v, mt, 0)) - m0;
    return int(sizeof(Element)) * ((dm / kTileQ) * kPitch + dm % kTileQ);
  };
  // B tiles: this thread's first n8 tile plus static steps; fragment-ordered offsets.
  const int n0 = get<0>(tCcB(0, 0, 0));
  const int b_thread = ((n0 / 8) * 32 + lane) * kFragB;
  int n_tile_of[kNT];
  CUTE_UNROLL
  for (int nt = 0; nt < kNT; ++nt) n_tile_of[nt] = n0 / 8 + (get<0>(tCcB(0, nt, 0)) - n0) / 8;
  // The bias of this thread's accumulator columns (value j of each n8 tile: column 2t+j).
  float bias_of[kNT][2];
  CUTE_UNROLL
  for (int nt = 0; nt < kNT; ++nt) {
    CUTE_UNROLL
    for (int j = 0; j < 2; ++j) {
      const int n = get<1>(tCcC(j, 0, nt));
      bias_of[nt][j] = (bias != nullptr && n < p.c_out) ? float(bias[n * p.bs_n]) : 0.0f;
    }
  }
  const int b_kstep = g.n_tiles * 32 * kFragB;  // B elements per k-step

  const bool track_argmin = p.argmin != nullptr;
  fill(tCrMin, INFINITY);
  fill(tCrArg, 0);

  // Plane i sits in ring slot i % g.slots: slot_r is plane r's, kept by increments.
  for (int r = 0, slot_r = 0; r < p.r_out; ++r, slot_r = slot_r + 1 == g.slots ? 0 : slot_r + 1) {
    const int next = r + p.k_r + Cfg::kPrefetch - 1;  // lands in the slot of plane r-1
    const int slot_next = slot_r == 0 ? g.slots - 1 : slot_r - 1;
    if constexpr (kAsyncRing) {
      if (next < p.r_in) load_plane(next, slot_next);
      cp_async_fence();
      cp_async_wait<Cfg::kPrefetch>();
    } else {
      if (next < p.r_in) fetch_plane(next);
    }
    __syncthreads();

    // 3xTF32 starts from zero and adds the bias in the fold: the MMA truncates its fp32
    // sum, so the accumulator's error grows with its size and with the MMAs into it, and
    // only the "highest" bound (1e-5) feels that. Other modes start from the bias.
    if constexpr (Cfg::kSplit3x) {
      fill(tCrC, 0.0f);
      fill(tCrCs, 0.0f);
    } else {
      CUTE_UNROLL
      for (int mt = 0; mt < kMT; ++mt)
        CUTE_UNROLL
        for (int nt = 0; nt < kNT; ++nt)
          CUTE_UNROLL
          for (int j = 0; j < 4; ++j) tCrC(j, mt, nt) = bias_of[nt][j % 2];
    }

    for (int kr = 0; kr < p.k_r; ++kr) {
      const int slot = slot_r + kr < g.slots ? slot_r + kr : slot_r + kr - g.slots;
      const char* sA = a_thread + sizeof(Element) * slot * g.plane_stride;
      const Element* sWk = sW + kr * g.k_blocks * b_kstep;
      for (int kb = 0; kb < g.k_blocks; ++kb, sWk += b_kstep) {
        // A: gather this thread's (m, k) values of the BM x BK block.
        CUTE_UNROLL
        for (int v = 0; v < size<0>(tCrA); ++v) {
          const char* sAk = sA + sKoff[kb * BK + get<1>(tCcA(v, 0, 0))];
          CUTE_UNROLL
          for (int mt = 0; mt < kMT; ++mt) {
            const Element a = *reinterpret_cast<const Element*>(sAk + a_row_bytes(v, mt));
            if constexpr (Cfg::kSplit3x) {
              split_tf32(a, tCrA(v, mt, 0), tCrAx(v, mt, 0), tCrAs(v, mt, 0));
            } else {
              tCrA(v, mt, 0) = to_mma<ValA>(a);
            }
          }
        }
        // B: one vector load per n8 tile from the fragment-ordered weights.
        CUTE_UNROLL
        for (int nt = 0; nt < kNT; ++nt) {
          if (n_tile_of[nt] < g.n_tiles) {
            const Element* src = sWk + b_thread + (n_tile_of[nt] - n0 / 8) * 32 * kFragB;
            Element vals[kFragB];
            if constexpr (kFragB * sizeof(Element) == 8) {
              *reinterpret_cast<uint2*>(vals) = *reinterpret_cast<const uint2*>(src);
            } else {
              CUTE_UNROLL
              for (int v = 0; v < kFragB; ++v) vals[v] = src[v];
            }
            CUTE_UNROLL
            for (int v = 0; v < kFragB; ++v) {
              if constexpr (Cfg::kSplit3x) {
                split_tf32(vals[v], tCrB(v, nt, 0), tCrBx(v, nt, 0), tCrBs(v, nt, 0));
              } else {
                tCrB(v, nt, 0) = to_mma<ValA>(vals[v]);
              }
            }
          }
        }
        CUTE_UNROLL
        for (int nt = 0; nt < kNT; ++nt) {
          if (n_tile_of[nt] < g.n_tiles) {
            CUTE_UNROLL
            for (int mt = 0; mt < kMT; ++mt) {
              auto acc = tCrC(_, mt, nt);
              if constexpr (Cfg::kSplit3x) {  // ~2^-11 of big*big: own accumulator, so
                auto acc_s = tCrCs(_, mt, nt);  // big*big takes one MMA per k-step, not three
                gemm(tiled_mma, acc_s, tCrAs(_, mt, 0), tCrBx(_, nt, 0), acc_s);
                gemm(tiled_mma, acc_s, tCrAx(_, mt, 0), tCrBs(_, nt, 0), acc_s);
              }  // small*small dropped
              gemm(tiled_mma, acc, tCrA(_, mt, 0), tCrB(_, nt, 0), acc);
            }
          }
        }
      }
    }

    // Fold plane r into the running min: first NaN wins, else first strict minimum.
    CUTE_UNROLL
    for (int nt = 0; nt < kNT; ++nt) {
      CUTE_UNROLL
      for (int mt = 0; mt < kMT; ++mt) {
        CUTE_UNROLL
        for (int j = 0; j < 4; ++j) {
          float v = tCrC(j, mt, nt);
          if constexpr (Cfg::kSplit3x) v = (v + tCrCs(j, mt, nt)) + bias_of[nt][j % 2];
          const float m = tCrMin(j, mt, nt);
          const bool take = min_takes(v, m);
          tCrMin(j, mt, nt) = take ? v : m;
          if (track_argmin) tCrArg(j, mt, nt) = take ? r : tCrArg(j, mt, nt);
        }
      }
    }
    if constexpr (!kAsyncRing) {  // plane `next` is first read kPrefetch iterations later
      if (next < p.r_in) store_plane(next, slot_next);
    }
    __syncthreads();  // the slot of plane r is refilled in the next iteration
  }
  cp_async_wait<0>();

  // ---- epilogue: softmax over channels of each position -------------------------------
  // A row's channels: 2 values x MMA_N tiles in each of the 4 lanes of a quad, and
  // kWarpsN warps side by side (exchanged through sRed).
  const int warp_n = (get<1>(tCcC(0, 0, 0)) / 8) % Cfg::kWarpsN;  // n = warp_n*8 + 2*(lane%4)
  auto row_reduce = [&](float (&vals)[kMT][2], bool is_max) {
    CUTE_UNROLL
    for (int mt = 0; mt < kMT; ++mt) {
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        float v = vals[mt][h];
        for (int off = 1; off <= 2; off <<= 1) {
          const float o = __shfl_xor_sync(0xffffffffu, v, off);
          v = is_max ? nan_max(v, o) : v + o;
        }
        vals[mt][h] = v;
      }
    }
    if constexpr (Cfg::kWarpsN > 1) {
      __syncthreads();
      if (lane % 4 == 0) {
        CUTE_UNROLL
        for (int mt = 0; mt < kMT; ++mt)
          CUTE_UNROLL
          for (int h = 0; h < 2; ++h)
            sRed[warp_n * BM + get<0>(tCcC(2 * h, mt, 0))] = vals[mt][h];
      }
      __syncthreads();
      CUTE_UNROLL
      for (int mt = 0; mt < kMT; ++mt) {
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int m = get<0>(tCcC(2 * h, mt, 0));
          float v = sRed[m];
          for (int wn = 1; wn < Cfg::kWarpsN; ++wn)
            v = is_max ? nan_max(v, sRed[wn * BM + m]) : v + sRed[wn * BM + m];
          vals[mt][h] = v;
        }
      }
    }
  };

  float row_max[kMT][2], row_sum[kMT][2];
  CUTE_UNROLL
  for (int mt = 0; mt < kMT; ++mt) {
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      float v = -INFINITY;
      CUTE_UNROLL
      for (int nt = 0; nt < kNT; ++nt)
        CUTE_UNROLL
        for (int j = 0; j < 2; ++j)
          if (get<1>(tCcC(2 * h + j, mt, nt)) < p.c_out) v = nan_max(v, tCrMin(2 * h + j, mt, nt));
      row_max[mt][h] = v;
    }
  }
  row_reduce(row_max, true);
  CUTE_UNROLL
  for (int mt = 0; mt < kMT; ++mt) {
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      float s = 0.0f;
      CUTE_UNROLL
      for (int nt = 0; nt < kNT; ++nt)
        CUTE_UNROLL
        for (int j = 0; j < 2; ++j) {
          const int i = 2 * h + j;
          const float e = expf(tCrMin(i, mt, nt) - row_max[mt][h]);
          tCrMin(i, mt, nt) = e;
          if (get<1>(tCcC(i, mt, nt)) < p.c_out) s += e;
        }
      row_sum[mt][h] = s;
    }
  }
  row_reduce(row_sum, false);

  Element* y = static_cast<Element*>(p.y);
  const int64_t plane_out = int64_t(p.p_out) * p.q_out;
  CUTE_UNROLL
  for (int mt = 0; mt < kMT; ++mt) {
    CUTE_UNROLL
    for (int nt = 0; nt < kNT; ++nt) {
      CUTE_UNROLL
      for (int v = 0; v < 4; ++v) {
        const int m = get<0>(tCcC(v, mt, nt)), n = get<1>(tCcC(v, mt, nt));
        const int pp = p0 + m / kTileQ, qq = q0 + m % kTileQ;
        if (n < p.c_out && pp < p.p_out && qq < p.q_out) {
          const int64_t off = (int64_t(b) * p.c_out + n) * plane_out + int64_t(pp) * p.q_out + qq;
          y[off] = Element(tCrMin(v, mt, nt) / row_sum[mt][v / 2]);
          if (track_argmin) p.argmin[off] = tCrArg(v, mt, nt);
        }
      }
    }
  }
}

}  // namespace fusedconv::fused
