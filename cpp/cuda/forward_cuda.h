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

// torch.autocast on float32 inputs: the wgmma kernel on the float32 data with `low`
// (bfloat16 or float16) MMA operands and a float32 y, in one launch; nullopt where that
// kernel does not apply (the caller then casts, as autocast does). Validates like the op.
std::optional<at::Tensor> forward_cuda_autocast(const at::Tensor& x, const at::Tensor& weight,
                                                const std::optional<at::Tensor>& bias, int64_t dim,
                                                at::ScalarType low);
// Its kernel_path name, or nullopt where it does not apply.
std::optional<std::string> cuda_kernel_path_autocast(const at::Tensor& x, const at::Tensor& weight,
                                                     const std::optional<at::Tensor>& bias, int64_t dim,
                                                     at::ScalarType low);

}  // namespace fusedconv
