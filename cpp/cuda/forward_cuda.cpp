// CUDA entry point for fusedconv::forward: validates, then runs the fused CuTe kernel
// (cpp/cuda/fused_*.cu) or, where it does not apply, the ATen composite.
#include "cuda/forward_cuda.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/library.h>

#include <climits>
#include <string>

#include "common/composite.h"
#include "cuda/fused_params.h"

namespace fusedconv {
namespace {

// float32 follows torch.get_float32_matmul_precision(): "highest" needs fp32 accuracy
// (3xTF32), "high"/"medium" allow TF32. float64 has no fused kernel.
std::optional<fused::Mode> fused_mode(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGHEST
                 ? fused::Mode::k3xTF32
                 : fused::Mode::kTF32;
    case at::kBFloat16: return fused::Mode::kBF16;
    case at::kHalf: return fused::Mode::kFP16;
    default: return std::nullopt;
  }
}

// kernel_path names: "cuda-fused-<mode>" (mma.sync) or "cuda-wgmma-<mode>" (sm_90a).
std::string path_name(fused::Mode mode, fused::Family family) {
  const char* prefix = family == fused::Family::kWgmma ? "cuda-wgmma-" : "cuda-fused-";
  switch (mode) {
    case fused::Mode::kTF32: return std::string(prefix) + "tf32";
    case fused::Mode::k3xTF32: return std::string(prefix) + "3xtf32";
    case fused::Mode::kBF16: return std::string(prefix) + "bf16";
    case fused::Mode::kFP16: return std::string(prefix) + "fp16";
    case fused::Mode::kBF16F32: return std::string(prefix) + "autocast-bf16";
    case fused::Mode::kFP16F32: return std::string(prefix) + "autocast-fp16";
  }
  return "cuda-fused";
}

// Sizes and element strides permuted so that R = the reduced axis, (P, Q) = the kept ones.
fused::Params make_params(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                          const std::optional<at::Tensor>& bias) {
  const int r_axis = static_cast<int>(p.dim);
  const int p_axis = r_axis == 2 ? 3 : 2;
  const int q_axis = r_axis == 4 ? 3 : 4;
  fused::Params k{};
  k.x = x.data_ptr();
  k.weight = weight.data_ptr();
  k.bias = bias.has_value() ? bias->data_ptr() : nullptr;
  k.batch = static_cast<int>(p.batch);
  k.c_in = static_cast<int>(p.c_in);
  k.c_out = static_cast<int>(p.c_out);
  k.r_in = static_cast<int>(x.size(r_axis));
  k.p_in = static_cast<int>(x.size(p_axis));
  k.q_in = static_cast<int>(x.size(q_axis));
  k.k_r = static_cast<int>(weight.size(r_axis));
  k.k_p = static_cast<int>(weight.size(p_axis));
  k.k_q = static_cast<int>(weight.size(q_axis));
  k.r_out = k.r_in - k.k_r + 1;
  k.p_out = k.p_in - k.k_p + 1;
  k.q_out = k.q_in - k.k_q + 1;
  k.xs_b = x.stride(0);
  k.xs_c = x.stride(1);
  k.xs_r = x.stride(r_axis);
  k.xs_p = x.stride(p_axis);
  k.xs_q = x.stride(q_axis);
  k.ws_n = weight.stride(0);
  k.ws_c = weight.stride(1);
  k.ws_r = weight.stride(r_axis);
  k.ws_p = weight.stride(p_axis);
  k.ws_q = weight.stride(q_axis);
  k.bs_n = bias.has_value() ? bias->stride(0) : 0;
  return k;
}

// 3xTF32's error grows with K = C_in*kD*kH*kW (the tensor cores truncate each fp32 sum).
// Worst of 40 seeds per row on the H200 (2026-11-30, .ci/precision_sweep.py), against the
// "highest" bound of 1e-5: the wgmma kernel 4.1e-6 at K ~ 250, 5.9e-6 at 324, 7.3e-6 at
// 375-500 (float32 eager: up to 6.9e-6 there), 8.0e-6 at 625; the mma.sync kernel (its small
// terms in their own accumulator) 2.7e-6 at 250, 4.6e-6 at 648, but there the composite's
// math beat it (1190 vs 636 µs, K = 648, C_out = 24), so it stops at 256. Longer reductions
// go to the composite (cuDNN in fp32).
constexpr int64_t kMax3xTF32ReductionWgmma = 512;
constexpr int64_t kMax3xTF32ReductionMmaSync = 256;

struct Route {
  std::optional<fused::Mode> mode;  // nullopt: composite
  fused::Family family = fused::Family::kMmaSync;
  fused::Params params{};
  int max_smem = 0;
};

// Decides between fused kernel and composite for `mode` (nullopt: composite); identical for
// forward and kernel_path. The autocast modes have the wgmma kernel only.
Route route(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
            const std::optional<at::Tensor>& bias, std::optional<fused::Mode> mode) {
  Route r;
  if (!mode || p.batch == 0) return r;
  const int64_t reduction = p.c_in * p.k_d * p.k_h * p.k_w;
  const bool split3x = *mode == fused::Mode::k3xTF32;
  if (split3x && reduction > kMax3xTF32ReductionWgmma) return r;
  // Each extent goes into an int; element offsets stay 64-bit.
  for (int64_t v : {p.batch, p.c_in, p.c_out, p.depth, p.height, p.width}) {
    if (v > INT_MAX) return r;
  }
  int major = 0, minor = 0;
  const int device = x.get_device();
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major < 8) return r;  // the kernels are built for sm_80 and newer
  C10_CUDA_CHECK(
      cudaDeviceGetAttribute(&r.max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  r.params = make_params(p, x, weight, bias);
  // sm_90a code runs on compute capability 9.0 only; elsewhere (and where the wgmma
  // kernel does not fit) the mma.sync kernel takes the problem.
  if (major == 9 && minor == 0 && fused::hopper_kernels_built() &&
      fused::plan_fused(r.params, *mode, fused::Family::kWgmma, r.max_smem) == fused::Fit::kOk) {
    r.mode = mode;
    r.family = fused::Family::kWgmma;
  } else if ((!split3x || reduction <= kMax3xTF32ReductionMmaSync) &&
             fused::plan_fused(r.params, *mode, fused::Family::kMmaSync, r.max_smem) ==
                 fused::Fit::kOk) {
    r.mode = mode;
  }
  return r;
}

// Runs a fused route (r.mode set): allocates y (x's dtype and device) and the argmin.
at::Tensor run_fused(Route& r, const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                     at::Tensor* argmin) {
  at::Tensor y = at::empty(p.output_sizes(), x.options());
  r.params.y = y.data_ptr();
  if (argmin != nullptr) {
    *argmin = at::empty(p.output_sizes(), x.options().dtype(at::kInt));
    r.params.argmin = argmin->data_ptr<int32_t>();
  }
  // The wgmma kernel's persistent grids claim their work items from this counter (the
  // launch zeroes it; the caching allocator orders its reuse after this stream's kernel).
  at::Tensor item_counter;
  if (r.family == fused::Family::kWgmma) {
    item_counter = at::empty({1}, x.options().dtype(at::kInt));
    r.params.item_counter = item_counter.data_ptr<int32_t>();
  }
  const cudaError_t err =
      fused::launch_fused(r.params, *r.mode, r.family, r.max_smem,
                          c10::cuda::getCurrentCUDAStream(x.get_device()).stream());
  TORCH_CHECK(err == cudaSuccess, "fusedconv.forward: fused CUDA kernel (", path_name(*r.mode, r.family),
              ") failed to launch for x ", x.sizes(), ", weight ", weight.sizes(), ": ",
              cudaGetErrorString(err));
  return y;
}

// The autocast route: float32 data with `low` operands (only the wgmma kernel plans the
// autocast modes).
Route autocast_route(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, at::ScalarType low) {
  const bool float32 = x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
                       (!bias.has_value() || bias->scalar_type() == at::kFloat);
  if (!float32 || (low != at::kBFloat16 && low != at::kHalf)) return {};
  return route(p, x, weight, bias, low == at::kBFloat16 ? fused::Mode::kBF16F32 : fused::Mode::kFP16F32);
}

}  // namespace

at::Tensor forward_cuda_impl(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin) {
  const c10::cuda::CUDAGuard guard(x.device());
  if (p.batch == 0) {
    if (argmin != nullptr) *argmin = at::empty(p.output_sizes(), x.options().dtype(at::kInt));
    return at::empty(p.output_sizes(), x.options());
  }
  Route r = route(p, x, weight, bias, fused_mode(x.scalar_type()));
  if (!r.mode) return composite_forward(x, weight, bias, p.dim, argmin);
  return run_fused(r, p, x, weight, argmin);
}

std::string cuda_kernel_path(const Problem& p, const at::Tensor& x, const at::Tensor& weight) {
  // The bias never changes the route; pass an absent one.
  const c10::cuda::CUDAGuard guard(x.device());
  const Route r = route(p, x, weight, std::nullopt, fused_mode(x.scalar_type()));
  return r.mode ? path_name(*r.mode, r.family) : "cuda-composite";
}

std::optional<at::Tensor> forward_cuda_autocast(const at::Tensor& x, const at::Tensor& weight,
                                                const std::optional<at::Tensor>& bias, int64_t dim,
                                                at::ScalarType low) {
  const Problem p = check_inputs(x, weight, bias, dim);
  const c10::cuda::CUDAGuard guard(x.device());
  Route r = autocast_route(p, x, weight, bias, low);
  if (!r.mode) return std::nullopt;
  return run_fused(r, p, x, weight, nullptr);
}

std::optional<std::string> cuda_kernel_path_autocast(const at::Tensor& x, const at::Tensor& weight,
                                                     const std::optional<at::Tensor>& bias, int64_t dim,
                                                     at::ScalarType low) {
  const Problem p = check_inputs(x, weight, bias, dim);
  const c10::cuda::CUDAGuard guard(x.device());
  const Route r = autocast_route(p, x, weight, bias, low);
  if (!r.mode) return std::nullopt;
  return path_name(*r.mode, r.family);
}

namespace {

at::Tensor forward_cuda(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  return forward_cuda_impl(p, x, weight, bias, nullptr);
}

std::string kernel_path_cuda(const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, int64_t dim) {
  return cuda_kernel_path(check_inputs(x, weight, bias, dim), x, weight);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CUDA, m) {
  m.impl("forward", &forward_cuda);
  m.impl("kernel_path", &kernel_path_cuda);
}

}  // namespace fusedconv
