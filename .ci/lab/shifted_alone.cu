// Lab (device experiment, not shipped): times the package's shifted-plane kernel
// (cpp/cuda/hopper/shifted_kernel.cuh) alone, launched as shifted_launch.cu does, on the C_in =
// 16 problem B C_out D H (W = 64, k = 3, contiguous), CUDA events, median of 7 x 20 launches over
// ~200 MB of rotating inputs; `check` compares batch indices 0 and B - 1 with float64 on the
// operand values. Session 34 (v51) timed variants of the kernel with it by pointing
// KERNEL_HEADER at edited copies of the header (BENCHMARKS.md, v51).
// Build (here or on the device; -DH_BF16DATA=1: bf16 data, -DH_TF32=1: TF32, default autocast):
//   nvcc -std=c++20 -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -gencode=arch=compute_90a,code=sm_90a \
//     --expt-relaxed-constexpr -O3 -Xptxas=-v -I cpp -I <cutlass include> \
//     -DKERNEL_HEADER='"cuda/hopper/shifted_kernel.cuh"' -DH_NAME='"a"' .ci/lab/shifted_alone.cu -o a
// Run: ./a B C_out D H [check]
// -DH_STAMPS=1 with the headers of stamps_patch.py (-I <its dir> ahead of -I cpp): step times too.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#ifndef H_TF32
#define H_TF32 0
#endif
#ifndef H_BF16DATA
#define H_BF16DATA 0
#endif
#ifndef H_STAMPS
#define H_STAMPS 0
#endif
#include KERNEL_HEADER

#include "lab_timing.h"
using namespace fusedconv::fused;
using namespace fusedconv::fused::hopper;
#if H_BF16DATA
using Element = cutlass::bfloat16_t;
using Op = cutlass::bfloat16_t;
#elif H_TF32
using Element = float;
using Op = cutlass::tfloat32_t;
#else
using Element = float;
using Op = cutlass::bfloat16_t;
#endif
template <class T> double rounded(T v) { if constexpr (H_TF32) return double(float(v)); else return double(float(cutlass::bfloat16_t(float(v)))); }
using Cfg = ShiftedConfig<Element, Op, 64>;
template <class C> constexpr int cluster_ctas() {
  if constexpr (requires { C::kClusterCtas; }) return C::kClusterCtas; else return 1;
}
int main(int argc, char** argv) {
  const int B = atoi(argv[1]), C_out = atoi(argv[2]), D = atoi(argv[3]), H = atoi(argv[4]);
  const bool check = argc > 5 && std::string(argv[5]) == "check";
  const int W = 64, Ci = 16, Ho = H - 2, Wo = W - 2, Do = D - 2;
  const size_t nx = size_t(B) * Ci * D * H * W, nw = size_t(C_out) * Ci * 27, ny = size_t(B) * C_out * Ho * Wo;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd;
  std::vector<Element> hx(nx), hw(nw), hb(C_out);
  for (auto& v : hx) v = Element(nd(gen));
  for (auto& v : hw) v = Element(nd(gen) / std::sqrt(float(Ci * 27)));
  for (auto& v : hb) v = Element(nd(gen));
  const int copies = check ? 1 : std::max(1, int(200e6 / (nx * sizeof(Element))));
  Element *dx, *dw, *db, *dy;
  CK(cudaMalloc(&dx, nx * sizeof(Element) * copies)); CK(cudaMalloc(&dw, nw * sizeof(Element)));
  CK(cudaMalloc(&db, C_out * sizeof(Element))); CK(cudaMalloc(&dy, ny * sizeof(Element)));
  for (int c = 0; c < copies; ++c) CK(cudaMemcpy(dx + c * nx, hx.data(), nx * sizeof(Element), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dw, hw.data(), nw * sizeof(Element), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, hb.data(), C_out * sizeof(Element), cudaMemcpyHostToDevice));
  Params p{};
  p.x = dx; p.weight = dw; p.bias = db; p.y = dy; p.argmin = nullptr;
  p.batch = B; p.c_in = Ci; p.c_out = C_out; p.r_in = D; p.p_in = H; p.q_in = W;
  p.k_r = p.k_p = p.k_q = 3; p.r_out = Do; p.p_out = Ho; p.q_out = Wo;
  p.xs_q = 1; p.xs_p = W; p.xs_r = int64_t(H) * W; p.xs_c = p.xs_r * D; p.xs_b = p.xs_c * Ci;
  p.ws_q = 1; p.ws_p = 3; p.ws_r = 9; p.ws_c = 27; p.ws_n = 27 * Ci; p.bs_n = 1;
  const int pairs = (Ho + 1) / 2;
  ShiftedGeometry g{pairs, B * pairs};
  auto kernel = shifted_conv_min_softmax_kernel<Cfg>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes));
  cudaFuncAttributes attr; CK(cudaFuncGetAttributes(&attr, kernel));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int grid = std::min(sms, (g.items + 1) / 2), cluster = 1, clusters = 0;
  if constexpr (cluster_ctas<Cfg>() > 1) {  // whole clusters (v53), at most one wave of them
    cluster = cluster_ctas<Cfg>();
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(sms); config.blockDim = dim3(Cfg::kThreads); config.dynamicSmemBytes = Cfg::kSmemBytes;
    CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    grid = std::min((grid + cluster - 1) / cluster, clusters) * cluster;
  }
  auto launch = [&](int c) { p.x = dx + size_t(c % copies) * nx; kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes>>>(p, g); };
  launch(0); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  const double us = median_launch_us(launch);
  printf("%s B=%d C_out=%d D=%d H=%d: %.1f us  regs %d spill %zu  grid %d items %d  cluster %d (%d resident)\n", H_NAME,
         B, C_out, D, H, us, attr.numRegs, attr.localSizeBytes, grid, g.items, cluster, clusters);
#if H_STAMPS  // headers from stamps_patch.py: per step, over the CTAs of the last of 3 back-to-back launches
  for (int c = 1; c <= 3; ++c) launch(c);
  CK(cudaDeviceSynchronize());
  static unsigned long long ns[2048][LAB_STAMPS], clk[2048][LAB_STAMPS];
  CK(cudaMemcpyFromSymbol(ns, lab_stamp_ns, sizeof(ns)));
  CK(cudaMemcpyFromSymbol(clk, lab_stamp_clk, sizeof(clk)));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < grid; ++b) t0 = std::min(t0, ns[b][0]);
  printf("stamp: us after the first CTA's start (min / median / max over %d CTAs), cycles after the CTA's own start (median)\n", grid);
  for (int i = 0; i < LAB_STAMPS; ++i) {
    std::vector<double> at, cy;
    for (int b = 0; b < grid; ++b) {
      at.push_back((ns[b][i] - t0) * 1e-3);
      cy.push_back(double(clk[b][i] - clk[b][0]));
    }
    std::sort(at.begin(), at.end()); std::sort(cy.begin(), cy.end());
    printf("  %d: %8.2f %8.2f %8.2f us  %9.0f cycles\n", i, at[0], at[at.size() / 2], at.back(), cy[cy.size() / 2]);
  }
#endif
  if (check) {
    launch(0); CK(cudaDeviceSynchronize());
    std::vector<Element> hy(ny);
    CK(cudaMemcpy(hy.data(), dy, ny * sizeof(Element), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int b : {0, B - 1}) {
      std::vector<double> mn(size_t(C_out) * Ho * Wo, INFINITY), conv(size_t(Ho) * Wo);
      for (int co = 0; co < C_out; ++co)
        for (int d = 0; d < Do; ++d) {
          std::fill(conv.begin(), conv.end(), 0.0);
          for (int ci = 0; ci < Ci; ++ci)
            for (int t = 0; t < 27; ++t) {
              const double wv = rounded(hw[(co * Ci + ci) * 27 + t]);
              const int kd = t / 9, kh = t / 3 % 3, kw = t % 3;
              const Element* xp = &hx[((size_t(b) * Ci + ci) * D + d + kd) * H * W + size_t(kh) * W + kw];
              for (int h = 0; h < Ho; ++h)
                for (int q = 0; q < Wo; ++q) conv[h * Wo + q] += wv * rounded(xp[h * W + q]);
            }
          for (int i = 0; i < Ho * Wo; ++i) mn[size_t(co) * Ho * Wo + i] = std::min(mn[size_t(co) * Ho * Wo + i], conv[i]);
        }
      double err = 0;
      for (int i = 0; i < Ho * Wo; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int co = 0; co < C_out; ++co) mx = std::max(mx, mn[size_t(co) * Ho * Wo + i] + float(hb[co]));
        for (int co = 0; co < C_out; ++co) sum += std::exp(mn[size_t(co) * Ho * Wo + i] + float(hb[co]) - mx);
        for (int co = 0; co < C_out; ++co) {
          const double r = std::exp(mn[size_t(co) * Ho * Wo + i] + float(hb[co]) - mx) / sum;
          const double gv = float(hy[size_t(b) * C_out * Ho * Wo + size_t(co) * Ho * Wo + i]);
          err = std::max(err, std::isnan(gv) ? INFINITY : std::abs(gv - r));
        }
      }
      worst = std::max(worst, err);
    }
    printf("%s check B=%d C_out=%d D=%d H=%d: max abs err %.3g %s\n", H_NAME, B, C_out, D, H, worst, worst < 1e-2 ? "OK" : "FAIL");
  }
  return 0;
}
