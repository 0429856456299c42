// Lab probe (not shipped): a gather-free plane loop for the reference shape (C_in <= 3,
// k = 3 x 3 x 3, TF32), to test a design before building it into the kernel.
// - A CTA owns a strip of 64 consecutive positions of the "wide" output grid (row pitch = the
//   input width W; positions with q >= Q_out are computed and dropped), so the im2col row of
//   position m for tap (kp, kq) is input pixel m + kp * W + kq: one contiguous slab of the
//   plane, 64 + 2 W + 2 pixels, stored pixel-major with 4 channels (16 B) per pixel.
// - A wgmma SS descriptor then reads A straight from the slab: a core matrix is 8 pixels, the
//   M stride 128 B, and the two K core matrices of a k-step are two taps (LBO = the taps'
//   distance; the padded tenth tap points at a zero block). No gather, no A registers.
// - N = k_r x C_out = 72: one m64n72k8 per k-step serves all three output planes a plane
//   feeds (5 per plane instead of 12 m64n24k8); partial sums of two output planes ride in
//   registers (24 FADD per plane).
// Output: the min over depth of the conv (no bias, no softmax), (B, 24, P_out, Q_out).
// Build: nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -O3
//        -Xptxas=-v -I <cutlass include> .ci/lab/strip_probe.cu -o strip
// Run:   ./strip B [check]     (D = 24, H = W = 32, C_in = 3, C_out = 24; check: float64 on the host)
// Macros: PROBE_MINB (CTAs per SM), PROBE_ONEACC, PROBE_SLOTS (ring slots, kSlots - 2 planes
// in flight), PROBE_NOFENCE / NOLOAD / NOSYNC (ablations). Results: BENCHMARKS.md, "Session 9
// lab" (about the landed kernel's time without the softmax: not pursued).
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/arch/mma_sm90_gmma_ext.hpp>
#include <cutlass/arch/barrier.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

#ifndef PROBE_MINB
#define PROBE_MINB 3  // CTAs per SM the registers must allow
#endif
// Ablations (wrong results, time only): no fence.proxy.async, no plane loads, no barrier.
#ifndef PROBE_NOFENCE
#define PROBE_NOFENCE 0
#endif
#ifndef PROBE_NOLOAD
#define PROBE_NOLOAD 0
#endif
#ifndef PROBE_NOSYNC
#define PROBE_NOSYNC 0
#endif
#ifndef PROBE_ONEACC
#define PROBE_ONEACC 0  // one accumulator instead of two (the fold does not overlap the wgmmas)
#endif

constexpr int kC = 3, kCout = 24, kD = 24, kH = 32, kW = 32, kK = 3;
constexpr int kRout = kD - kK + 1, kPout = kH - kK + 1, kQout = kW - kK + 1;
constexpr int kStrips = (kPout * kW + 63) / 64;           // strips per batch index
constexpr int kPix = 64 + (kK - 1) * kW + (kK - 1);       // slab pixels per plane
constexpr int kSlotPix = (kPix + 7) / 8 * 8;
#ifndef PROBE_SLOTS
#define PROBE_SLOTS 4
#endif
constexpr int kSlots = PROBE_SLOTS, kPrefetch = kSlots - 2;  // planes in flight
constexpr int kSteps = 5;                                  // k-steps: taps 2s, 2s + 1
constexpr int kN = 72;
constexpr int kBStepBytes = (kN / 8) * 2 * 128;            // one k-step's B core matrices
// shared memory: [B: kSteps x kBStepBytes][slots x kSlotPix x 16 B][zero block 64 x 16 B]
constexpr int kOffSlots = kSteps * kBStepBytes;
constexpr int kOffZero = kOffSlots + kSlots * kSlotPix * 16;
constexpr int kSmem = kOffZero + 64 * 16;
constexpr int kElems = kPix * kC;                          // copied floats per plane
constexpr int kOwn = (kElems + 127) / 128;

__device__ __forceinline__ uint64_t desc(uint32_t start, uint32_t lbo, uint32_t sbo) {
  return uint64_t((start >> 4) & 0x3FFF) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32);  // layout type 0: no swizzle
}

template <size_t... I>
__device__ __forceinline__ void mma72(uint64_t da, uint64_t db, float (&d)[36], cute::SM90::GMMA::ScaleOut s,
                                      std::index_sequence<I...>) {
  cute::SM90::GMMA::MMA_64x72x8_F32TF32TF32_SS_TN<>::fma(da, db, d[I]..., s);
}

__device__ __forceinline__ float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__global__ void __launch_bounds__(128, PROBE_MINB)
    strip_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y) {
  using namespace cute;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int b = blockIdx.x / kStrips, m0 = (blockIdx.x % kStrips) * 64;
  float* fs = reinterpret_cast<float*>(smem);
  // B: element (n, k) of k-step s at s * kBStepBytes + (n / 8) * 256 + (k / 4) * 128 + (n % 8) * 16 + (k % 4) * 4
  for (int e = tid; e < kSteps * kN * 8; e += 128) {
    const int s = e / (kN * 8), n = (e / 8) % kN, kk = e % 8;
    const int tap = 2 * s + kk / 4, c = kk % 4, kr = n / kCout, co = n % kCout;
    const float v = (tap < 9 && c < kC) ? w[(((co * kC + c) * kK + kr) * kK + tap / 3) * kK + tap % 3] : 0.0f;
    fs[(s * kBStepBytes + (n / 8) * 256 + (kk / 4) * 128 + (n % 8) * 16 + (kk % 4) * 4) / 4] = v;
  }
  for (int e = tid; e < (kSlots * kSlotPix + 64) * 4; e += 128) fs[kOffSlots / 4 + e] = 0.0f;
  // this thread's copies: element e = tid + 128 j -> pixel e / 3, channel e % 3
  const float* xb = x + size_t(b) * kC * kD * kH * kW;
  int src[kOwn], dst[kOwn];
  uint32_t inside = 0;
  #pragma unroll
  for (int j = 0; j < kOwn; ++j) {
    const int e = tid + 128 * j, pix = e / kC, c = e % kC;
    const bool in = e < kElems && m0 + pix < kH * kW;
    src[j] = in ? c * kD * kH * kW + m0 + pix : 0;
    dst[j] = e < kElems ? kOffSlots + pix * 16 + c * 4 : kOffZero;  // past the slab: the zero block, zero-filled
    inside |= uint32_t(in) << j;
  }
  __syncthreads();
  auto load = [&](const float* xp, int slot) __attribute__((always_inline)) {
    #pragma unroll
    for (int j = 0; j < kOwn; ++j)
      if (tid + 128 * j < kElems)
      cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>::copy(
          *reinterpret_cast<const uint32_t*>(xp + src[j]),
          *reinterpret_cast<uint32_t*>(smem + dst[j] + (dst[j] < kOffZero ? slot * kSlotPix * 16 : 0)),
          (inside >> j) & 1u);
  };
  for (int s = 0; s < kPrefetch; ++s) { load(xb + size_t(s) * kH * kW, s); cute::cp_async_fence(); }
  cutlass::arch::fence_view_async_shared();

  const uint32_t base = cute::cast_smem_ptr_to_uint(smem);
  auto tap_off = [](int t) __attribute__((always_inline)) { return ((t / 3) * kW + t % 3) * 16; };
  float acc[2][36];
  float q1[12], q2[12], mn[12];
  #pragma unroll
  for (int v = 0; v < 12; ++v) mn[v] = INFINITY, q1[v] = 0.0f, q2[v] = 0.0f;

  auto consume = [&](float (&z)[36], int plane) __attribute__((always_inline)) {  // plane's products are complete in z
    #pragma unroll
    for (int v = 0; v < 36; ++v) warpgroup_fence_operand(z[v]);
    if (plane >= 2) {
      #pragma unroll
      for (int v = 0; v < 12; ++v) mn[v] = min_nan(mn[v], q2[v] + z[24 + v]);
    }
    #pragma unroll
    for (int v = 0; v < 12; ++v) { q2[v] = q1[v] + z[12 + v]; q1[v] = z[v]; }
    // Pin these reads of z here, before the next wgmma overwrites z: otherwise ptxas sinks
    // them past it, keeps z in a second register block and serializes the wgmmas (C7511).
    #pragma unroll
    for (int v = 0; v < 12; ++v) {
      warpgroup_fence_operand(q1[v]);
      warpgroup_fence_operand(q2[v]);
      warpgroup_fence_operand(mn[v]);
    }
  };

  // Periods of kSlots planes (ring slot and accumulator static); every wgmma retires by a
  // period's end, so that none is in flight across the loop's back edge.
  static_assert(kD % kSlots == 0 && kSlots % 2 == 0);
  const float* x_next = xb + size_t(kPrefetch) * kH * kW;  // the next plane to load
#pragma unroll 1
  for (int i0 = 0; i0 < kD; i0 += kSlots) {
    [&]<int... U>(std::integer_sequence<int, U...>) __attribute__((always_inline)) {
      ([&]() __attribute__((always_inline)) {
        constexpr int u = U;
        const int i = i0 + u;
        if (!PROBE_NOLOAD && i + kPrefetch < kD) load(x_next, (u + kPrefetch) % kSlots);
        x_next += kH * kW;
        cute::cp_async_fence();
        cute::cp_async_wait<kPrefetch>();  // plane i landed
        if (!PROBE_NOFENCE) cutlass::arch::fence_view_async_shared();  // cp.async writes -> wgmma reads
        if (!PROBE_NOSYNC) __syncthreads();
        float (&a)[36] = acc[PROBE_ONEACC ? 0 : u % 2];
        #pragma unroll
        for (int v = 0; v < 36; ++v) warpgroup_fence_operand(a[v]);
        warpgroup_arrive();
        uint32_t base_u;  // opaque per step: keeps ptxas from hoisting 25 descriptors into registers
        asm volatile("mov.u32 %0, %1;" : "=r"(base_u) : "r"(base));
        const uint32_t slot = base_u + kOffSlots + u * kSlotPix * 16;
        #pragma unroll
        for (int s = 0; s < kSteps; ++s) {
          const uint32_t a0 = slot + tap_off(2 * s);
          const uint32_t a1 = 2 * s + 1 < 9 ? slot + tap_off(2 * s + 1) : base_u + kOffZero;
          mma72(desc(a0, a1 - a0, 128), desc(base_u + s * kBStepBytes, 128, 256), a,
                s == 0 ? cute::SM90::GMMA::ScaleOut::Zero : cute::SM90::GMMA::ScaleOut::One,
                std::make_index_sequence<36>{});
        }
        warpgroup_commit_batch();
        #pragma unroll
        for (int v = 0; v < 36; ++v) warpgroup_fence_operand(a[v]);
        if constexpr (PROBE_ONEACC) {  // one accumulator: its plane folds before the next issue
          warpgroup_wait<0>();
          consume(acc[0], i);
        } else {
          if constexpr (u == kSlots - 1) warpgroup_wait<0>();
          else warpgroup_wait<1>();
          if (i > 0) consume(acc[(u + 1) % 2], i - 1);
        }
      }(), ...);
    }(std::make_integer_sequence<int, kSlots>{});
  }
  if (!PROBE_ONEACC) consume(acc[(kD - 1) % 2], kD - 1);  // (retired at the period's end)

  // d[4j + e]: row 16 warp + lane / 4 (+8 for e >= 2), column 8j + 2 (lane % 4) + e % 2
  const int lane = tid % 32, warp = tid / 32;
  #pragma unroll
  for (int v = 0; v < 12; ++v) {
    const int j = v / 4, e = v % 4;
    const int m = m0 + 16 * warp + lane / 4 + (e >= 2 ? 8 : 0);
    const int co = 8 * j + 2 * (lane % 4) + e % 2;
    const int p = m / kW, q = m % kW;
    if (p < kPout && q < kQout) y[((size_t(b) * kCout + co) * kPout + p) * kQout + q] = mn[v];
  }
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s line %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

int main(int argc, char** argv) {
  const int B = argc > 1 ? atoi(argv[1]) : 128;
  const bool check = argc > 2;
  const size_t nx = size_t(B) * kC * kD * kH * kW, nw = size_t(kCout) * kC * 27, ny = size_t(B) * kCout * kPout * kQout;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd;
  std::vector<float> hx(nx), hw(nw);
  for (auto& v : hx) v = nd(gen);
  for (auto& v : hw) v = nd(gen) / 9.0f;
  const int rot = check ? 1 : std::max(1, int(200e6 / (nx * 4)));
  std::vector<float*> dx(rot);
  for (auto& p : dx) { CK(cudaMalloc(&p, nx * 4)); CK(cudaMemcpy(p, hx.data(), nx * 4, cudaMemcpyHostToDevice)); }
  float *dw, *dy;
  CK(cudaMalloc(&dw, nw * 4)); CK(cudaMalloc(&dy, ny * 4));
  CK(cudaMemcpy(dw, hw.data(), nw * 4, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(strip_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, strip_kernel));
  const int grid = B * kStrips;
  for (int i = 0; i < 20; ++i) strip_kernel<<<grid, 128, kSmem>>>(dx[i % rot], dw, dy);
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int r = 0; r < 7; ++r) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 40; ++i) strip_kernel<<<grid, 128, kSmem>>>(dx[i % rot], dw, dy);
    CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); ts.push_back(ms * 1000 / 40);
  }
  std::sort(ts.begin(), ts.end());
  double err = -1;
  if (check) {
    strip_kernel<<<grid, 128, kSmem>>>(dx[0], dw, dy);
    std::vector<float> hy(ny);
    CK(cudaMemcpy(hy.data(), dy, ny * 4, cudaMemcpyDeviceToHost));
    double worst = 0, scale = 0;
    for (int bb = 0; bb < B; ++bb)
      for (int co = 0; co < kCout; ++co)
        for (int p = 0; p < kPout; ++p)
          for (int q = 0; q < kQout; ++q) {
            double m = INFINITY;
            for (int d = 0; d < kRout; ++d) {
              double s = 0;
              for (int c = 0; c < kC; ++c)
                for (int kr = 0; kr < kK; ++kr)
                  for (int kp = 0; kp < kK; ++kp)
                    for (int kq = 0; kq < kK; ++kq)
                      s += double(hw[(((co * kC + c) * kK + kr) * kK + kp) * kK + kq]) *
                           hx[((((size_t(bb) * kC + c) * kD + d + kr) * kH + p + kp) * kW) + q + kq];
              m = std::min(m, s);
            }
            const double got = hy[((size_t(bb) * kCout + co) * kPout + p) * kQout + q];
            worst = std::max(worst, std::abs(got - m));
            scale = std::max(scale, std::abs(m));
          }
    err = worst / scale;
  }
  printf("STRIP minb %d B %d regs %d spill %d smem %d grid %d median %.2f us min %.2f err %.2e\n", PROBE_MINB, B,
         fa.numRegs, int(fa.localSizeBytes), kSmem, grid, ts[ts.size() / 2], ts[0], err);
  return 0;
}
