#pragma once
// Plain-C++ interface between the torch side (forward_cuda.cpp) and the fused CuTe kernel
// (fused_kernel_*.cu). No torch headers here, so the kernels compile fast and alone.
//
// The conv is symmetric in its three spatial axes (stride 1, no padding), so every `dim`
// maps onto one problem: R = the reduced axis (the kernel streams along it), P and Q = the
// two kept axes (the output is (B, C_out, P_out, Q_out), contiguous). The torch side
// permutes sizes and element strides of x and weight accordingly; no data is copied.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fusedconv::fused {

enum class Mode : int {
  kTF32 = 0,    // float32 in, one TF32 MMA (float32 matmul precision "high"/"medium")
  k3xTF32 = 1,  // float32 in, big/small split, 3 TF32 MMAs ("highest")
  kBF16 = 2,    // bfloat16 in/out, m16n8k16, fp32 accumulate
  kFP16 = 3,    // float16 in/out, m16n8k16, fp32 accumulate
  // float32 in/out with 16-bit MMA operands, for torch.autocast (wgmma kernel only): x and
  // the weights are rounded to the operand type as autocast's casts would round them.
  kBF16F32 = 4,
  kFP16F32 = 5,
};

// The float32-data, 16-bit-operand modes above (autocast).
constexpr bool is_autocast_mode(Mode m) { return m == Mode::kBF16F32 || m == Mode::kFP16F32; }

struct Params {
  const void* x;       // (B, C_in, ...) element type of the mode
  const void* weight;  // (C_out, C_in, ...)
  const void* bias;    // (C_out,) or nullptr
  void* y;             // (B, C_out, P_out, Q_out), contiguous, element type of the mode
  int32_t* argmin;     // same shape as y, or nullptr: torch.min's index along R
  // One device int the wgmma kernel's persistent grids claim work items from (zeroed by the
  // launch), or nullptr: every CTA takes a fixed share (wgmma_launch.cuh, launch_config).
  int32_t* item_counter;

  int batch, c_in, c_out;
  int r_in, p_in, q_in;     // input extents along R, P, Q
  int k_r, k_p, k_q;        // kernel extents along R, P, Q
  int r_out, p_out, q_out;  // conv output extents
  // Element strides (x: b, c, r, p, q; weight: n, c, r, p, q; bias: n).
  int64_t xs_b, xs_c, xs_r, xs_p, xs_q;
  int64_t ws_n, ws_c, ws_r, ws_p, ws_q;
  int64_t bs_n;
};

// Why a fused kernel cannot take a problem (kOk when it can).
enum class Fit : int { kOk = 0, kTooManyChannels, kSharedMemory, kGridSize, kNotBuilt };

// The two kernel families: mma.sync (sm_80 and newer, any C_out <= 128, k <= 5 per axis)
// and wgmma (sm_90 only, built with the 90a target; C_out <= 256 in groups of <= 32,
// k along R <= 3).
enum class Family : int { kMmaSync = 0, kWgmma = 1 };

// Whether this build holds the sm_90a (wgmma) kernels.
bool hopper_kernels_built();

// Picks the tile shape and checks the shared-memory budget (max_smem_bytes: the device's
// opt-in limit per block). Does not launch.
Fit plan_fused(const Params& p, Mode mode, Family family, int max_smem_bytes);

// Launches the fused kernel on `stream` (asynchronous; no host syncs, no allocations).
// Returns the launch error, if any. Call only when plan_fused(...) == kOk.
cudaError_t launch_fused(const Params& p, Mode mode, Family family, int max_smem_bytes,
                         cudaStream_t stream);

}  // namespace fusedconv::fused
