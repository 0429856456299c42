// Every bad input of DESIGN.md section 2 raises c10::Error (RuntimeError in Python) that
// names the problem, before any kernel runs.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace fusedconv::testing {
namespace {

// Valid inputs (functions, not globals: no ATen work during static initialisation).
at::Tensor x_ok() { return at::randn({2, 3, 5, 6, 7}); }
at::Tensor w_ok() { return at::randn({4, 3, 2, 2, 2}); }
at::Tensor b_ok() { return at::randn({4}); }

TEST(Errors, WrongRank) {
  expect_error([] { call_forward(x_ok()[0], w_ok(), b_ok(), 2); }, "x must be 5-D");
  expect_error([] { call_forward(x_ok(), w_ok()[0], b_ok(), 2); }, "weight must be 5-D");
}

TEST(Errors, ChannelMismatch) {
  expect_error([] { call_forward(at::randn({2, 5, 5, 6, 7}), w_ok(), b_ok(), 2); },
               "channel mismatch");
}

TEST(Errors, KernelLargerThanInput) {
  expect_error([] { call_forward(x_ok(), at::randn({4, 3, 6, 2, 2}), b_ok(), 2); },
               "kernel larger than input");
  expect_error([] { call_forward(x_ok(), at::randn({4, 3, 2, 2, 8}), b_ok(), 2); },
               "kernel larger than input");
}

TEST(Errors, MixedDtypes) {
  expect_error([] { call_forward(x_ok(), w_ok().to(at::kDouble), b_ok(), 2); }, "does not match x dtype");
  expect_error([] { call_forward(x_ok(), w_ok(), b_ok().to(at::kDouble), 2); }, "does not match x dtype");
}

TEST(Errors, IntegerDtypes) {
  expect_error([] { call_forward(x_ok().to(at::kInt), w_ok().to(at::kInt), std::nullopt, 2); },
               "must be float32, float64, bfloat16 or float16");
}

TEST(Errors, DimOutOfRange) {
  for (int64_t dim : {0, 1, 5, -4, -6}) {
    expect_error([dim] { call_forward(x_ok(), w_ok(), b_ok(), dim); }, "dim must be one of 2, 3, 4");
  }
}

TEST(Errors, BadBiasShape) {
  expect_error([] { call_forward(x_ok(), w_ok(), at::randn({5}), 2); }, "bias must have shape");
}

TEST(Errors, KernelPathValidatesToo) {
  expect_error([] { call_kernel_path(x_ok(), w_ok(), b_ok(), 7); }, "dim must be one of 2, 3, 4");
}

}  // namespace
}  // namespace fusedconv::testing
