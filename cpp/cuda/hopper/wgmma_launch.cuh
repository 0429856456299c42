#pragma once
// Host-side planning and launch of the Hopper kernel for one precision mode and accumulator
// width N (wgmma_dispatch.cu picks N from C_out): picks the instantiation for k_r, for K in
// one chunk or not and for the ring (planes by TMA where x allows it, else cp.async), and
// checks what the kernel covers: k_r <= 3 or 5, k_q <= 5 (footprint pitch), the
// shared-memory budget and the grid size.
#include <cudaTypedefs.h>

#include <climits>

#include "cuda/hopper/claim_rule.h"
#include "cuda/hopper/retire_rule.h"
#include "cuda/hopper/tile_rule.h"
#include "cuda/hopper/wgmma_entry.h"
#include "cuda/hopper/wgmma_kernel.cuh"
#include "cuda/smem_opt_in.cuh"

namespace fusedconv::fused::hopper {

// The current device's SM count (a host query, no sync).
inline int sm_count() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 0;
  }
  return sms;
}

// The shared memory each resident CTA reserves beside its dynamic allocation.
constexpr int kReservedSmemPerCta = 1024;

// CTAs per SM of Cfg on geometry g: its register bound (kMinBlocks), or fewer where shared
// memory holds fewer. max_smem_bytes: the per-block opt-in maximum, which is the SM's
// capacity less one CTA's reservation.
template <class Cfg>
long long ctas_per_sm(const WgGeometry& g, int max_smem_bytes) {
  const long long by_smem = (max_smem_bytes + kReservedSmemPerCta) / (g.smem_bytes + kReservedSmemPerCta);
  return by_smem < Cfg::kMinBlocks ? by_smem : Cfg::kMinBlocks;
}

// sms: sm_count(), queried once per call by plan_width / launch_width.
template <class Cfg>
Fit plan_config(const Params& p, int max_smem_bytes, int sms, WgGeometry* g) {
  if (p.c_in > 4096 || p.k_p > 64) return Fit::kSharedMemory;  // keeps int geometry small
  if (p.k_r != Cfg::kKR || p.k_q > Cfg::kMaxKQ) return Fit::kSharedMemory;
  *g = make_wg_geometry<Cfg>(p, sms);
  // Tiles filling more than half the SMs leave R whole (one CTA per tile). Two CTAs per tile,
  // each walking half of R, were faster on the H200 wherever the doubled grid still runs in one
  // wave (lab, reference shape; µs whole R -> split 2): B = 8 (128 tiles) TF32 13.97 -> 13.24,
  // bf16 17.42 -> 16.07, 3xTF32 26.04 -> 21.94; B = 12 (192) bf16 18.85 -> 16.89, TF32 15.47 ->
  // 15.24; B = 16 (256) bf16 19.11 -> 18.40. Where it needs a second wave it lost (B = 12
  // 3xTF32 +33%, B = 16 TF32 +69%). A wave is the CTAs the registers (kMinBlocks) and shared
  // memory (the per-block opt-in maximum plus the 1 KB each CTA reserves) let each SM hold.
  const long long tiles = tile_ctas(p, *g);
  if (g->r_split == 1 && 2 * tiles > sms) {
    const WgGeometry halves = make_wg_geometry<Cfg>(p, sms, 2);
    if (2 * tiles <= ctas_per_sm<Cfg>(halves, max_smem_bytes) * sms) *g = halves;
  }
  // The R split's merge area can be what does not fit (3xTF32's three weight copies at long
  // K, small batches): then one CTA per tile walks all of R.
  if (g->smem_bytes > max_smem_bytes && g->r_split > 1) *g = make_wg_geometry<Cfg>(p, sms, 1);
  if (g->n_split > Cfg::kMaxCluster) return Fit::kTooManyChannels;  // one cluster per tile
  if (Cfg::kOneChunk && g->chunks != 1) return Fit::kSharedMemory;  // with_config picks it
  if (g->smem_bytes > max_smem_bytes) return Fit::kSharedMemory;
  if (g->b_tiles * Cfg::kWeightCopies > 4096) return Fit::kSharedMemory;  // SmemLayoutB's tiles
  if (tile_ctas(p, *g) * g->r_split > INT_MAX) return Fit::kGridSize;
  return Fit::kOk;
}

// The driver's cuTensorMapEncodeTiled, looked up once (nullptr if the driver lacks it).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// x as the 5-D tensor (Q, P, R, C, B) whose box (kRowPitch, foot_p, 1, C_in, 1) is one ring
// slot's channels of a kTma kernel (tma_fits). False where the driver refuses it.
template <class Cfg>
bool x_tensor_map(const Params& p, cute::TmaDescriptor* map) {
  using Element = typename Cfg::Element;
  static_assert(Cfg::kTma);
  constexpr CUtensorMapDataType kType = cute::is_same_v<Element, float>                ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                        : cute::is_same_v<Element, cutlass::bfloat16_t> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                                        : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  static_assert(cute::is_same_v<Element, float> || cute::is_same_v<Element, cutlass::bfloat16_t> ||
                cute::is_same_v<Element, cutlass::half_t>);
  // (a stride of an extent-1 axis is never used; the driver still wants it aligned)
  auto stride = [](int64_t s, int extent) { return cuuint64_t(extent == 1 ? 16 : s * int64_t(sizeof(Element))); };
  const cuuint64_t dims[5] = {cuuint64_t(p.q_in), cuuint64_t(p.p_in), cuuint64_t(p.r_in), cuuint64_t(p.c_in),
                              cuuint64_t(p.batch)};
  const cuuint64_t strides[4] = {stride(p.xs_p, p.p_in), stride(p.xs_r, p.r_in), stride(p.xs_c, p.c_in),
                                 stride(p.xs_b, p.batch)};
  const cuuint32_t box[5] = {Cfg::kRowPitch, cuuint32_t(Cfg::kTileP + p.k_p - 1), 1, cuuint32_t(p.c_in), 1};
  const cuuint32_t unit[5] = {1, 1, 1, 1, 1};
  const auto encode = tensor_map_encoder();
  return encode != nullptr &&
         encode(map, kType, 5, const_cast<void*>(p.x), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The launch attribute that makes each `ctas` consecutive CTAs one cluster.
inline cudaLaunchAttribute cluster_of(int ctas) {
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = unsigned(ctas);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  return cluster;
}

// CTAs to launch: one per work item, or for a TMA kernel that walks all of R whose items need
// more than one wave, one wave of persistent CTAs (or clusters of channel groups) that take
// the items in turn. Each then lays out its weights once instead of once per item (the
// per-item weight set-up was 6% (TF32) and 13% (bf16) of the reference's time, lab, session
// 17; 15% of the C_in = 16 shape's clusters, session 24) and loads the next item's first
// planes while it writes the last one's results. A cluster's CTAs take the items of one tile
// together: the grid is whole clusters, so each CTA keeps its rank. (kOwnItems: a CTA runs
// kItemsPerCta items at a time.)
template <class Cfg, auto kernel = wgmma_conv_min_softmax_kernel<Cfg>>
int persistent_grid(const WgGeometry& g, int sms) {
  const int cluster_ctas = g.n_split * g.r_split;
  const int ctas = (g.work_items + Cfg::kItemsPerCta - 1) / Cfg::kItemsPerCta;
  if (!Cfg::kTma || g.r_split != 1) return ctas;
  if (ctas <= sms) return ctas;  // one wave at any occupancy: no query
  long long wave = 0;
  if (cluster_ctas == 1) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Cfg::kThreads, g.smem_bytes) != cudaSuccess ||
        sms <= 0) {
      return ctas;
    }
    wave = 1LL * per_sm * sms;
  } else {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(ctas);
    config.blockDim = dim3(Cfg::kThreads);
    config.dynamicSmemBytes = g.smem_bytes;
    cudaLaunchAttribute cluster = cluster_of(cluster_ctas);
    config.attrs = &cluster;
    config.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) return ctas;
    wave = 1LL * clusters * cluster_ctas;
  }
  if (wave <= 0) return ctas;
  return ctas > wave ? int(wave) : ctas;
}

// tma_x: x's tensor map for a kTma kernel (x_tensor_map), ignored otherwise.
template <class Cfg>
cudaError_t launch_config(const Params& p, const WgGeometry& planned, const cute::TmaDescriptor& tma_x, int sms,
                          cudaStream_t stream) {
  constexpr auto kernel = wgmma_conv_min_softmax_kernel<Cfg>;
  if (!Cfg::kArgmin && p.argmin != nullptr) return cudaErrorInvalidValue;  // an inference-only kernel
  if (Cfg::kOwnItems && planned.n_split * planned.r_split > 1) return cudaErrorInvalidValue;  // no clusters
  const WgGeometry g = with_divisors<Cfg>(p, planned);
  if (const cudaError_t err = allow_dynamic_smem<kernel>(g.smem_bytes); err != cudaSuccess) return err;
  // The n_split x r_split CTAs of one tile form a cluster (consecutive blockIdx.x).
  const int cluster_ctas = g.n_split * g.r_split;
  int grid = persistent_grid<Cfg>(g, sms);
  // A TMA kernel's persistent grid without clusters claims its items from p.item_counter
  // (zeroed here) where that pays (claim_rule.h), in its own instantiation; every other grid
  // takes fixed shares (a cluster's CTAs must take one tile's items together).
  Params q = p;
  const long long walkers = 1LL * grid * Cfg::kItemsPerCta;
  const bool claims = Cfg::kTma && p.item_counter != nullptr && cluster_ctas == 1 &&
                      claims_pay(g.work_items, walkers, Cfg::kSplit3x);
  cudaLaunchConfig_t config = {};
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = g.smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute cluster = cluster_of(cluster_ctas);
  config.attrs = &cluster;
  config.numAttrs = cluster_ctas > 1 ? 1 : 0;
  if constexpr (Cfg::kTma) {
    if (claims) {
      constexpr auto claiming = wgmma_conv_min_softmax_kernel<Cfg, true>;
      if (const cudaError_t err = allow_dynamic_smem<claiming>(g.smem_bytes); err != cudaSuccess) return err;
      grid = persistent_grid<Cfg, claiming>(g, sms);  // (its own registers: its own wave)
      if (const cudaError_t err = cudaMemsetAsync(q.item_counter, 0, sizeof(int32_t), stream); err != cudaSuccess)
        return err;
      config.gridDim = dim3(grid);
      return cudaLaunchKernelEx(&config, claiming, q, g, tma_x);
    }
  }
  q.item_counter = nullptr;
  config.gridDim = dim3(grid);
  return cudaLaunchKernelEx(&config, kernel, q, g, tma_x);
}

// Element type, wgmma operand type and split of a precision mode (kSplit3x: "highest", whose
// cross terms run in bf16 on this kernel).
template <Mode kMode> struct ModeTypes;
template <> struct ModeTypes<Mode::kTF32> {
  using Element = float; using ValA = cutlass::tfloat32_t; static constexpr bool kSplit3x = false;
};
template <> struct ModeTypes<Mode::k3xTF32> {
  using Element = float; using ValA = cutlass::tfloat32_t; static constexpr bool kSplit3x = true;
};
template <> struct ModeTypes<Mode::kBF16> {
  using Element = cutlass::bfloat16_t; using ValA = cutlass::bfloat16_t; static constexpr bool kSplit3x = false;
};
template <> struct ModeTypes<Mode::kFP16> {
  using Element = cutlass::half_t; using ValA = cutlass::half_t; static constexpr bool kSplit3x = false;
};
template <> struct ModeTypes<Mode::kBF16F32> {
  using Element = float; using ValA = cutlass::bfloat16_t; static constexpr bool kSplit3x = false;
};
template <> struct ModeTypes<Mode::kFP16F32> {
  using Element = float; using ValA = cutlass::half_t; static constexpr bool kSplit3x = false;
};

// The kernels of one mode and width N: the unrolling from k_r, the A addressing from K.
template <Mode kMode, int N>
struct WidthKernels {
  using T = ModeTypes<kMode>;
  template <int KR, bool kOneChunk, int kLongChunk = 0, bool kRetire = false, bool kTma = false, bool kArgmin = true,
            int kTileP = 4>
  using Cfg = WgmmaConfig<typename T::Element, typename T::ValA, N, KR, T::kSplit3x, kOneChunk, kLongChunk, kRetire,
                          kTma, kArgmin, kTileP>;
  using AnyTma = Cfg<1, true, 0, false, true>;  // the TMA box and its checks do not depend on k_r or K

  // Whether p's planes can load by TMA: x fits (tma_fits) and k_r != 5 (its kernels, the
  // slowest to compile, come with the cp.async ring only). 3xTF32 also needs more tiles than
  // one wave holds: there its TMA kernel's item loop (v33) costs more than TMA gains (v35 lab,
  // H200, reference shape, µs TMA / cp.async: B = 1 16.2 / 14.5, B = 8 26.3 / 25.4, B = 128
  // 204.4 / 231.7; TF32 and bf16 gain by TMA at every batch).
  static bool tma_candidate(const Params& p, int sms) {
    if (p.k_r == 5 || !tma_fits<AnyTma>(p, AnyTma::kTileP + p.k_p - 1)) return false;
    if constexpr (T::kSplit3x) {
      return tile_ctas(p, make_wg_geometry<AnyTma>(p, sms)) > 1LL * AnyTma::kMinBlocks * sms;
    }
    return true;
  }
  // TF32 K in chunks also comes in chunks of 3 k-steps (24 K). Measured on the H200 (lab,
  // session 9): at equal padding 3 beat 2 by 2-5% (fewer chunks), with more padding they lost
  // up to 8% (3xTF32 up to 22%, hence TF32 only).
  static constexpr bool kTripleChunks = sizeof(typename T::ValA) == 4 && !T::kSplit3x;
  // 16-bit operands (bf16, fp16, autocast) at N = 32, k_r = 3 by TMA gather K in chunks of 3
  // k-steps (48 K) instead of 1 where that pads no more: fewer chunk pairs, so fewer waits for
  // the wgmmas to drain per plane. Lab (H200, session 24, C_in = 16 shape, N = 32, K = 144,
  // bf16, µs 1 / 3 k-steps): 264.3 / 243.6 one CTA per item, 183.6 / 165.2 persistent; 168
  // registers either way, no spill. Three k-steps at 2 CTAs per SM lost (268.2), 5 and 9 too
  // (278.8, 279.1). Persistent at other K (C_out = 32 but one): K = 36 106.4 / 96.8, K = 45
  // 107.6 / 98.9, K = 288 154.6 / 126.0, K = 36 at C_out = 64 215.2 / 197.1. At N = 24 (v44;
  // lab, session 25, 128 registers and 4 per SM either way): bf16 C_in = 16, C_out = 48 169.8 /
  // 151.4, K = 144 at C_out = 24 225.6 / 202.0, K = 36 85.1 / 80.1, K = 45 86.1 / 81.1; autocast
  // (bf16 operands) 177.0 / 162.0, 240.5 / 224.7, 88.0 / 85.8. k_r = 1, 2 keep 1 (unmeasured).
  static constexpr bool kTripleChunks16 = sizeof(typename T::ValA) == 2 && (N == 24 || N == 32);
  // TF32 at N = 32, k_r = 3 by TMA also gathers K in chunks of 9 k-steps (72 K), at 2 CTAs per
  // SM by registers (215), where K fills two or more of them with no more padding than 3-step
  // chunks: one chunk pair, so one drain of the wgmmas, per 18 k-steps instead of 6. There
  // (K >= 144 at N = 32, k_r = 3) shared memory holds no more than 2 CTAs per SM of the 3-step
  // kernel either: 3 need <= 75 KB each, and the weights alone take 54 KB, the ring and the
  // footprint table 35 KB or more (C_in = 9, 4 x 4 taps); where it would hold more (N = 24,
  // whose weights take 41 KB, with a small ring) the 3-step kernel stays. Lab (H200, session
  // 25, µs 3 / 9 k-steps): K = 144 (C_in = 16) B = 16, C_out = 64 223.7 / 211.0, B = 128, C_out
  // = 32 301.5 / 279.5; K = 216 423.5 / 416.4; K = 288 at C_out = 32 140.4 / 136.9, at 64 1018.0
  // / 986.0. At K = 72 (one 9-step chunk; the 3-step kernel at 3 per SM) it lost: 307.1 / 347.8.
  // N = 24 too (v45; 189 registers, 2 per SM against the 3-step kernel's 156 and 3; lab, H200,
  // session 26, µs 3 / 9 k-steps): C_in = 16, C_out = 48, B = 16 218.9 / 202.4; C_out = 24, B =
  // 128 287.5 / 268.8; C_in = 32, C_out = 48, B = 32 (K = 288) 269.8 / 252.5.
  static constexpr bool kNineChunks = sizeof(typename T::ValA) == 4 && !T::kSplit3x && (N == 24 || N == 32);
  // 3xTF32 at N = 32, k_r = 3 by TMA gathers K in chunks of 3 k-steps where their fewer padded
  // k-steps (9 KB of weights each: three copies, three taps) let shared memory hold more CTAs
  // per SM than the 2-step chunks do (K = 65..72: 9 k-steps instead of 10). Lab (H200, session
  // 25, µs 2 / 3 k-steps): K = 72 (C_in = 8), C_out = 32, B = 128: 794.6 / 531.4 (119.7 / 110.2
  // KB: 1 / 2 CTAs per SM; 206 registers). At equal CTAs per SM they lost: K = 144 (one per SM)
  // 915.4 / 975.3; 6 k-steps 1255.6 (255 registers), 9 2845.2 (352 B spilled).
  static constexpr bool kTripleChunks3x = T::kSplit3x && N == 32;
  // TF32 in one chunk at N >= 24 also comes with each plane retired in its step (kRetireEachPlane:
  // 128 registers, 4 CTAs per SM instead of 3), taken when its grid needs fewer waves, or on
  // persistent grids (TMA, R whole) from 3 rounds of items at 3 per SM. A retiring CTA is slower,
  // so at equal waves of one CTA per tile the 3-per-SM kernel wins. Measured on the H200 (lab,
  // session 10, cp.async; reference shape by batch, CTAs, µs kept / retiring): 24, 384: 18.7 /
  // 19.7; 25, 400: 29.2 / 22.8; 32, 512: 32.9 / 23.1; 48, 768: 34.5 / 38.3; 64, 1024: 46.4 / 43.1;
  // 128: 92.4 / 86.3; 1024: 640.5 / 619.6; N = 32 alike. Persistent (lab, v37, TMA; tiles, rounds
  // at 3 / 4 per SM: µs): 400, 2 / 1: 25.37 / 19.27; 640, 2 / 2: 29.08 / 27.96; 720, 2 / 2: 29.44 /
  // 30.14; 1056, 3 / 2: 40.78 / 33.28; 1120, 3 / 3: 41.11 / 39.90; 1184, 3 / 3: 41.22 / 40.80;
  // 2048: 72.69 / 59.72.
  // N = 16 runs 4 per SM already and loses to it at every size.
  static constexpr bool kRetireKernels = Cfg<1, true, 0, true>::kRetireEachPlane && N >= 24;
  template <bool kTma>
  static bool retire_pays(const Params& p, int sms) {
    const WgGeometry g = make_wg_geometry<Cfg<1, true>>(p, sms);  // tiles and channel groups
    auto per_sm = [](auto cfg) { return decltype(cfg)::kMinBlocks; };  // depends on k_r
    const long long from_rounds = kTma && g.r_split == 1 ? kRetireFromRounds : LLONG_MAX;  // persistent
    return retiring_pays(tile_ctas(p, g), with_kr<true, 0, false, kTma>(p.k_r, per_sm),
                         with_kr<true, 0, true, kTma>(p.k_r, per_sm), sms, from_rounds);
  }
  // At N = 24 and 32, k_r = 3 by TMA, TF32 and 16-bit operands (bf16, fp16 and the autocast
  // modes) also come as a lean kernel: retiring, without the argmin (which only the
  // backward's recompute asks for), 5 CTAs per SM (N = 32: 4). Taken on persistent grids
  // where it takes fewer rounds of items than the kernel it replaces (TF32: retire_pays's
  // choice, 16-bit: the kept one), or both take 4 or more (the channel clusters of C_out > 32
  // too since v43: their grids are persistent as well); with R split (one wave) where it takes
  // fewer waves. Measured on the H200 (lab, reference shape; tiles:
  // µs, v37 lab): 16-bit retiring with the argmin, bf16 4 per SM / 5: 640: 26.12 / 20.77 (2 / 1
  // rounds); 800: 27.65 / 27.58 (2 / 2); 1024: 29.97 / 31.21 (2 / 2); 1152: 37.03 / 33.79 (3 /
  // 2); 1280: 38.94 / 33.97 (3 / 2); 1536: 41.13 / 41.48 (3 / 3); 1792: 49.77 / 46.65 (4 / 3);
  // 2048: 52.73 / 49.82 (4 / 4); 16384: 358.3 / 335.5; autocast alike. Without the argmin
  // (v38 lab), bf16 5 per SM with / without: 2048: 50.37 / 47.46, 16384: 337.4 / 315.7; TF32
  // retiring 4 per SM / lean 5: 640: 28.33 / 23.70 (2 / 1); 1024: 33.35 / 35.54 (2 / 2);
  // 1600: 52.97 / 47.94 (4 / 3); 2048: 60.01 / 57.74 (4 / 4); 4096: 111.7 / 107.7.
  // At N = 32 (C_out 25..32; v39, lab, H200, session 21, 4 per SM, µs kept / lean): bf16
  // (kept: 3 per SM) B = 64 40.4 / 33.4, 128 67.7 / 57.5, 256 123.3 / 106.7; TF32 (the retiring
  // kernel, 4 per SM as the lean one) 36.3 / 36.1, 67.1 / 65.3, 128.2 / 123.6.
  // 3xTF32's lean kernel at N = 32 (v41): 3 per SM where its kept kernel takes 2 (lab, H200,
  // C_out = 32, B = 128: 199.7 / 186.9 µs). At N = 24 both took 3 and the lean one lost (171.5 /
  // 172.8, B = 1024 1261 / 1290); since v58 (no split pass) it fits 4 in 128 registers (v59).
  using Keep = Cfg<3, true, 0, false, true>;  // the kept kernel at k_r = 3 by TMA
  using Lean = Cfg<3, true, 0, true, true, false>;
  static constexpr bool kLeanKernels = (N == 24 || N == 32) && Lean::kRetireEachPlane;
  // The lean kernels (3xTF32's at N = 24 only; at N = 32 not measured) and 3xTF32's kept kernel
  // at N = 24, k_r = 3 also come on 2 x 32 output tiles, taken where those cover the plane in
  // fewer tiles, and for 3xTF32's kept kernel only where that saves a round of items (tile_rule.h). Lab (H200, session 23, reference
  // shape, µs 4 x 16 / 2 x 32): TF32 lean B = 128 57.5 / 55.4, 1024 423.7 / 395.0; bf16 47.1 /
  // 44.2, 319.9 / 294.2; autocast 49.6 / 46.1, 349.0 / 323.7; 3xTF32 kept 171.9 / 162.5, 1236 /
  // 1222; at C_out = 32 (N = 32) bf16 56.7 / 55.8, 384.1 / 357.4, TF32 64.6 / 64.2, 465.2 /
  // 447.0; B = 64: TF32 35.2 / 35.4, autocast 30.9 / 29.9.
  using LeanWide = Cfg<3, true, 0, true, true, false, 2>;
  using KeptWide = Cfg<3, true, 0, false, true, true, 2>;
  static constexpr bool kWideLean = kLeanKernels && (!T::kSplit3x || N == 24);
  static constexpr bool kWideKept = T::kSplit3x && N == 24;
  // 3xTF32's kept kernel, on one channel group only (its channel clusters never ran on 2 x 32
  // tiles). Its lean kernel at N = 24 (v59) takes them as the other lean kernels do: the kept
  // one's per-item penalty came from v57's split planes, gone since v58. Lab, H100, µs 2 x 32 /
  // 4 x 16: B = 128 108.8 / 109.0, B = 256 196.9 / 213.1.
  static bool kept_takes_wide(const Params& p, int sms) {
    if (p.k_r != 3 || !wide_tile_pays(p.p_out, p.q_out)) return false;
    const WgGeometry narrow = make_wg_geometry<Keep>(p, sms);
    return narrow.n_split == 1 && wide_tile_saves_a_round(tile_ctas(p, narrow),
                                                          tile_ctas(p, make_wg_geometry<KeptWide>(p, sms)),
                                                          KeptWide::kMinBlocks, sms);
  }
  static bool takes_lean(const Params& p, int sms) {
    const WgGeometry g = make_wg_geometry<Keep>(p, sms);
    if (p.argmin != nullptr) return false;
    int retire_per_sm = 0;  // (16-bit operands have no retiring kernel besides the lean one)
    if constexpr (kRetireKernels) retire_per_sm = Cfg<3, true, 0, true, true>::kMinBlocks;
    return lean_pays(tile_ctas(p, g), Keep::kMinBlocks, retire_per_sm, Lean::kMinBlocks, sms, g.r_split == 1);
  }

  // k_r = 1, 2, 3 and 5. k_r = 5 leaves out what has a fallback, because these kernels are
  // the slowest to compile (2.5x a k_r = 3 kernel's code; CI builds every kernel on 2 cores):
  // the autocast modes (they cast and run the 16-bit kernel) and TF32's 3-k-step chunks (the
  // 2-step ones run). k_r = 4 (even kernels) stays with the mma.sync kernel: its ring period
  // of 10 planes (5 accumulator slots x 2 A buffers) made the largest kernels of all. 3xTF32
  // at k_r = 5 gathers K in chunks even where it fits one: the one-chunk kernel's three A
  // parts and six accumulators spill at 255 registers (532 B at N = 24, 2764 B at 32), the
  // chunked one takes 196 / 228 with none (local ptxas, nvcc 13.0). with_config asks this
  // too, so that a k_r = 5 problem is planned on a kernel that exists.
  template <bool kOneChunk, int kLongChunk>
  static constexpr bool kHasKR5 = !(T::kSplit3x && kOneChunk) && kLongChunk != 3 &&
                                  sizeof(typename T::Element) == sizeof(typename T::ValA);
  template <bool kOneChunk, int kLongChunk, bool kRetire = false, bool kTma = false, class F>
  static auto with_kr(int k_r, F&& f) {
    if (k_r <= 1) return f(Cfg<1, kOneChunk, kLongChunk, kRetire, kTma>{});
    if (k_r == 2) return f(Cfg<2, kOneChunk, kLongChunk, kRetire, kTma>{});
    if constexpr (kHasKR5<kOneChunk, kLongChunk> && !kTma) {
      if (k_r == 5) return f(Cfg<5, kOneChunk, kLongChunk, kRetire>{});
    }
    return f(Cfg<3, kOneChunk, kLongChunk, kRetire, kTma>{});  // plan_config rejects k_r other than 3
  }

  // Calls f with the kernel configuration for p, of the TMA ring (tma: tma_candidate(p)) or
  // the cp.async one; max_smem_bytes: the per-block shared-memory opt-in maximum.
  template <class F>
  static auto with_config(const Params& p, int sms, int max_smem_bytes, bool tma, F&& f) {
    return tma ? with_config_of<true>(p, sms, max_smem_bytes, f) : with_config_of<false>(p, sms, max_smem_bytes, f);
  }
  template <bool kTma, class F>
  static auto with_config_of(const Params& p, int sms, [[maybe_unused]] int max_smem_bytes, F&& f) {
    using Any = Cfg<1, true>;  // the chunk sizes do not depend on k_r
    const int k_plane = p.c_in * p.k_p * p.k_q;
    const bool kr5 = p.k_r == 5;
    if (k_plane <= Any::kOneChunkK && (!kr5 || kHasKR5<true, 0>)) {
      if constexpr (kTma && kLeanKernels) {
        if (p.k_r == 3 && takes_lean(p, sms)) {
          if constexpr (kWideLean) {
            if (wide_tile_pays(p.p_out, p.q_out)) return f(LeanWide{});
          }
          return f(Lean{});
        }
      }
      if constexpr (kRetireKernels) {
        if (retire_pays<kTma>(p, sms)) return with_kr<true, 0, true, kTma>(p.k_r, f);
      }
      if constexpr (kTma && kWideKept) {
        if (kept_takes_wide(p, sms)) return f(KeptWide{});
      }
      return with_kr<true, 0, false, kTma>(p.k_r, f);
    }
    // Chunks of 3 k-steps where they pad K no more than the default ones (TF32: 2, 16-bit: 1);
    // TF32's 9-step chunks where they pad no more than 3-step ones and K fills two.
    using Chunked = Cfg<1, false>;
    [[maybe_unused]] const bool triple_pads_no_more =
        round_up(k_plane, 3 * Chunked::kBlockK) <= round_up(k_plane, Chunked::kChunk * Chunked::kBlockK);
    if constexpr (kTma && kNineChunks) {
      using Nine = Cfg<3, false, 9, false, true>;
      using Triple = Cfg<3, false, 3, false, true>;
      const bool nine_pays = p.k_r == 3 && k_plane > 9 * Chunked::kBlockK &&
                             round_up(k_plane, 9 * Chunked::kBlockK) <= round_up(k_plane, 3 * Chunked::kBlockK);
      if (nine_pays && ctas_per_sm<Nine>(make_wg_geometry<Nine>(p, sms), max_smem_bytes) >=
                           ctas_per_sm<Triple>(make_wg_geometry<Triple>(p, sms), max_smem_bytes)) {
        return f(Nine{});
      }
    }
    if constexpr (kTma && kTripleChunks16) {
      if (p.k_r == 3 && triple_pads_no_more) return f(Cfg<3, false, 3, false, true>{});
    }
    if constexpr (kTma && kTripleChunks3x) {
      using Triple = Cfg<3, false, 3, false, true>;
      using Pair = Cfg<3, false, 0, false, true>;  // (3xTF32's default: 2 k-steps)
      if (p.k_r == 3 && ctas_per_sm<Triple>(make_wg_geometry<Triple>(p, sms), max_smem_bytes) >
                            ctas_per_sm<Pair>(make_wg_geometry<Pair>(p, sms), max_smem_bytes)) {
        return f(Triple{});
      }
    }
    if constexpr (kTripleChunks) {
      if ((!kr5 || kHasKR5<false, 3>) && triple_pads_no_more) return with_kr<false, 3, false, kTma>(p.k_r, f);
    }
    return with_kr<false, 0, false, kTma>(p.k_r, f);
  }
};

// Plans on the TMA kernels where x allows it and they fit, else on the cp.async ones.
template <Mode kMode, int N>
Fit plan_width(const Params& p, int max_smem_bytes) {
  using W = WidthKernels<kMode, N>;
  const int sms = sm_count();
  auto plan = [&](auto cfg) {
    WgGeometry g;
    return plan_config<decltype(cfg)>(p, max_smem_bytes, sms, &g);
  };
  if (W::tma_candidate(p, sms)) {
    if (const Fit fit = W::with_config(p, sms, max_smem_bytes, true, plan); fit == Fit::kOk) return fit;
  }
  return W::with_config(p, sms, max_smem_bytes, false, plan);
}

// As plan_width; a TMA kernel also needs the driver to encode x's tensor map for its box
// (which depends on its tile), else the cp.async kernel runs.
template <Mode kMode, int N>
cudaError_t launch_width(const Params& p, int max_smem_bytes, cudaStream_t stream) {
  using W = WidthKernels<kMode, N>;
  const int sms = sm_count();
  bool planned = false;
  auto launch = [&](auto cfg) {
    using C = decltype(cfg);
    WgGeometry g;
    if (plan_config<C>(p, max_smem_bytes, sms, &g) != Fit::kOk) return cudaErrorInvalidValue;
    cute::TmaDescriptor tma_x{};
    if constexpr (C::kTma) {
      if (!x_tensor_map<C>(p, &tma_x)) return cudaErrorInvalidValue;  // (not planned: cp.async)
    }
    planned = true;
    return launch_config<C>(p, g, tma_x, sms, stream);
  };
  if (W::tma_candidate(p, sms)) {
    const cudaError_t err = W::with_config(p, sms, max_smem_bytes, true, launch);
    if (planned) return err;
  }
  return W::with_config(p, sms, max_smem_bytes, false, launch);
}

// Channel groups of N = 64 (one, or a cluster of two to four above 64) where wgmma_dispatch.cu's
// width rule (width_rule.h, groups_of_64) asks for it: K in chunks of 3 k-steps at k_r = 3,
// planes by TMA; 16-bit operands in one warpgroup, 2 CTAs per SM (255 registers), TF32 in two
// warpgroups sharing one CTA per SM (255 registers each, the weights once; the ring once, or
// at C_out <= 64 one ring per warpgroup, each on its own items). It
// launches only where x fits TMA, shared memory holds the CTA and its tiles fill more than
// half the SMs, so that R stays whole: split in two (B = 1 at C_in = 16, C_out = 64) bf16
// lost to the two groups of 32 (lab, H200, session 26: 35.1 -> 38.9 µs; B = 4, R whole,
// 61.0 -> 55.4), and TF32's split does not fit (plan_config would walk R whole on a few
// CTAs). Elsewhere the groups of 32 run, which also plan the op (wgmma_dispatch.cu, plan):
// this kernel never widens what fits.
template <Mode kMode>
struct Group64 {
  using T = ModeTypes<kMode>;
  static_assert(!T::kSplit3x, "3xTF32 has no N = 64 kernel (width_rule.h)");
  static constexpr int kWarpgroups = sizeof(typename T::ValA) == 2 ? 1 : 2;
  template <bool kOwnItems>
  using WithItems = WgmmaConfig<typename T::Element, typename T::ValA, 64, 3, false, false, 3, false, true, true, 4,
                                kWarpgroups, kOwnItems>;
  using Cfg = WithItems<false>;
  // TF32 at C_out <= 64 (no cluster): each warpgroup on its own items first (kOwnItems; lab,
  // H200, session 30: C_in = 16, C_out = 64, B = 16 178.3 -> 168.4 µs), the shared ring where
  // that does not plan (its two rings need more shared memory; R split).
  static constexpr bool kHasOwnItems = kWarpgroups == 2;
};

// Launches C where it runs with R whole; false where it does not apply.
template <class C>
bool launch_group64_config(const Params& p, int max_smem_bytes, int sms, cudaStream_t stream, cudaError_t* err) {
  WgGeometry g;
  cute::TmaDescriptor tma_x{};
  if (!tma_fits<C>(p, C::kTileP + p.k_p - 1) || make_wg_geometry<C>(p, sms).r_split != 1 ||
      plan_config<C>(p, max_smem_bytes, sms, &g) != Fit::kOk || g.r_split != 1 || !x_tensor_map<C>(p, &tma_x)) {
    return false;
  }
  *err = launch_config<C>(p, g, tma_x, sms, stream);
  return true;
}

template <Mode kMode>
bool launch_group64(const Params& p, int max_smem_bytes, cudaStream_t stream, cudaError_t* err) {
  using G = Group64<kMode>;
  const int sms = sm_count();
  if constexpr (G::kHasOwnItems) {
    if (p.c_out <= 64 &&
        launch_group64_config<typename G::template WithItems<true>>(p, max_smem_bytes, sms, stream, err)) {
      return true;
    }
  }
  return launch_group64_config<typename G::Cfg>(p, max_smem_bytes, sms, stream, err);
}

}  // namespace fusedconv::fused::hopper
