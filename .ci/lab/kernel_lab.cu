// Standalone timing of one float32 wgmma kernel configuration (device experiments, not
// shipped; .ci/lab/run.sh builds and runs it). Configuration by macros: LAB_N, LAB_KR,
// LAB_ONE (K in one chunk), LAB_CHUNK (k-steps per chunk otherwise), LAB_RETIRE, LAB_3X, LAB_BF16,
// LAB_F32BF16 (float32 data, bfloat16 wgmma), LAB_NOARG (no argmin: kArgmin_ = false), LAB_WG
// (warpgroups per CTA: kWarpgroups_), LAB_DYN=0 (persistent CTAs take fixed shares of the items);
// LAB_MMASYNC=1: the sm_80 mma.sync kernel instead (fused_kernel.cuh; TF32, LAB_3X or LAB_BF16;
// LAB_N <= 32 its small configuration, else its large one);
// ablations by ablate.py's LAB_* switches.
// Run: ./lab B C_in C_out D H W k_r k_p k_q [check|rand [seed]]   (dim 2, contiguous)
// Environment: LAB_RESIDENT (SMs the R split may fill), LAB_SMEM (pad shared memory),
// LAB_NOPAIRS (16-bit: the register-staged ring instead of cp.async by pairs).
// -DLAB_TMA=1: the kernel that loads planes by TMA (only for inputs that fit it).
// -DLAB_TIMELINE=1: one extra launch records each CTA's start, end and SM (a persistent CTA's
// end: its last item's), and the lab prints the span, the CTA durations and how many CTAs
// each SM held over time.
// -DLAB_ITEMS=1: one extra launch records each CTA's prologue and its items' plane loop, epilogue
// and the gap to the next item (SM clock), and the lab prints their medians.
// -DLAB_STEPS=1: one extra launch records the SM clock at five points of each one-chunk plane
// step (issue-first or retiring) in the first CTAs, and the lab prints each phase's length.
// Inputs as the tests draw them (conftest.make_inputs): x and bias randn, weight randn /
// sqrt(fan_in); "rand" draws uniform [0, 1) instead. "check" and "rand" compare batch indices
// 0 and B - 1 with a float64 reference on the host: err = max abs error / max |reference|
// (the tests' rel_err), elerr = max relative error per element (denominators floored at 1e-3), and
// err32 = the tests' metric of the same reference summed in float32 (the noise of fp32).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>

#ifndef LAB_MMASYNC
#define LAB_MMASYNC 0
#endif
#ifndef LAB_DYN
#define LAB_DYN 1  // persistent grids claim their items from a counter (Params::item_counter); 0: fixed shares
#endif
#if LAB_MMASYNC
#include "cuda/fused_launch.cuh"
#else
#include "cuda/hopper/wgmma_launch.cuh"
using namespace fusedconv::fused::hopper;
#endif

using namespace fusedconv::fused;

#ifndef LAB_N
#define LAB_N 24
#endif
#ifndef LAB_KR
#define LAB_KR 3
#endif
#ifndef LAB_ONE
#define LAB_ONE 1
#endif
#ifndef LAB_3X
#define LAB_3X 0
#endif
#ifndef LAB_BF16
#define LAB_BF16 0
#endif
#ifndef LAB_F32BF16
#define LAB_F32BF16 0
#endif
#ifndef LAB_CHUNK
#define LAB_CHUNK 0  // k-steps per chunk of K in chunks (0: the config's default)
#endif
#ifndef LAB_RETIRE
#define LAB_RETIRE 0  // kRetire_ (TF32 one chunk; 16-bit N = 24, k_r = 3, TMA): planes retire in their step
#endif
#ifndef LAB_NOARG
#define LAB_NOARG 0  // WgmmaConfig's kArgmin_ = false (an inference-only kernel)
#endif
#ifndef LAB_TMA
#define LAB_TMA 0  // WgmmaConfig's kTma_ (planes by TMA; the inputs must fit it)
#endif
#ifndef LAB_WG
#define LAB_WG 1  // WgmmaConfig's kWarpgroups_: 2 warpgroups per CTA share the ring and weights
#endif
#ifndef LAB_OWN
#define LAB_OWN 0  // WgmmaConfig's kOwnItems_: the 2 warpgroups take their own items (own rings)
#endif
#ifndef LAB_WIDE
#define LAB_WIDE 0  // WgmmaConfig's kTileP_ = 2: 2 x 32 tiles at the config's pitch (TMA only)
#endif
#if LAB_MMASYNC
using Elem = std::conditional_t<bool(LAB_BF16), cutlass::bfloat16_t, float>;
using MmaOp = std::conditional_t<bool(LAB_BF16), cute::SM80_16x8x16_F32BF16BF16F32_TN,
                                 cute::SM80_16x8x8_F32TF32TF32F32_TN>;
using Cfg = std::conditional_t<(LAB_N <= 32), SmallConfig<Elem, MmaOp, bool(LAB_3X)>,
                               LargeConfig<Elem, MmaOp, bool(LAB_3X)>>;
// The lab's view of the mma.sync geometry: one CTA per tile, no splits or chunks.
struct LabGeometry : Geometry {
  int n_split = 1, r_split = 1, pairs = 0, chunks = 1, r_chunk = 0;
};
static LabGeometry lab_geometry(const Params& p, int) {
  LabGeometry g;
  static_cast<Geometry&>(g) = make_geometry<Cfg>(p);
  g.r_chunk = p.r_out;
  return g;
}
constexpr auto lab_kernel = fused_conv_min_softmax_kernel<Cfg>;
#elif LAB_BF16
using Elem = cutlass::bfloat16_t;
using Cfg = WgmmaConfig<Elem, Elem, LAB_N, LAB_KR, false, bool(LAB_ONE), LAB_CHUNK, bool(LAB_RETIRE),
                        bool(LAB_TMA), !bool(LAB_NOARG), LAB_WIDE ? 2 : 4, LAB_WG, bool(LAB_OWN)>;
#elif LAB_F32BF16  // float32 x, weight and y; bfloat16 wgmma operands (an autocast kernel)
using Elem = float;
using Cfg = WgmmaConfig<float, cutlass::bfloat16_t, LAB_N, LAB_KR, false, bool(LAB_ONE), LAB_CHUNK, bool(LAB_RETIRE),
                        bool(LAB_TMA), !bool(LAB_NOARG), LAB_WIDE ? 2 : 4, LAB_WG, bool(LAB_OWN)>;
#else
using Elem = float;
using Cfg = WgmmaConfig<float, cutlass::tfloat32_t, LAB_N, LAB_KR, bool(LAB_3X), bool(LAB_ONE), LAB_CHUNK, bool(LAB_RETIRE),
                        bool(LAB_TMA), !bool(LAB_NOARG), LAB_WIDE ? 2 : 4, LAB_WG, bool(LAB_OWN)>;
#endif
#if LAB_MMASYNC
static cudaError_t lab_launch(const Params& p, const LabGeometry& g, cudaStream_t st) {
  return launch_config<Cfg>(p, g, st);
}
#else
static WgGeometry lab_geometry(const Params& p, int sms) { return make_wg_geometry<Cfg>(p, sms); }
constexpr auto lab_kernel = wgmma_conv_min_softmax_kernel<Cfg>;
static cudaError_t lab_launch(const Params& p, const WgGeometry& g, cudaStream_t st) {
  cute::TmaDescriptor tma_x{};
  if constexpr (Cfg::kTma) {
    if (!tma_fits<Cfg>(p, g.foot_p) || !x_tensor_map<Cfg>(p, &tma_x)) return cudaErrorInvalidValue;
  }
  return launch_config<Cfg>(p, g, tma_x, sm_count(), st);
}
#endif
constexpr size_t kES = sizeof(Elem);
// Host data in the element type; the float copies hold the same (rounded) values.
static std::vector<Elem> to_elem(std::vector<float>& v) {
  std::vector<Elem> e(v.size());
  for (size_t i = 0; i < v.size(); ++i) { e[i] = Elem(v[i]); v[i] = float(e[i]); }
  return e;
}

// A sample's p10, median and p90 on one line (the STEPS and ITEMS tables).
static void print_deciles(const char* tag, const char* name, std::vector<double> d) {
  if (d.empty()) return;
  std::sort(d.begin(), d.end());
  printf("%s %-14s %8.0f %8.0f %8.0f  (n %zu)\n", tag, name, d[d.size() / 10], d[d.size() / 2], d[9 * d.size() / 10],
         d.size());
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

int main(int argc, char** argv) {
  if (argc < 10) { printf("usage: B C_in C_out D H W k_r k_p k_q [check]\n"); return 1; }
  int a[9];
  for (int i = 0; i < 9; ++i) a[i] = atoi(argv[i + 1]);
  const bool check = argc > 10;
  const bool uniform = check && std::string(argv[10]) == "rand";
  const unsigned seed = argc > 11 ? unsigned(atoi(argv[11])) : 1u;
  Params p{};
  p.batch = a[0]; p.c_in = a[1]; p.c_out = a[2];
  p.r_in = a[3]; p.p_in = a[4]; p.q_in = a[5];
  p.k_r = a[6]; p.k_p = a[7]; p.k_q = a[8];
  p.r_out = p.r_in - p.k_r + 1; p.p_out = p.p_in - p.k_p + 1; p.q_out = p.q_in - p.k_q + 1;
  p.xs_q = 1; p.xs_p = p.q_in; p.xs_r = int64_t(p.p_in) * p.q_in; p.xs_c = p.xs_r * p.r_in;
  p.xs_b = p.xs_c * p.c_in;
  p.ws_q = 1; p.ws_p = p.k_q; p.ws_r = p.k_p * p.k_q; p.ws_c = p.ws_r * p.k_r; p.ws_n = p.ws_c * p.c_in;
  p.bs_n = 1;
  const size_t nx = size_t(p.xs_b) * p.batch, nw = size_t(p.ws_n) * p.c_out;
  const size_t ny = size_t(p.batch) * p.c_out * p.p_out * p.q_out;
  const int rot = std::max<size_t>(1, std::min<size_t>(16, (200u << 20) / (nx * 4) + 1));

  std::mt19937 gen(seed);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> ud;
  auto draw = [&] { return uniform ? ud(gen) : nd(gen); };
  const float w_scale = 1.0f / std::sqrt(float(p.c_in * p.k_r * p.k_p * p.k_q));
  std::vector<float> hx(nx), hw(nw), hb(p.c_out);
  for (auto& v : hx) v = draw();
  for (auto& v : hw) v = draw() * w_scale;
  for (auto& v : hb) v = draw();
  const std::vector<Elem> ex = to_elem(hx), ew = to_elem(hw), eb = to_elem(hb);
  std::vector<Elem*> dx(rot);
  for (int r = 0; r < rot; ++r) {
    CK(cudaMalloc(&dx[r], nx * kES));
    CK(cudaMemcpy(dx[r], ex.data(), nx * kES, cudaMemcpyHostToDevice));
  }
  Elem *dw, *db, *dy;
  CK(cudaMalloc(&dw, nw * kES)); CK(cudaMalloc(&db, p.c_out * kES)); CK(cudaMalloc(&dy, ny * kES));
  CK(cudaMemcpy(dw, ew.data(), nw * kES, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, eb.data(), p.c_out * kES, cudaMemcpyHostToDevice));
  p.weight = dw; p.bias = db; p.y = dy; p.argmin = nullptr;
  if (LAB_DYN) CK(cudaMalloc(&p.item_counter, sizeof(int32_t)));

  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const char* res = getenv("LAB_RESIDENT");
  auto g = lab_geometry(p, res && *res ? atoi(res) : sms);
  if (const char* sm = getenv("LAB_SMEM")) g.smem_bytes = std::max(g.smem_bytes, atoi(sm));
  if (getenv("LAB_NOPAIRS")) g.pairs = 0;
  const int grid = p.batch * g.tiles_p * g.tiles_q * g.n_split * g.r_split;
  if (g.chunks != 1 && LAB_ONE && !LAB_MMASYNC) { printf("K does not fit one chunk\n"); return 1; }
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, lab_kernel));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  auto launch = [&](int r) { p.x = dx[r % rot]; CK(lab_launch(p, g, st)); };
  for (int i = 0; i < 20; ++i) launch(i);
  CK(cudaStreamSynchronize(st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  std::vector<float> ts;
  for (int rep = 0; rep < 7; ++rep) {
    const int n = 40;
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < n; ++i) launch(i);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1000.f / n);
  }
  std::sort(ts.begin(), ts.end());
#if LAB_TIMELINE
  {  // one more launch: each CTA's start, end and SM (ablate.py's LAB_TIMELINE)
    // A persistent grid launches fewer CTAs than `grid` (its items): the records start zeroed
    // and only the CTAs that wrote one count.
    std::vector<unsigned long long> tl(3 * size_t(std::min(grid, kLabTimelineCtas)), 0ull);
    CK(cudaMemcpyToSymbol(lab_timeline, tl.data(), tl.size() * sizeof(tl[0])));
    p.x = dx[0];
    CK(lab_launch(p, g, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpyFromSymbol(tl.data(), lab_timeline, tl.size() * sizeof(tl[0])));
    std::vector<unsigned long long> written;
    for (size_t i = 0; i < tl.size(); i += 3)
      if (tl[i] != 0) written.insert(written.end(), {tl[i], tl[i + 1], tl[i + 2]});
    tl.swap(written);
    const int n = int(tl.size() / 3);
    if (n == 0) printf("TIMELINE: no CTA wrote a record\n");
    else {
      unsigned long long t_lo = ~0ull, t_hi = 0, last_start = 0;
      std::vector<double> dur(n);
      std::vector<int> per_sm(sms, 0);
      for (int i = 0; i < n; ++i) {
        t_lo = std::min(t_lo, tl[3 * i]);
        t_hi = std::max(t_hi, tl[3 * i + 1]);
        last_start = std::max(last_start, tl[3 * i]);
        dur[i] = 1e-3 * double(tl[3 * i + 1] - tl[3 * i]);
        if (tl[3 * i + 2] < unsigned(sms)) ++per_sm[tl[3 * i + 2]];
      }
      const double span = 1e-3 * double(t_hi - t_lo);
      double busy = 0;
      for (double d : dur) busy += d;
      std::vector<double> sorted = dur;
      std::sort(sorted.begin(), sorted.end());
      printf("TIMELINE %d CTAs: span %.2f us, last CTA starts at %.2f us; CTA us p10 %.2f median %.2f p90 %.2f "
             "max %.2f; CTAs per SM %d..%d; mean resident CTAs per SM %.2f\n",
             n, span, 1e-3 * double(last_start - t_lo), sorted[n / 10], sorted[n / 2], sorted[9 * n / 10],
             sorted[n - 1], *std::min_element(per_sm.begin(), per_sm.end()),
             *std::max_element(per_sm.begin(), per_sm.end()), busy / (sms * span));
      printf("TIMELINE resident CTAs per SM at 5%%, 15%%, .. 95%% of the span:");
      for (int k = 0; k < 10; ++k) {
        const unsigned long long t = t_lo + (unsigned long long)((k + 0.5) / 10 * double(t_hi - t_lo));
        int running = 0;
        for (int i = 0; i < n; ++i) running += tl[3 * i] <= t && t < tl[3 * i + 1];
        printf(" %.2f", double(running) / sms);
      }
      printf("\n");
    }
  }
#endif
#if LAB_STEPS
  {  // one more launch: the phases of each plane step in the first CTAs (ablate.py's LAB_STEPS)
    p.x = dx[0];
    CK(cudaMemset(dy, 0, ny * kES));
    CK(lab_launch(p, g, st));
    CK(cudaStreamSynchronize(st));
    std::vector<unsigned> sc(size_t(kLabStepCtas) * kLabSteps * 5);
    CK(cudaMemcpyFromSymbol(sc.data(), lab_steps, sc.size() * sizeof(unsigned)));
    const int steps = std::min(kLabSteps, g.r_chunk + p.k_r - 1);
    // ablate.py's marks: the issue-first step's, or (kRetireEachPlane) the retiring step's
    const char* first[5] = {"next plane", "wgmma wait", "issue+gather+fold", "last wait", "rest"};
    const char* retire[5] = {"issue", "advance", "wgmma wait", "fold+gather", "rest"};
    const char* const* names = Cfg::kRetireEachPlane ? retire : first;
    printf("STEPS cycles per phase, median over the first %d CTAs and steps 2..%d (p10 / median / p90):\n",
           std::min(grid, kLabStepCtas), steps - 3);
    for (int k = 0; k < 5; ++k) {
      std::vector<double> d;
      for (int c = 0; c < std::min(grid, kLabStepCtas); ++c)
        for (int s = 2; s + 2 < steps; ++s) {
          const unsigned* m = &sc[(size_t(c) * kLabSteps + s) * 5];
          const unsigned end = k < 4 ? m[k + 1] : m[5];  // m[5]: step s + 1's start
          d.push_back(double(end - m[k]));
        }
      print_deciles("STEPS", names[k], d);
    }
    std::vector<double> st_len;
    for (int c = 0; c < std::min(grid, kLabStepCtas); ++c)
      for (int s = 2; s + 2 < steps; ++s) st_len.push_back(double(sc[(size_t(c) * kLabSteps + s + 1) * 5] - sc[(size_t(c) * kLabSteps + s) * 5]));
    print_deciles("STEPS", "whole step", st_len);
    printf("STEPS median of step s (start to next start; the last: to its gather's end):");
    for (int s = 0; s < steps; ++s) {
      std::vector<double> d;
      for (int c = 0; c < std::min(grid, kLabStepCtas); ++c) {
        const unsigned* m = &sc[(size_t(c) * kLabSteps + s) * 5];
        d.push_back(double((s + 1 < steps ? m[5] : m[4]) - m[0]));
      }
      std::sort(d.begin(), d.end());
      printf(" %.0f", d[d.size() / 2]);
    }
    printf("\n");
  }
#endif
#if LAB_ITEMS
  {  // one more launch: each CTA's prologue and its items' loop, epilogue and gap (ablate.py's LAB_ITEMS)
    std::vector<unsigned> it(size_t(kLabStepCtas) * kLabItems * 4, 0u);
    CK(cudaMemcpyToSymbol(lab_items, it.data(), it.size() * sizeof(unsigned)));
    p.x = dx[0];
    CK(lab_launch(p, g, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpyFromSymbol(it.data(), lab_items, it.size() * sizeof(unsigned)));
    std::vector<double> pro, loop, epi, gap;
    for (int c = 0; c < std::min(grid, kLabStepCtas); ++c) {
      const unsigned* m = &it[size_t(c) * kLabItems * 4];
      if (m[0] == 0 && m[2] == 0) continue;
      pro.push_back(double(m[0] - m[3]));
      for (int j = 0; j < kLabItems && (m[4 * j] | m[4 * j + 2]) != 0; ++j) {
        loop.push_back(double(m[4 * j + 1] - m[4 * j]));
        epi.push_back(double(m[4 * j + 2] - m[4 * j + 1]));
        if (j + 1 < kLabItems && (m[4 * j + 4] | m[4 * j + 6]) != 0) gap.push_back(double(m[4 * j + 4] - m[4 * j + 2]));
      }
    }
    printf("ITEMS cycles (p10 / median / p90) over the first %d CTAs' first %d items:\n", kLabStepCtas, kLabItems);
    print_deciles("ITEMS", "prologue", pro);
    print_deciles("ITEMS", "loop", loop);
    print_deciles("ITEMS", "epilogue", epi);
    print_deciles("ITEMS", "gap", gap);
  }
#endif
  double err = -1, elerr = -1, err32 = -1;
  if (check) {  // float64 reference for the first and the last batch index
    p.x = dx[0];
    CK(lab_launch(p, g, st));
    std::vector<Elem> hy_all(ny);
    CK(cudaMemcpy(hy_all.data(), dy, ny * kES, cudaMemcpyDeviceToHost));
    double worst = 0, abs_err = 0, abs_err32 = 0, scale = 0;
    const int po = p.p_out, qo = p.q_out;
    for (int bsel : {0, p.batch - 1}) {
      const float* xb = hx.data() + size_t(bsel) * p.xs_b;
      const Elem* hy = hy_all.data() + size_t(bsel) * p.c_out * po * qo;
      for (int pp = 0; pp < po; ++pp)
        for (int qq = 0; qq < qo; ++qq) {
          std::vector<double> mn(p.c_out, INFINITY);
          std::vector<float> mn32(p.c_out, INFINITY);
          for (int n = 0; n < p.c_out; ++n)
            for (int d = 0; d < p.r_out; ++d) {
              double s = hb[n];
              float s32 = hb[n];
              for (int c = 0; c < p.c_in; ++c)
                for (int kr = 0; kr < p.k_r; ++kr)
                  for (int kp = 0; kp < p.k_p; ++kp)
                    for (int kq = 0; kq < p.k_q; ++kq) {
                      const float wv = hw[n * p.ws_n + c * p.ws_c + kr * p.ws_r + kp * p.ws_p + kq];
                      const float xv = xb[c * p.xs_c + (d + kr) * p.xs_r + (pp + kp) * p.xs_p + qq + kq];
                      s += double(wv) * xv;
                      s32 = std::fma(wv, xv, s32);
                    }
              mn[n] = std::min(mn[n], s);
              mn32[n] = std::min(mn32[n], s32);
            }
          double mx = -INFINITY, sum = 0;
          float mx32 = -INFINITY, sum32 = 0;
          for (int n = 0; n < p.c_out; ++n) { mx = std::max(mx, mn[n]); mx32 = std::max(mx32, mn32[n]); }
          for (int n = 0; n < p.c_out; ++n) { sum += std::exp(mn[n] - mx); sum32 += std::exp(mn32[n] - mx32); }
          for (int n = 0; n < p.c_out; ++n) {
            const double ref = std::exp(mn[n] - mx) / sum;
            const double got = float(hy[(size_t(n) * po + pp) * qo + qq]);
            worst = std::max(worst, std::abs(got - ref) / std::max(std::abs(ref), 1e-3));
            abs_err = std::max(abs_err, std::abs(got - ref));
            abs_err32 = std::max(abs_err32, std::abs(double(std::exp(mn32[n] - mx32) / sum32) - ref));
            scale = std::max(scale, std::abs(ref));
          }
        }
    }
    err = abs_err / scale;
    elerr = worst;
    err32 = abs_err32 / scale;
  }
#if LAB_MMASYNC
  const int lab_tma = 0;
#else
  const int lab_tma = Cfg::kTma;
#endif
  printf("LAB %-12s ns%d rs%d pairs%d tma%d shape %d,%d,%d,%d,%d,%d,%d,%d,%d  regs %3d spill %4d B smem %6d grid %7d  median %8.2f us  min %8.2f  err %.2e elerr %.2e err32 %.2e%s\n",
         LAB_NAME, g.n_split, g.r_split, g.pairs, lab_tma, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], fa.numRegs,
         int(fa.localSizeBytes), g.smem_bytes, grid,
         ts[ts.size() / 2], ts[0], err, elerr, err32, uniform ? " rand" : "");
  return 0;
}
