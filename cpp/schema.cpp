// The one place where fusedconv's operator schemas are defined.
// Backends register implementations with TORCH_LIBRARY_IMPL next to their kernels.
#include <torch/library.h>

TORCH_LIBRARY(fusedconv, m) {
  // y = softmax(min(conv3d(x, weight, bias), dim).values, dim=1)
  m.def("forward(Tensor x, Tensor weight, Tensor? bias=None, int dim=2) -> Tensor");
  // Which implementation forward() would run for these inputs, e.g. "cpu-fused",
  // "cuda-fused-tf32" or "cuda-composite". For tests and diagnostics.
  m.def("kernel_path(Tensor x, Tensor weight, Tensor? bias=None, int dim=2) -> str");
}
