// PLACEHOLDER: composite until the fused CPU kernel lands.
#include "cpu/forward_cpu.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include "common/composite.h"

namespace fusedconv {

at::Tensor fused_forward_cpu(const Problem& p, const at::Tensor& x, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias, at::Tensor* argmin) {
  if (p.batch == 0) {
    if (argmin != nullptr) *argmin = at::empty(p.output_sizes(), x.options().dtype(at::kInt));
    return at::empty(p.output_sizes(), x.options());
  }
  return composite_forward(x, weight, bias, p.dim, argmin);
}

namespace {

at::Tensor forward_cpu(const at::Tensor& x, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  return fused_forward_cpu(p, x, weight, bias, nullptr);
}

std::string kernel_path_cpu(const at::Tensor& x, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, int64_t dim) {
  check_inputs(x, weight, bias, dim);
  return "cpu-composite";
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CPU, m) {
  m.impl("forward", &forward_cpu);
  m.impl("kernel_path", &kernel_path_cpu);
}

}  // namespace fusedconv
