#include "common/composite.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>

namespace fusedconv {
namespace {

// conv3d whose float32 precision follows torch.get_float32_matmul_precision() like the fused
// kernels: cuDNN's own allow_tf32 flag is on by default, which would make "highest" TF32.
at::Tensor conv3d_at_requested_precision(const at::Tensor& x, const at::Tensor& weight,
                                         const std::optional<at::Tensor>& bias) {
  const at::Context& ctx = at::globalContext();
  const bool allow_tf32 =
      ctx.float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST;
  const int64_t ones[3] = {1, 1, 1}, zeros[3] = {0, 0, 0};
  return at::_convolution(x, weight, bias, /*stride=*/ones, /*padding=*/zeros,
                          /*dilation=*/ones, /*transposed=*/false, /*output_padding=*/zeros,
                          /*groups=*/1, ctx.benchmarkCuDNN(), ctx.deterministicCuDNN(),
                          ctx.userEnabledCuDNN(), allow_tf32);
}

}  // namespace

at::Tensor composite_forward(const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, int64_t dim,
                             at::Tensor* argmin) {
  const at::Tensor conv = conv3d_at_requested_precision(x, weight, bias);
  if (argmin == nullptr) {
    // amin propagates NaN like torch.min(...).values.
    return at::softmax(at::amin(conv, {dim}), /*dim=*/1);
  }
  auto [values, indices] = at::min(conv, dim);
  *argmin = indices.to(at::kInt);
  return at::softmax(values, /*dim=*/1);
}

}  // namespace fusedconv
