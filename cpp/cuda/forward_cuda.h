#pragma once
// The CUDA forward (fused kernel, or the composite where the kernel does not apply),
// shared by the forward op and the backward pass.
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "common/problem.h"

namespace fusedconv {

// Same contract as fused_forward_cpu (cpp/cpu/forward_cpu.h): y, and optionally the int32
// argmin along p.dim (torch.min's index: first minimum, first NaN). Runs on x's device and
// current stream.
at::Tensor forward_cuda_impl(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin);

// Name of the path forward_cuda_impl takes for these inputs (see kernel_path in schema.cpp).
std::string cuda_kernel_path(const Problem& p, const at::Tensor& x, const at::Tensor& weight);

}  // namespace fusedconv
