// PLACEHOLDER: composite until the fused CPU kernel lands.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "common/composite.h"
#include "common/problem.h"

namespace fusedconv {
namespace {

at::Tensor forward_cpu(const at::Tensor& x, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  if (p.batch == 0) return at::empty(p.output_sizes(), x.options());
  return composite_forward(x, weight, bias, p.dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CPU, m) { m.impl("forward", &forward_cpu); }

}  // namespace fusedconv
