#pragma once
// fusedconv::forward (and kernel_path) under torch.autocast: the op behaves like the eager
// pattern it replaces, softmax(min(conv3d(x, weight, bias), dim).values, dim=1). conv3d is
// an autocast lower-precision op, so x, weight and bias are cast to the autocast dtype
// (float64 stays, as autocast leaves it); the output then takes softmax's autocast dtype:
// float32 on CUDA (softmax is on CUDA's float32 list), the autocast dtype on CPU (it is not
// on CPU's). The CPU registration is common/autocast.cpp; CUDA's (cuda/autocast_cuda.cpp)
// first tries the fused autocast kernel. tests/test_autocast.py holds both against eager.
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <optional>
#include <string>

namespace fusedconv::autocast {

using ForwardFn = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, int64_t);
using KernelPathFn = std::string(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                 int64_t);

template <class Fn>
c10::TypedOperatorHandle<Fn> find_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Fn>();
}

// Runs `op` with its tensor inputs cast as autocast casts conv3d's, below the autocast key.
template <c10::DeviceType kDevice, c10::DispatchKey kKey, class Fn>
auto call_cast(const c10::TypedOperatorHandle<Fn>& op, const at::Tensor& x, const at::Tensor& weight,
               const std::optional<at::Tensor>& bias, int64_t dim) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
  const at::ScalarType low = at::autocast::get_autocast_dtype(kDevice);
  return op.call(at::autocast::cached_cast(low, x, kDevice), at::autocast::cached_cast(low, weight, kDevice),
                 at::autocast::cached_cast(low, bias, kDevice), dim);
}

template <c10::DeviceType kDevice, c10::DispatchKey kKey>
at::Tensor forward_by_casting(const at::Tensor& x, const at::Tensor& weight,
                              const std::optional<at::Tensor>& bias, int64_t dim) {
  static const auto op = find_op<ForwardFn>("fusedconv::forward");
  at::Tensor y = call_cast<kDevice, kKey>(op, x, weight, bias, dim);
  if constexpr (kDevice == c10::DeviceType::CUDA) {
    y = at::autocast::cached_cast(at::kFloat, y, kDevice);  // softmax's float32 policy
  }
  return y;
}

template <c10::DeviceType kDevice, c10::DispatchKey kKey>
std::string kernel_path_by_casting(const at::Tensor& x, const at::Tensor& weight,
                                   const std::optional<at::Tensor>& bias, int64_t dim) {
  static const auto op = find_op<KernelPathFn>("fusedconv::kernel_path");
  return call_cast<kDevice, kKey>(op, x, weight, bias, dim);
}

}  // namespace fusedconv::autocast
