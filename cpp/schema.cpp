// The one place where fusedconv's operator schemas are defined.
// Backends register implementations with TORCH_LIBRARY_IMPL next to their kernels.
#include <torch/library.h>

TORCH_LIBRARY(fusedconv, m) {
  // y = softmax(min(conv3d(x, weight, bias), dim).values, dim=1)
  m.def("forward(Tensor x, Tensor weight, Tensor? bias=None, int dim=2) -> Tensor");
  // Which implementation forward() would run for these inputs, e.g. "cpu-fused",
  // "cuda-fused-tf32" or "cuda-composite". For tests and diagnostics.
  m.def("kernel_path(Tensor x, Tensor weight, Tensor? bias=None, int dim=2) -> str");
  // Gradients of forward() w.r.t. (x, weight, bias) given grad_y and forward's output y. The
  // argmin of each min column is recomputed with the fused forward, so autograd saves only
  // x, weight, bias and y.
  // Grads whose output_mask entry is false (and grad_bias when bias is None) come back as
  // empty tensors of shape (0,); python/fusedconv/_autograd.py maps them to None.
  m.def("backward(Tensor grad_y, Tensor y, Tensor x, Tensor weight, Tensor? bias, int dim, "
        "bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
}
