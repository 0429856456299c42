#pragma once
// Validation and sizes of one conv3d -> min(dim) -> softmax(dim=1) problem.
// Every backend (CPU, CUDA) calls check_inputs before touching data; the Python fake
// kernel (python/fusedconv/_fake.py) mirrors these checks and messages.
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

namespace fusedconv {

struct Problem {
  int64_t batch, c_in, depth, height, width;  // x:      (B, C_in, D, H, W)
  int64_t c_out, k_d, k_h, k_w;               // weight: (C_out, C_in, kD, kH, kW)
  int64_t d_out, h_out, w_out;                // conv output spatial sizes (stride 1, no padding)
  int64_t dim;                                // reduced axis of the conv output: 2, 3 or 4
  bool has_bias;

  // Conv output sizes (B, C_out, D_out, H_out, W_out) with `dim` removed.
  std::vector<int64_t> output_sizes() const;
  // Extent of the conv output along `dim` (the length of each min).
  int64_t reduced_extent() const;
};

// Throws c10::Error (RuntimeError in Python) naming the problem and the shapes.
Problem check_inputs(const at::Tensor& x, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, int64_t dim);

}  // namespace fusedconv
