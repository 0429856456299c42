// The op on a CUDA tensor. Skipped without a GPU, and with a CPU-only build of the library
// (there the CUDA kernel is simply absent).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "test_util.h"

namespace fusedconv::testing {
namespace {

bool cuda_kernel_built() {
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow("fusedconv::forward", "")
      .hasKernelForDispatchKey(c10::DispatchKey::CUDA);
}

TEST(Cuda, ForwardMatchesFloat64Composite) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!cuda_kernel_built()) GTEST_SKIP() << "library built without CUDA";
  at::manual_seed(3);
  const Shape s{3, 3, 13, 9, 11, 17, 3, 2, 3};
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    for (int64_t dim : {2, 3, 4}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " dim " + std::to_string(dim));
      const Inputs in = random_inputs(s, false, dtype);
      const at::Tensor y =
          call_forward(in.x.cuda(), in.weight.cuda(), in.bias.cuda(), dim).cpu();
      const at::Tensor ref = reference(in.x, in.weight, in.bias, dim);
      const double tol = dtype == at::kDouble ? 1e-12 : dtype == at::kFloat ? 1e-5 : 2e-2;
      EXPECT_LE(rel_err(y, ref), tol);
    }
  }
}

}  // namespace
}  // namespace fusedconv::testing
