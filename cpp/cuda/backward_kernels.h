#pragma once
// CUDA gather kernels of fusedconv::backward (cpp/cuda/backward_kernels.cu). Same contract as
// BackwardBackend in cpp/common/backward_plan.h; they run on the current
// stream of the tensors' device (the caller holds a device guard). Deterministic: no atomics.
#include <ATen/core/Tensor.h>

#include "common/backward_plan.h"

namespace fusedconv {

at::Tensor softmax_dot_cuda(const at::Tensor& y, const at::Tensor& grad_y);
at::Tensor bias_grad_cuda(const MinGrad& m);
void input_grad_cuda(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& argmin,
                     const at::Tensor& weight_p, const at::Tensor& dx_p);
void weight_grad_cuda(const BackwardPlan& plan, const MinGrad& m, const at::Tensor& argmin,
                      const at::Tensor& x_p, const at::Tensor& dw_p);

}  // namespace fusedconv
