#include "common/problem.h"

#include <c10/util/Exception.h>

namespace fusedconv {
namespace {

bool is_supported_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kBFloat16 || t == at::kHalf;
}

}  // namespace

std::vector<int64_t> Problem::output_sizes() const {
  std::vector<int64_t> sizes{batch, c_out, d_out, h_out, w_out};
  sizes.erase(sizes.begin() + dim);
  return sizes;
}

int64_t Problem::reduced_extent() const {
  return dim == 2 ? d_out : dim == 3 ? h_out : w_out;
}

Problem check_inputs(const at::Tensor& x, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, int64_t dim) {
  TORCH_CHECK(x.dim() == 5, "fusedconv.forward: x must be 5-D (B, C_in, D, H, W), got shape ",
              x.sizes());
  TORCH_CHECK(weight.dim() == 5,
              "fusedconv.forward: weight must be 5-D (C_out, C_in, kD, kH, kW), got shape ",
              weight.sizes());
  TORCH_CHECK(is_supported_dtype(x.scalar_type()),
              "fusedconv.forward: x must be float32, float64, bfloat16 or float16, got ",
              x.scalar_type());
  TORCH_CHECK(weight.scalar_type() == x.scalar_type(),
              "fusedconv.forward: weight dtype ", weight.scalar_type(),
              " does not match x dtype ", x.scalar_type());
  TORCH_CHECK(weight.device() == x.device(), "fusedconv.forward: weight is on ", weight.device(),
              " but x is on ", x.device());
  TORCH_CHECK(x.size(1) == weight.size(1), "fusedconv.forward: channel mismatch: x has C_in=",
              x.size(1), " (shape ", x.sizes(), ") but weight expects C_in=", weight.size(1),
              " (shape ", weight.sizes(), ")");
  TORCH_CHECK(weight.size(0) >= 1 && weight.size(1) >= 1,
              "fusedconv.forward: weight must have C_out >= 1 and C_in >= 1, got shape ",
              weight.sizes());
  for (int axis = 2; axis < 5; ++axis) {
    TORCH_CHECK(weight.size(axis) >= 1 && weight.size(axis) <= x.size(axis),
                "fusedconv.forward: kernel larger than input: weight shape ", weight.sizes(),
                " does not fit x shape ", x.sizes(), " along axis ", axis);
  }
  if (bias.has_value()) {
    const at::Tensor& b = *bias;
    TORCH_CHECK(b.dim() == 1 && b.size(0) == weight.size(0),
                "fusedconv.forward: bias must have shape (C_out,) = (", weight.size(0),
                ",), got shape ", b.sizes());
    TORCH_CHECK(b.scalar_type() == x.scalar_type(), "fusedconv.forward: bias dtype ",
                b.scalar_type(), " does not match x dtype ", x.scalar_type());
    TORCH_CHECK(b.device() == x.device(), "fusedconv.forward: bias is on ", b.device(),
                " but x is on ", x.device());
  }
  TORCH_CHECK((dim >= 2 && dim <= 4) || (dim >= -3 && dim <= -1),
              "fusedconv.forward: dim must be one of 2, 3, 4 (or -3, -2, -1): the depth, height "
              "or width axis of the 5-D conv output, got dim=", dim);

  Problem p;
  p.batch = x.size(0);
  p.c_in = x.size(1);
  p.depth = x.size(2);
  p.height = x.size(3);
  p.width = x.size(4);
  p.c_out = weight.size(0);
  p.k_d = weight.size(2);
  p.k_h = weight.size(3);
  p.k_w = weight.size(4);
  p.d_out = p.depth - p.k_d + 1;
  p.h_out = p.height - p.k_h + 1;
  p.w_out = p.width - p.k_w + 1;
  p.dim = dim < 0 ? dim + 5 : dim;
  p.has_bias = bias.has_value();
  return p;
}

}  // namespace fusedconv
