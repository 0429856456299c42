// CUDA gather kernels for fusedconv::backward. Math and axis naming: cpp/common/backward_plan.h
// (r = the reduced axis, p/q = the other two; g and argmin are (B, C_out, p_out, q_out)).
//
// Only the argmin position of each min column carries a gradient, so both kernels walk
// (b, c, p, q) columns and never touch a dense conv-output-sized tensor. Every sum has a fixed
// order (per-thread loops, warp butterflies, per-block partials reduced in block order): the
// results are bitwise reproducible run to run, with no floating-point atomics.
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "cuda/backward_kernels.h"

namespace fusedconv {
namespace {

struct Strides5 {
  int64_t s[5];
};

Strides5 strides_of(const at::Tensor& t) {
  Strides5 out;
  for (int i = 0; i < 5; ++i) out.s[i] = t.stride(i);
  return out;
}

// Sizes the kernels need, as plain ints (every extent of a CUDA tensor here fits in int32).
struct Dims {
  int batch, c_in, c_out, r_in, p_in, q_in, k_r, k_p, k_q, r_out, p_out, q_out;
};

Dims dims_of(const BackwardPlan& s) {
  return Dims{(int)s.batch, (int)s.c_in, (int)s.c_out, (int)s.r_in,  (int)s.p_in,  (int)s.q_in,
              (int)s.k_r,   (int)s.k_p,  (int)s.k_q,   (int)s.r_out, (int)s.p_out, (int)s.q_out};
}

template <typename T>
__device__ __forceinline__ T load(const T* p) {
  return __ldg(p);
}
template <>
__device__ __forceinline__ c10::Half load(const c10::Half* p) {
  return *p;
}
template <>
__device__ __forceinline__ c10::BFloat16 load(const c10::BFloat16* p) {
  return *p;
}

// (ATen/cuda/CUDAContext.h is avoided: it needs cuSPARSE headers the build machine lacks.)
int device_attribute(cudaDeviceAttr attr) {
  int value = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, c10::cuda::current_device()));
  return value;
}

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

// g = y * (grad_y - dot) of column `col` = (b * C_out + c) * plane + pq (see MinGrad).
template <typename scalar_t, typename acc_t>
struct MinGradView {
  const scalar_t* __restrict__ y;
  const scalar_t* __restrict__ gy;
  const acc_t* __restrict__ dot;
  int64_t plane;
  __device__ __forceinline__ acc_t operator()(int b, int64_t col, int64_t pq) const {
    return static_cast<acc_t>(load(y + col)) *
           (static_cast<acc_t>(load(gy + col)) - dot[b * plane + pq]);
  }
};

// An argmin is an index into the reduced axis; clamping keeps a bad one (from a forward
// kernel bug) from turning into an out-of-bounds access.
template <typename index_t>
__device__ __forceinline__ int argmin_at(const index_t* amin, int64_t col, int r_out) {
  return min(max(static_cast<int>(amin[col]), 0), r_out - 1);
}

template <typename scalar_t, typename acc_t>
MinGradView<scalar_t, acc_t> view_of(const MinGrad& m) {
  return MinGradView<scalar_t, acc_t>{m.y.data_ptr<scalar_t>(), m.grad_y.data_ptr<scalar_t>(),
                                      m.dot.data_ptr<acc_t>(), m.y.size(2) * m.y.size(3)};
}

// Raises a kernel's dynamic shared memory limit once per (kernel, device, size), so that
// steady-state calls (and CUDA graph captures after a warm-up call) make no attribute calls.
void ensure_dynamic_smem(const void* kernel, size_t bytes) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, size_t> granted;
  const int device = c10::cuda::current_device();
  const std::lock_guard<std::mutex> lock(mutex);
  size_t& have = granted[{kernel, device}];
  if (bytes <= have) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  have = bytes;
}

int shared_memory_budget() {
  // Stay at about half of an SM's shared memory so that two blocks fit per SM.
  return std::min(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin), 110 * 1024);
}

// ---------------------------------------------------------------------------------------------
// dx. One thread per input column (b, j, k) (j along p, k along q; k fastest so that reads of
// y/grad_y/argmin are coalesced). It walks the (c, kp, kq) columns that can reach it and adds
// g * W[c, ci, i - a, kp, kq] to its private accumulators for (ci, i) along the reduced axis,
// kept in shared memory (index (ci, i) * blockDim + tid: conflict-free). The weight is staged
// in shared memory as [c][kp][kq][kr][ci] when it fits. C_in and r are chunked when the
// accumulators do not fit. The next column's loads are issued before the current one is used.
template <typename scalar_t, typename acc_t, typename index_t, bool kWeightInSmem>
__global__ void input_grad_kernel(Dims d, MinGradView<scalar_t, acc_t> g,
                                  const index_t* __restrict__ amin, const scalar_t* __restrict__ w,
                                  Strides5 ws, scalar_t* __restrict__ dx, Strides5 xs,
                                  int ci_chunk, int r_chunk) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  acc_t* acc = reinterpret_cast<acc_t*>(smem_raw);
  acc_t* w_s = acc + static_cast<size_t>(ci_chunk) * r_chunk * nthreads;
  const int taps = d.k_r * d.k_p * d.k_q;
  if constexpr (kWeightInSmem) {
    for (int e = tid; e < d.c_out * d.c_in * taps; e += nthreads) {
      const int ci = e % d.c_in, kr = (e / d.c_in) % d.k_r, kq = (e / (d.c_in * d.k_r)) % d.k_q;
      const int kp = (e / (d.c_in * d.k_r * d.k_q)) % d.k_p, c = e / (d.c_in * taps);
      w_s[e] = static_cast<acc_t>(
          load(w + c * ws.s[0] + ci * ws.s[1] + kr * ws.s[2] + kp * ws.s[3] + kq * ws.s[4]));
    }
    __syncthreads();
  }
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * nthreads + tid;
  if (idx >= static_cast<int64_t>(d.batch) * d.p_in * d.q_in) return;  // no barriers below
  const int k = static_cast<int>(idx % d.q_in);
  const int j = static_cast<int>((idx / d.q_in) % d.p_in);
  const int b = static_cast<int>(idx / (static_cast<int64_t>(d.q_in) * d.p_in));
  const int64_t plane = static_cast<int64_t>(d.p_out) * d.q_out;
  const int kp_lo = max(0, j - d.p_out + 1), kp_hi = min(d.k_p - 1, j);
  const int kq_lo = max(0, k - d.q_out + 1), kq_hi = min(d.k_q - 1, k);
  const int nkq = kq_hi - kq_lo + 1;
  const int per_c = (kp_hi - kp_lo + 1) * nkq;  // columns per channel that reach this thread
  const int steps = d.c_out * per_c;

  // Column `step` -> (c, kp, kq) and its g, argmin.
  auto fetch = [&](int step, int& c, int& kp, int& kq, acc_t& gv, int& a) {
    c = step / per_c;
    const int rest = step - c * per_c;
    kp = kp_lo + rest / nkq;
    kq = kq_lo + rest % nkq;
    const int64_t pq = static_cast<int64_t>(j - kp) * d.q_out + (k - kq);
    const int64_t col = (static_cast<int64_t>(b) * d.c_out + c) * plane + pq;
    gv = g(b, col, pq);
    a = argmin_at(amin, col, d.r_out);
  };

  for (int ci0 = 0; ci0 < d.c_in; ci0 += ci_chunk) {
    const int nci = min(ci_chunk, d.c_in - ci0);
    for (int i0 = 0; i0 < d.r_in; i0 += r_chunk) {
      const int nr = min(r_chunk, d.r_in - i0);
      for (int e = 0; e < nci * nr; ++e) acc[e * nthreads + tid] = acc_t(0);
      int c = 0, kp = 0, kq = 0, a = 0;
      acc_t gv = acc_t(0);
      if (steps > 0) fetch(0, c, kp, kq, gv, a);
      for (int step = 0; step < steps; ++step) {
        int c_n = 0, kp_n = 0, kq_n = 0, a_n = 0;
        acc_t gv_n = acc_t(0);
        if (step + 1 < steps) fetch(step + 1, c_n, kp_n, kq_n, gv_n, a_n);
        const int a_rel = a - i0;
        const int kr_lo = max(0, -a_rel), kr_hi = min(d.k_r, nr - a_rel);
        for (int kr = kr_lo; kr < kr_hi; ++kr) {
          acc_t* out = acc + (a_rel + kr) * nthreads + tid;
          if constexpr (kWeightInSmem) {
            const acc_t* wv = w_s + (((c * d.k_p + kp) * d.k_q + kq) * d.k_r + kr) * d.c_in + ci0;
            for (int cc = 0; cc < nci; ++cc) out[cc * nr * nthreads] += gv * wv[cc];
          } else {
            const scalar_t* wb = w + c * ws.s[0] + ci0 * ws.s[1] + kr * ws.s[2] + kp * ws.s[3] +
                                 kq * ws.s[4];
            for (int cc = 0; cc < nci; ++cc) {
              out[cc * nr * nthreads] += gv * static_cast<acc_t>(load(wb + cc * ws.s[1]));
            }
          }
        }
        c = c_n, kp = kp_n, kq = kq_n, gv = gv_n, a = a_n;
      }
      scalar_t* dst = dx + b * xs.s[0] + j * xs.s[3] + k * xs.s[4];
      for (int cc = 0; cc < nci; ++cc) {
        for (int i = 0; i < nr; ++i) {
          dst[(ci0 + cc) * xs.s[1] + (i0 + i) * xs.s[2]] =
              static_cast<scalar_t>(acc[(cc * nr + i) * nthreads + tid]);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// dW, staged path. A block owns tiles of (b, kRows rows of p, 32 columns of q) and stages
// x[b, ci-chunk, all r, the tile's rows + halo, cols + halo] in shared memory, each r-plane
// padded to a multiple of 32 words so that lanes reading different argmin planes still hit
// distinct banks. Channels are dealt out to warps. For its channel c, lane l owns column
// q0 + l: it sums g * x over the tile's rows for 32 taps at a time in registers; one warp
// butterfly then leaves tap t's sum over the 32 columns in lane t, which adds it to the block's
// accumulator for (c, tap) in shared memory (each (c, tap) has one owner: no races). Blocks loop
// over tiles and end by writing per-block partial sums (reduced in block order by
// weight_grad_reduce_kernel).
constexpr int kRows = 8;

template <int kOffset, typename acc_t>
__device__ __forceinline__ void butterfly_step(acc_t (&v)[32], int lane) {
  const bool upper = lane & kOffset;
#pragma unroll
  for (int u = 0; u < kOffset; ++u) {
    const acc_t send = upper ? v[u] : v[u + kOffset];
    const acc_t keep = upper ? v[u + kOffset] : v[u];
    v[u] = keep + __shfl_xor_sync(0xffffffffu, send, kOffset);
  }
}

struct StagedConfig {
  int warps;         // warps per block; channel c goes to warp c % warps
  int c_chunk;       // channels per block (grid.y chunks C_out)
  int ci_chunk;      // input channels per block (grid.z chunks C_in)
  int rows, cols;    // staged tile extents: kRows + k_p - 1, 32 + k_q - 1
  int plane_stride;  // rows * cols rounded up to a multiple of 32
  int taps_chunk;    // ci_chunk * k_r * k_p * k_q
  int taps_padded;   // taps_chunk rounded up to a multiple of 32
  size_t smem_bytes;
};

template <typename acc_t>
StagedConfig staged_config(const Dims& d, int warps, int c_chunk, int ci_chunk) {
  StagedConfig cfg;
  cfg.warps = warps;
  cfg.c_chunk = c_chunk;
  cfg.ci_chunk = ci_chunk;
  cfg.rows = kRows + d.k_p - 1;
  cfg.cols = 32 + d.k_q - 1;
  cfg.plane_stride = (cfg.rows * cfg.cols + 31) / 32 * 32;
  cfg.taps_chunk = ci_chunk * d.k_r * d.k_p * d.k_q;
  cfg.taps_padded = (cfg.taps_chunk + 31) / 32 * 32;
  cfg.smem_bytes = sizeof(acc_t) * (static_cast<size_t>(ci_chunk) * d.r_in * cfg.plane_stride +
                                    static_cast<size_t>(c_chunk) * cfg.taps_chunk) +
                   sizeof(int) * cfg.taps_padded;
  return cfg;
}

template <typename scalar_t, typename acc_t, typename index_t>
__global__ void weight_grad_staged_kernel(Dims d, StagedConfig cfg,
                                          MinGradView<scalar_t, acc_t> g,
                                          const index_t* __restrict__ amin,
                                          const scalar_t* __restrict__ x, Strides5 xs,
                                          acc_t* __restrict__ partial) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  acc_t* x_tile = reinterpret_cast<acc_t*>(smem_raw);
  acc_t* block_acc = x_tile + static_cast<size_t>(cfg.ci_chunk) * d.r_in * cfg.plane_stride;
  int* tap_offset = reinterpret_cast<int*>(block_acc + cfg.c_chunk * cfg.taps_chunk);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int c0 = blockIdx.y * cfg.c_chunk;
  const int nc = min(cfg.c_chunk, d.c_out - c0);
  const int ci0 = blockIdx.z * cfg.ci_chunk;
  const int nci = min(cfg.ci_chunk, d.c_in - ci0);
  const int taps = nci * d.k_r * d.k_p * d.k_q;  // this block's taps (last ci chunk may be short)

  for (int t = tid; t < cfg.taps_padded; t += blockDim.x) {
    int off = 0;
    if (t < taps) {
      const int kq = t % d.k_q, kp = (t / d.k_q) % d.k_p, kr = (t / (d.k_q * d.k_p)) % d.k_r;
      const int cc = t / (d.k_q * d.k_p * d.k_r);
      off = (cc * d.r_in + kr) * cfg.plane_stride + kp * cfg.cols + kq;
    }
    tap_offset[t] = off;
  }
  for (int e = tid; e < cfg.c_chunk * cfg.taps_chunk; e += blockDim.x) block_acc[e] = acc_t(0);

  const int tiles_p = (d.p_out + kRows - 1) / kRows;
  const int tiles_q = (d.q_out + 31) / 32;
  const int64_t num_tiles = static_cast<int64_t>(d.batch) * tiles_p * tiles_q;
  const int64_t plane = static_cast<int64_t>(d.p_out) * d.q_out;
  const int lines = nci * d.r_in * cfg.rows;

  for (int64_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const int tq = static_cast<int>(tile % tiles_q);
    const int tp = static_cast<int>((tile / tiles_q) % tiles_p);
    const int b = static_cast<int>(tile / (static_cast<int64_t>(tiles_q) * tiles_p));
    const int p0 = tp * kRows, q0 = tq * 32;

    __syncthreads();  // previous tile's readers are done (and the tables above are written)
    const scalar_t* xb = x + b * xs.s[0] + ci0 * xs.s[1];
    for (int line = warp; line < lines; line += cfg.warps) {
      const int row = line % cfg.rows;
      const int r = (line / cfg.rows) % d.r_in;
      const int cc = line / (cfg.rows * d.r_in);
      const int gp = p0 + row;
      const scalar_t* src = xb + cc * xs.s[1] + r * xs.s[2] + gp * xs.s[3];
      acc_t* dst = x_tile + (cc * d.r_in + r) * cfg.plane_stride + row * cfg.cols;
      for (int col = lane; col < cfg.cols; col += 32) {
        const int gq = q0 + col;
        dst[col] = (gp < d.p_in && gq < d.q_in) ? static_cast<acc_t>(load(src + gq * xs.s[4]))
                                                : acc_t(0);
      }
    }
    __syncthreads();

    const int q = q0 + lane;
    for (int c = warp; c < nc; c += cfg.warps) {
      acc_t gv[kRows];
      int base[kRows];
      bool valid[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int p = p0 + r;
        valid[r] = p < d.p_out && q < d.q_out;
        const int64_t pq = static_cast<int64_t>(p) * d.q_out + q;
        const int64_t col = (static_cast<int64_t>(b) * d.c_out + c0 + c) * plane + pq;
        gv[r] = valid[r] ? g(b, col, pq) : acc_t(0);
        const int a = valid[r] ? argmin_at(amin, col, d.r_out) : 0;
        base[r] = a * cfg.plane_stride + r * cfg.cols + lane;
      }
      for (int t0 = 0; t0 < taps; t0 += 32) {
        acc_t v[32];
#pragma unroll
        for (int u = 0; u < 32; ++u) v[u] = acc_t(0);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const acc_t* xr = x_tile + base[r];
#pragma unroll
          for (int u = 0; u < 32; ++u) {
            const acc_t prod = gv[r] * xr[tap_offset[t0 + u]];
            v[u] += valid[r] ? prod : acc_t(0);  // a select: 0 * inf would be NaN
          }
        }
        butterfly_step<16>(v, lane);
        butterfly_step<8>(v, lane);
        butterfly_step<4>(v, lane);
        butterfly_step<2>(v, lane);
        butterfly_step<1>(v, lane);
        if (t0 + lane < taps) block_acc[c * cfg.taps_chunk + t0 + lane] += v[0];
      }
    }
  }

  __syncthreads();
  const int taps_total = d.c_in * d.k_r * d.k_p * d.k_q;
  for (int e = tid; e < nc * taps; e += blockDim.x) {
    const int c = e / taps, t = e % taps;
    const int t_global = ci0 * d.k_r * d.k_p * d.k_q + t;
    partial[(static_cast<int64_t>(blockIdx.x) * d.c_out + c0 + c) * taps_total + t_global] =
        block_acc[c * cfg.taps_chunk + t];
  }
}

// Sums the per-block partials in block order and writes dW through its (permuted) strides.
template <typename scalar_t, typename acc_t>
__global__ void weight_grad_reduce_kernel(Dims d, const acc_t* __restrict__ partial, int blocks,
                                          scalar_t* __restrict__ dw, Strides5 ws) {
  const int taps_total = d.c_in * d.k_r * d.k_p * d.k_q;
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= d.c_out * taps_total) return;
  acc_t sum = acc_t(0);
  for (int blk = 0; blk < blocks; ++blk) sum += partial[static_cast<int64_t>(blk) * d.c_out * taps_total + o];
  const int c = o / taps_total, t = o % taps_total;
  const int kq = t % d.k_q, kp = (t / d.k_q) % d.k_p, kr = (t / (d.k_q * d.k_p)) % d.k_r;
  const int ci = t / (d.k_q * d.k_p * d.k_r);
  dw[c * ws.s[0] + ci * ws.s[1] + kr * ws.s[2] + kp * ws.s[3] + kq * ws.s[4]] =
      static_cast<scalar_t>(sum);
}

// dW, fallback for shapes whose staged tile does not fit in shared memory: one block per weight
// element, gathering x from global memory; a fixed-order tree reduction per block.
template <typename scalar_t, typename acc_t, typename index_t>
__global__ void weight_grad_direct_kernel(Dims d, MinGradView<scalar_t, acc_t> g,
                                          const index_t* __restrict__ amin,
                                          const scalar_t* __restrict__ x, Strides5 xs,
                                          scalar_t* __restrict__ dw, Strides5 ws) {
  __shared__ acc_t red[256];
  const int taps_total = d.c_in * d.k_r * d.k_p * d.k_q;
  const int o = blockIdx.x;
  const int c = o / taps_total, t = o % taps_total;
  const int kq = t % d.k_q, kp = (t / d.k_q) % d.k_p, kr = (t / (d.k_q * d.k_p)) % d.k_r;
  const int ci = t / (d.k_q * d.k_p * d.k_r);
  const int64_t plane = static_cast<int64_t>(d.p_out) * d.q_out;
  const int64_t n_cols = static_cast<int64_t>(d.batch) * plane;
  acc_t sum = acc_t(0);
  for (int64_t n = threadIdx.x; n < n_cols; n += blockDim.x) {
    const int b = static_cast<int>(n / plane);
    const int p = static_cast<int>((n % plane) / d.q_out), q = static_cast<int>(n % d.q_out);
    const int64_t col = (static_cast<int64_t>(b) * d.c_out + c) * plane + n % plane;
    const int a = argmin_at(amin, col, d.r_out);
    sum += g(b, col, n % plane) * static_cast<acc_t>(load(x + b * xs.s[0] + ci * xs.s[1] + (a + kr) * xs.s[2] +
                                            (p + kp) * xs.s[3] + (q + kq) * xs.s[4]));
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) red[threadIdx.x] += red[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    dw[c * ws.s[0] + ci * ws.s[1] + kr * ws.s[2] + kp * ws.s[3] + kq * ws.s[4]] =
        static_cast<scalar_t>(red[0]);
  }
}

template <typename scalar_t, typename index_t>
void input_grad_launch(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& amin,
                       const at::Tensor& w_p, const at::Tensor& dx_p) {
  using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
  const Dims d = dims_of(plan);
  const int64_t columns = plan.batch * plan.p_in * plan.q_in;
  if (columns == 0) return;
  constexpr int kThreads = 128;
  const int budget = shared_memory_budget();
  // The weight goes to shared memory when it takes at most a quarter of the budget.
  const int w_bytes = static_cast<int>(plan.c_out * plan.taps() * sizeof(acc_t));
  const bool w_in_smem = w_bytes <= budget / 4;
  const int acc_budget = budget - (w_in_smem ? w_bytes : 0);
  // Accumulators per thread: ci_chunk * r_chunk values. Prefer all of r, then shrink C_in.
  const int per_value = kThreads * static_cast<int>(sizeof(acc_t));
  const int r_chunk = std::max(1, std::min(d.r_in, acc_budget / per_value));
  const int ci_chunk = std::max(1, std::min(d.c_in, acc_budget / (per_value * r_chunk)));
  const size_t smem = static_cast<size_t>(ci_chunk) * r_chunk * per_value + (w_in_smem ? w_bytes : 0);
  auto kernel = w_in_smem ? input_grad_kernel<scalar_t, acc_t, index_t, true>
                          : input_grad_kernel<scalar_t, acc_t, index_t, false>;
  ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem);
  const int64_t blocks = (columns + kThreads - 1) / kThreads;
  kernel<<<static_cast<unsigned>(blocks), kThreads, smem, current_stream()>>>(
      d, view_of<scalar_t, acc_t>(m), amin.data_ptr<index_t>(), w_p.data_ptr<scalar_t>(),
      strides_of(w_p), dx_p.data_ptr<scalar_t>(), strides_of(dx_p), ci_chunk, r_chunk);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename index_t>
void weight_grad_launch(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& amin,
                        const at::Tensor& x_p, const at::Tensor& dw_p) {
  using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
  const Dims d = dims_of(plan);
  const cudaStream_t stream = current_stream();
  const int64_t columns = plan.batch * plan.p_out * plan.q_out;
  if (columns == 0) {
    dw_p.zero_();
    return;
  }
  const size_t budget = static_cast<size_t>(shared_memory_budget());
  constexpr int kWarps = 8;
  int c_chunk = d.c_out, ci_chunk = d.c_in;
  StagedConfig cfg = staged_config<acc_t>(d, kWarps, c_chunk, ci_chunk);
  while (cfg.smem_bytes > budget) {
    const size_t acc_bytes = sizeof(acc_t) * static_cast<size_t>(c_chunk) * cfg.taps_chunk;
    if (c_chunk > 1 && 2 * acc_bytes >= cfg.smem_bytes) {
      c_chunk = (c_chunk + 1) / 2;
    } else if (ci_chunk > 1) {
      ci_chunk = (ci_chunk + 1) / 2;
    } else if (c_chunk > 1) {
      c_chunk = (c_chunk + 1) / 2;
    } else {
      break;
    }
    cfg = staged_config<acc_t>(d, kWarps, c_chunk, ci_chunk);
  }
  const int taps_total = static_cast<int>(plan.taps());
  if (cfg.smem_bytes > budget) {
    weight_grad_direct_kernel<scalar_t, acc_t, index_t>
        <<<static_cast<unsigned>(d.c_out * taps_total), 256, 0, stream>>>(
            d, view_of<scalar_t, acc_t>(m), amin.data_ptr<index_t>(), x_p.data_ptr<scalar_t>(),
            strides_of(x_p), dw_p.data_ptr<scalar_t>(), strides_of(dw_p));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }

  const int c_chunks = (d.c_out + c_chunk - 1) / c_chunk;
  const int ci_chunks = (d.c_in + ci_chunk - 1) / ci_chunk;
  const int64_t num_tiles =
      static_cast<int64_t>(d.batch) * ((d.p_out + kRows - 1) / kRows) * ((d.q_out + 31) / 32);
  const int sms = device_attribute(cudaDevAttrMultiProcessorCount);
  const int blocks_x = static_cast<int>(std::max<int64_t>(
      1, std::min<int64_t>(num_tiles, (2 * sms + c_chunks * ci_chunks - 1) / (c_chunks * ci_chunks))));
  at::Tensor partial = at::empty({blocks_x, d.c_out, taps_total}, m.dot.options());
  auto kernel = weight_grad_staged_kernel<scalar_t, acc_t, index_t>;
  ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), cfg.smem_bytes);
  kernel<<<dim3(blocks_x, c_chunks, ci_chunks), 32 * kWarps, cfg.smem_bytes, stream>>>(
      d, cfg, view_of<scalar_t, acc_t>(m), amin.data_ptr<index_t>(), x_p.data_ptr<scalar_t>(),
      strides_of(x_p), partial.data_ptr<acc_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int outputs = d.c_out * taps_total;
  weight_grad_reduce_kernel<scalar_t, acc_t><<<(outputs + 255) / 256, 256, 0, stream>>>(
      d, partial.data_ptr<acc_t>(), blocks_x, dw_p.data_ptr<scalar_t>(), strides_of(dw_p));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// dot[b, pq] = sum_c grad_y * y: one thread per (b, pq), channels summed in order.
template <typename scalar_t, typename acc_t>
__global__ void softmax_dot_kernel(int batch, int c_out, int64_t plane,
                                   const scalar_t* __restrict__ y,
                                   const scalar_t* __restrict__ gy, acc_t* __restrict__ dot) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= batch * plane) return;
  const int64_t b = idx / plane, pq = idx % plane;
  acc_t sum = acc_t(0);
  for (int c = 0; c < c_out; ++c) {
    const int64_t col = (b * c_out + c) * plane + pq;
    sum += static_cast<acc_t>(load(y + col)) * static_cast<acc_t>(load(gy + col));
  }
  dot[idx] = sum;
}

// db[c] = sum over (b, pq) of g: one block per channel, a fixed-order tree reduction.
template <typename scalar_t, typename acc_t>
__global__ void bias_grad_kernel(int batch, int c_out, MinGradView<scalar_t, acc_t> g,
                                 scalar_t* __restrict__ db) {
  constexpr int kThreads = 512;
  __shared__ acc_t red[kThreads];
  const int c = blockIdx.x;
  acc_t sum = acc_t(0);
  for (int b = 0; b < batch; ++b) {
    const int64_t col_c = (static_cast<int64_t>(b) * c_out + c) * g.plane;
    for (int64_t pq = threadIdx.x; pq < g.plane; pq += kThreads) sum += g(b, col_c + pq, pq);
  }
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) red[threadIdx.x] += red[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = static_cast<scalar_t>(red[0]);
}

template <typename F>
void dispatch_index(const at::Tensor& amin, F&& f) {
  if (amin.scalar_type() == at::kByte) {
    f(uint8_t{});
  } else {
    TORCH_CHECK(amin.scalar_type() == at::kInt, "fusedconv.backward: argmin must be uint8 or int32");
    f(int32_t{});
  }
}

}  // namespace

at::Tensor softmax_dot_cuda(const at::Tensor& y, const at::Tensor& grad_y) {
  const int64_t batch = y.size(0), c_out = y.size(1), plane = y.size(2) * y.size(3);
  at::Tensor dot = at::empty({batch, y.size(2), y.size(3)},
                             y.options().dtype(accumulate_type(y.scalar_type())));
  if (dot.numel() == 0) return dot;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, y.scalar_type(), "fusedconv_dot", [&] {
    using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    const int64_t n = batch * plane;
    softmax_dot_kernel<scalar_t, acc_t><<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                                          current_stream()>>>(
        static_cast<int>(batch), static_cast<int>(c_out), plane, y.data_ptr<scalar_t>(),
        grad_y.data_ptr<scalar_t>(), dot.data_ptr<acc_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return dot;
}

at::Tensor bias_grad_cuda(const MinGrad& m) {
  at::Tensor db = at::empty({m.y.size(1)}, m.y.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, m.y.scalar_type(), "fusedconv_db", [&] {
    using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
    bias_grad_kernel<scalar_t, acc_t><<<static_cast<unsigned>(m.y.size(1)), 512, 0,
                                        current_stream()>>>(
        static_cast<int>(m.y.size(0)), static_cast<int>(m.y.size(1)), view_of<scalar_t, acc_t>(m),
        db.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return db;
}

void input_grad_cuda(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& argmin,
                     const at::Tensor& weight_p, const at::Tensor& dx_p) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, weight_p.scalar_type(),
                                  "fusedconv_input_grad_cuda", [&] {
    dispatch_index(argmin, [&](auto index) {
      input_grad_launch<scalar_t, decltype(index)>(plan, m, argmin, weight_p, dx_p);
    });
  });
}

void weight_grad_cuda(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& argmin,
                      const at::Tensor& x_p, const at::Tensor& dw_p) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x_p.scalar_type(),
                                  "fusedconv_weight_grad_cuda", [&] {
    dispatch_index(argmin, [&](auto index) {
      weight_grad_launch<scalar_t, decltype(index)>(plan, m, argmin, x_p, dw_p);
    });
  });
}

}  // namespace fusedconv
