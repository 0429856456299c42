// CUDA registration of fusedconv::backward: the forward with argmin (cpp/cuda/forward_cuda.h)
// plus the gather kernels of cpp/cuda/backward_kernels.cu.
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common/backward_plan.h"
#include "cuda/backward_kernels.h"
#include "cuda/forward_cuda.h"

namespace fusedconv {
namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda(
    const at::Tensor& grad_y, const at::Tensor& y, const at::Tensor& x, const at::Tensor& weight,
    const std::optional<at::Tensor>& bias, int64_t dim, std::array<bool, 3> output_mask) {
  check_backward_inputs(grad_y, y, x, weight, bias, dim);  // bad input fails before the guard
  const c10::cuda::CUDAGuard guard(x.device());
  static const BackwardBackend backend{&forward_cuda_impl, &softmax_dot_cuda, &bias_grad_cuda,
                                       &input_grad_cuda, &weight_grad_cuda};
  return run_backward(backend, grad_y, y, x, weight, bias, dim, output_mask);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CUDA, m) { m.impl("backward", &backward_cuda); }

}  // namespace fusedconv
