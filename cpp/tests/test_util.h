#pragma once
// Shared helpers of the C++ tests: calling the op through the dispatcher, an independent
// float64 ATen reference, random inputs and error-message checks.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/problem.h"

namespace fusedconv::testing {

// fusedconv::forward through the dispatcher, exactly as Python's torch.ops would call it.
inline at::Tensor call_forward(const at::Tensor& x, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, int64_t dim) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("fusedconv::forward", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                            const std::optional<at::Tensor>&, int64_t)>();
  return op.call(x, weight, bias, dim);
}

inline std::string call_kernel_path(const at::Tensor& x, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, int64_t dim) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("fusedconv::kernel_path", "")
          .typed<std::string(const at::Tensor&, const at::Tensor&,
                             const std::optional<at::Tensor>&, int64_t)>();
  return op.call(x, weight, bias, dim);
}

// softmax(min(conv3d(x, w, b), dim).values, 1) in float64 with plain ATen ops; `indices`
// receives torch.min's indices.
inline at::Tensor reference(const at::Tensor& x, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias, int64_t dim,
                            at::Tensor* indices = nullptr) {
  std::optional<at::Tensor> b64;
  if (bias) b64 = bias->to(at::kDouble);
  const at::Tensor conv = at::conv3d(x.to(at::kDouble), weight.to(at::kDouble), b64);
  auto [values, idx] = at::min(conv, dim);
  if (indices != nullptr) *indices = idx;
  return at::softmax(values, 1);
}

// max |y - ref| / max |ref| (ref is float64).
inline double rel_err(const at::Tensor& y, const at::Tensor& ref) {
  return ((y.to(at::kDouble) - ref).abs().max() / ref.abs().max()).item<double>();
}

// A Problem with these sizes, as check_inputs would return it (for host-side unit tests).
inline Problem make_problem(int64_t b, int64_t c_in, int64_t c_out, int64_t d, int64_t h, int64_t w,
                     int64_t kd, int64_t kh, int64_t kw, int64_t dim) {
  Problem p;
  p.batch = b;
  p.c_in = c_in;
  p.c_out = c_out;
  p.depth = d;
  p.height = h;
  p.width = w;
  p.k_d = kd;
  p.k_h = kh;
  p.k_w = kw;
  p.d_out = d - kd + 1;
  p.h_out = h - kh + 1;
  p.w_out = w - kw + 1;
  p.dim = dim;
  p.has_bias = true;
  return p;
}

struct Shape {
  int64_t b, c_in, c_out, d, h, w, kd, kh, kw;
};

inline at::Tensor random_tensor(at::IntArrayRef sizes, bool uniform, at::ScalarType dtype) {
  const at::Tensor t = uniform ? at::rand(sizes, at::kDouble) : at::randn(sizes, at::kDouble);
  return t.to(dtype);
}

struct Inputs {
  at::Tensor x, weight, bias;
};

// randn (uniform=false) or rand (uniform=true) inputs; the weight is scaled like
// nn.Conv3d's default init so conv outputs stay O(1).
inline Inputs random_inputs(const Shape& s, bool uniform, at::ScalarType dtype) {
  const double fan_in = static_cast<double>(s.c_in * s.kd * s.kh * s.kw);
  Inputs in;
  in.x = random_tensor({s.b, s.c_in, s.d, s.h, s.w}, uniform, dtype);
  in.weight = (random_tensor({s.c_out, s.c_in, s.kd, s.kh, s.kw}, uniform, at::kDouble) * 2 /
               std::sqrt(fan_in))
                  .to(dtype);
  in.bias = random_tensor({s.c_out}, uniform, dtype);
  return in;
}

// Runs f, which must throw c10::Error whose message contains `fragment`.
template <typename F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "', got none";
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    EXPECT_NE(msg.find(fragment), std::string::npos)
        << "expected '" << fragment << "' in: " << msg;
  }
}

}  // namespace fusedconv::testing
