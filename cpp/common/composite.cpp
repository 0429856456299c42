#include "common/composite.h"

#include <ATen/ATen.h>

namespace fusedconv {

at::Tensor composite_forward(const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, int64_t dim,
                             at::Tensor* argmin) {
  const at::Tensor conv = at::conv3d(x, weight, bias);
  if (argmin == nullptr) {
    // amin propagates NaN like torch.min(...).values.
    return at::softmax(at::amin(conv, {dim}), /*dim=*/1);
  }
  auto [values, indices] = at::min(conv, dim);
  *argmin = indices.to(at::kInt);
  return at::softmax(values, /*dim=*/1);
}

}  // namespace fusedconv
