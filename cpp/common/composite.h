#pragma once
// The unfused reference: ATen conv3d, min over `dim`, softmax over channels.
// Used by the CUDA dispatcher for configurations the fused kernel does not cover.
#include <ATen/core/Tensor.h>

#include <optional>

namespace fusedconv {

// When `argmin` is non-null it receives torch.min's indices along `dim` as int32.
at::Tensor composite_forward(const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, int64_t dim,
                             at::Tensor* argmin = nullptr);

}  // namespace fusedconv
