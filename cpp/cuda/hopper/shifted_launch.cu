// Host side of the shifted-plane kernel: its rule (shifted_rule.h), one kernel per mode it
// takes (bf16, fp16 data; autocast's float32 data with bf16 or fp16 operands; TF32), shared
// memory and grid (whole clusters: the weights' prologue is shared by a cluster's CTAs).
#include <atomic>
#include <cstdint>

#include "cuda/hopper/wgmma_launch.cuh"  // ModeTypes, sm_count (first: its driver typedefs need cuda.h's order)
#include "cuda/hopper/shifted_kernel.cuh"
#include "cuda/hopper/shifted_rule.h"
#include "cuda/hopper/wgmma_entry.h"
#include "cuda/smem_opt_in.cuh"

namespace fusedconv::fused::hopper {

namespace {

// Clusters of kKernel that the device holds at once (a host query, cached per device): the
// persistent grid is whole clusters in one wave, since a cluster left waiting would start its
// items only when a whole one retires.
template <auto kKernel, class Cfg>
int resident_clusters() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> known[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  const bool recorded = device >= 0 && device < kMaxDevices;
  if (recorded) {
    if (const int clusters = known[device].load(std::memory_order_acquire); clusters > 0) return clusters;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(Cfg::kClusterCtas);
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = Cfg::kSmemBytes;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kKernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the problem goes to the other kernels
    return 0;
  }
  if (recorded && clusters > 0) known[device].store(clusters, std::memory_order_release);
  return clusters;
}

template <Mode kMode>
bool launch_mode(const Params& p, int max_smem_bytes, cudaStream_t stream, cudaError_t* err) {
  using T = ModeTypes<kMode>;
  using Cfg = ShiftedConfig<typename T::Element, typename T::ValA, 64>;
  if (Cfg::kSmemBytes > max_smem_bytes) return false;
  const int pairs = shifted_row_pairs(p.p_out);
  const ShiftedGeometry g{pairs, p.batch * pairs};
  constexpr auto kernel = shifted_conv_min_softmax_kernel<Cfg>;
  *err = allow_dynamic_smem<kernel>(Cfg::kSmemBytes);
  if (*err != cudaSuccess) return true;
  const int clusters = resident_clusters<kernel, Cfg>();
  if (clusters == 0) return false;
  const int ctas = (g.items + Cfg::kWarpgroups - 1) / Cfg::kWarpgroups;
  const int wanted = (ctas + Cfg::kClusterCtas - 1) / Cfg::kClusterCtas;
  const int grid = (wanted < clusters ? wanted : clusters) * Cfg::kClusterCtas;  // persistent, whole clusters
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p, g);
  *err = cudaGetLastError();
  return true;
}

}  // namespace

bool launch_shifted(const Params& p, Mode mode, int max_smem_bytes, cudaStream_t stream, cudaError_t* err) {
  const bool sixteen_bit_operands = mode == Mode::kBF16 || mode == Mode::kFP16 || is_autocast_mode(mode);
  const bool weight_block = reinterpret_cast<std::uintptr_t>(p.weight) % 16 == 0 &&
                            weight_is_channel_major_block(p.c_in, p.k_r, p.k_p, p.k_q, p.ws_n, p.ws_c, p.ws_r,
                                                          p.ws_p, p.ws_q);
  const bool offsets_32bit = offsets_fit_int32(p.c_in, p.r_in, p.p_in, p.q_in, p.xs_c, p.xs_r, p.xs_p);
  const ShiftedCase c{sixteen_bit_operands, mode == Mode::kTF32, is_autocast_mode(mode), p.argmin != nullptr,
                      p.xs_q == 1, weight_block, offsets_32bit, p.c_in, p.c_out, p.k_r, p.k_p, p.k_q, p.q_in,
                      p.p_out, p.batch};
  if (!takes_shifted(c, 0)) return false;  // the shape alone first: other problems skip the device query
  const int sms = sm_count();
  if (sms == 0 || !takes_shifted(c, sms)) return false;
  switch (mode) {
    case Mode::kBF16: return launch_mode<Mode::kBF16>(p, max_smem_bytes, stream, err);
    case Mode::kFP16: return launch_mode<Mode::kFP16>(p, max_smem_bytes, stream, err);
    case Mode::kBF16F32: return launch_mode<Mode::kBF16F32>(p, max_smem_bytes, stream, err);
    case Mode::kFP16F32: return launch_mode<Mode::kFP16F32>(p, max_smem_bytes, stream, err);
    case Mode::kTF32: return launch_mode<Mode::kTF32>(p, max_smem_bytes, stream, err);
    case Mode::k3xTF32: break;
  }
  return false;
}

}  // namespace fusedconv::fused::hopper
