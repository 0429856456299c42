// CUDA entry point for fusedconv::forward: validates, then picks the fused kernel or the
// composite fallback.  PLACEHOLDER: composite only until the fused kernel lands.
#include "cuda/forward_cuda.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common/composite.h"

namespace fusedconv {

at::Tensor forward_cuda_impl(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin) {
  const c10::cuda::CUDAGuard guard(x.device());
  if (p.batch == 0) {
    if (argmin != nullptr) *argmin = at::empty(p.output_sizes(), x.options().dtype(at::kInt));
    return at::empty(p.output_sizes(), x.options());
  }
  return composite_forward(x, weight, bias, p.dim, argmin);
}

std::string cuda_kernel_path(const Problem&, const at::Tensor&, const at::Tensor&) {
  return "cuda-composite";
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
