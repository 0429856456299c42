#pragma once
// Host-side planning and launch of the Hopper kernel for one precision mode: picks the
// accumulator width N (the smallest multiple of 8 that holds C_out, up to 32) and checks
// what the kernel covers: k_r <= 3 (rolling accumulators), k_q <= 5 (footprint pitch),
// the shared-memory budget and the grid size.
#include <climits>

#include "cuda/hopper/wgmma_kernel.cuh"

namespace fusedconv::fused::hopper {

// CTAs the current device holds at once for this configuration (a host query, no sync).
template <class Cfg>
int resident_ctas() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 0;
  }
  return sms * Cfg::kMinBlocks;
}

template <class Cfg>
Fit plan_config(const Params& p, int max_smem_bytes, WgGeometry* g) {
  if (p.c_out > Cfg::kN) return Fit::kTooManyChannels;
  if (p.c_in > 4096 || p.k_p > 64) return Fit::kSharedMemory;  // keeps int geometry small
  if (p.k_r > Cfg::kMaxKR || p.k_q > Cfg::kMaxKQ) return Fit::kSharedMemory;
  *g = make_wg_geometry<Cfg>(p, resident_ctas<Cfg>());
  if (g->smem_bytes > max_smem_bytes) return Fit::kSharedMemory;
  if (g->b_tiles * Cfg::kWeightCopies > 4096) return Fit::kSharedMemory;  // SmemLayoutB's tiles
  if (1LL * p.batch * g->tiles_p * g->tiles_q * g->r_split > INT_MAX) return Fit::kGridSize;
  return Fit::kOk;
}

template <class Cfg>
cudaError_t launch_config(const Params& p, const WgGeometry& g, cudaStream_t stream) {
  auto kernel = wgmma_conv_min_softmax_kernel<Cfg>;
  if (g.smem_bytes > 48 * 1024) {
    // Raise the opt-in limit once per device (a host-side attribute: no sync, graph-safe).
    static int raised_to[64] = {};
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return err;
    if (device >= 64 || raised_to[device] < g.smem_bytes) {
      err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, g.smem_bytes);
      if (err != cudaSuccess) return err;
      if (device < 64) raised_to[device] = g.smem_bytes;
    }
  }
  // r_split CTAs of one tile form a cluster (consecutive blockIdx.x).
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(p.batch * g.tiles_p * g.tiles_q * g.r_split);
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = g.smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = g.r_split;
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = g.r_split > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, p, g);
}

// Element, operand type and split of one mode; N from C_out.
template <class Element, class ValA, bool kSplit3x>
struct ModeKernels {
  template <int N>
  using Cfg = WgmmaConfig<Element, ValA, N, kSplit3x>;

  template <class F>
  static auto with_config(int c_out, F&& f) {
    if (c_out <= 8) return f(Cfg<8>{});
    if (c_out <= 16) return f(Cfg<16>{});
    if (c_out <= 24) return f(Cfg<24>{});
    return f(Cfg<32>{});
  }

  static Fit plan(const Params& p, int max_smem_bytes) {
    return with_config(p.c_out, [&](auto cfg) {
      WgGeometry g;
      return plan_config<decltype(cfg)>(p, max_smem_bytes, &g);
    });
  }

  static cudaError_t launch(const Params& p, int max_smem_bytes, cudaStream_t stream) {
    return with_config(p.c_out, [&](auto cfg) {
      using C = decltype(cfg);
      WgGeometry g;
      if (plan_config<C>(p, max_smem_bytes, &g) != Fit::kOk) return cudaErrorInvalidValue;
      return launch_config<C>(p, g, stream);
    });
  }
};

}  // namespace fusedconv::fused::hopper
