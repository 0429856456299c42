#pragma once
// The device-agnostic half of fusedconv::backward, shared by the CPU and CUDA backends.
//
// Gradient of y = softmax(min_R(conv3d(x, W, b)), 1), where R is the reduced axis `dim`:
//   g = dL/dmin = y * (grad_y - sum_c grad_y * y)                    (shape of y)
//   dZ (conv-output gradient) = g at the argmin of each min column, 0 elsewhere
//   db[c] = sum g[:, c];  dW, dx = the conv backward of dZ, restricted to argmin positions.
// The argmin is recomputed with the fused forward (the public op returns only y); y itself is
// saved by autograd (it is alive anyway while the caller holds the output).
//
// Kernels see the problem with the reduced axis moved first ("r"), followed by the other two
// spatial axes in their original order ("p", "q"): then y's axes are (B, C_out, p, q) for every
// dim, and one kernel serves dims 2, 3 and 4 through permuted strides.
#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

#include "common/problem.h"

namespace fusedconv {

struct BackwardPlan {
  std::array<int64_t, 5> perm;           // x/weight axis order with the reduced axis third
  int64_t batch, c_in, c_out;
  int64_t r_in, p_in, q_in;              // input extents (r = reduced axis)
  int64_t k_r, k_p, k_q;                 // kernel extents
  int64_t r_out, p_out, q_out;           // conv output extents
  int64_t taps() const { return c_in * k_r * k_p * k_q; }  // weight elements per C_out
};

BackwardPlan make_backward_plan(const Problem& p);

// float for float/bfloat16/float16, double for double.
at::ScalarType accumulate_type(at::ScalarType t);

// The gradient reaching min_R(conv), g = y * (grad_y - dot), is evaluated on the fly by the
// kernels from these three tensors rather than stored: while dx exists, a g buffer the size of y
// would be a sizeable part of the backward's peak memory.
struct MinGrad {
  at::Tensor y, grad_y;  // (B, C_out, p_out, q_out), contiguous, both in x's dtype
  at::Tensor dot;        // (B, p_out, q_out), contiguous, accumulate_type: sum_c grad_y * y
};

// What a backend provides: the forward with argmin (cpp/cpu/forward_cpu.h,
// cpp/cuda/forward_cuda.h) and the reductions and gather kernels. Inputs to the kernels:
//   argmin  (B, C_out, p_out, q_out), contiguous, index along r: uint8 when r_out <= 256
//           (a quarter of the memory), int32 otherwise
//   x_p, weight_p: x/weight permuted by plan.perm (views; any strides)
//   dx_p, dw_p:    outputs, permuted views of freshly allocated tensors; every element is written
struct BackwardBackend {
  at::Tensor (*forward_with_argmin)(const Problem&, const at::Tensor& x, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::Tensor* argmin);
  // dot = sum_c grad_y * y, (B, p_out, q_out) in accumulate_type.
  at::Tensor (*softmax_dot)(const at::Tensor& y, const at::Tensor& grad_y);
  // db[c] = sum of g[:, c], (C_out,) in x's dtype.
  at::Tensor (*bias_grad)(const MinGrad&);
  void (*input_grad)(const BackwardPlan&, const MinGrad&, const at::Tensor& argmin,
                     const at::Tensor& weight_p, const at::Tensor& dx_p);
  void (*weight_grad)(const BackwardPlan&, const MinGrad&, const at::Tensor& argmin,
                      const at::Tensor& x_p, const at::Tensor& dw_p);
};

// check_inputs plus the checks on grad_y and y (shape of the output, x's device, floating).
Problem check_backward_inputs(const at::Tensor& grad_y, const at::Tensor& y, const at::Tensor& x,
                              const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              int64_t dim);

// Validates, recomputes the argmin and returns (grad_x, grad_weight, grad_bias); masked-out
// grads (and grad_bias without bias) are empty tensors of shape (0,). `y` is forward's output.
std::tuple<at::Tensor, at::Tensor, at::Tensor> run_backward(
    const BackwardBackend& backend, const at::Tensor& grad_y, const at::Tensor& y,
    const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
    int64_t dim, std::array<bool, 3> output_mask);

}  // namespace fusedconv
