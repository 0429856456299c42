#include "common/composite.h"

#include <ATen/ATen.h>

namespace fusedconv {

at::Tensor composite_forward(const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, int64_t dim) {
  // amin propagates NaN like torch.min(...).values.
  at::Tensor conv = at::conv3d(x, weight, bias);
  return at::softmax(at::amin(conv, {dim}), /*dim=*/1);
}

}  // namespace fusedconv
