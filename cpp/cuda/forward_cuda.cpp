// CUDA entry point for fusedconv::forward: validates, then picks the fused kernel or the
// composite fallback.  PLACEHOLDER: composite only until the fused kernel lands.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "common/composite.h"
#include "common/problem.h"

namespace fusedconv {
namespace {

at::Tensor forward_cuda(const at::Tensor& x, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  const c10::cuda::CUDAGuard guard(x.device());
  if (p.batch == 0) return at::empty(p.output_sizes(), x.options());
  return composite_forward(x, weight, bias, p.dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CUDA, m) { m.impl("forward", &forward_cuda); }

}  // namespace fusedconv
