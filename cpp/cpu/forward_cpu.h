#pragma once
// The fused CPU forward, shared by the forward op and the backward pass.
#include <ATen/core/Tensor.h>

#include <optional>

#include "common/problem.h"

namespace fusedconv {

// y = softmax(min(conv3d(x, weight, bias), p.dim), 1) on the CPU, never materialising the
// conv output. When `argmin` is non-null it receives an int32 tensor shaped like y holding,
// per (b, c, ...), the index along p.dim that torch.min would return (first minimum; the
// first NaN if any).
at::Tensor fused_forward_cpu(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin);

}  // namespace fusedconv
