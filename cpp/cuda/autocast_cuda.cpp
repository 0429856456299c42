// The CUDA autocast registration (the rules: common/autocast.h). Plain float32 CUDA inputs
// that need no gradient run the fused autocast kernel: float32 data, 16-bit MMA operands,
// float32 y, one launch instead of three casts and the 16-bit kernel. Everything else casts:
// autograd (so the backward sees the 16-bit inputs eager autocast gives it), tensor
// subclasses and dispatch modes (fake tensors when tracing, functionalization, vmap: they
// must see the casts and the op), and problems the wgmma kernel does not take.
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/core/grad_mode.h>
#include <torch/library.h>

#include "common/autocast.h"
#include "cuda/forward_cuda.h"

namespace fusedconv {
namespace {

constexpr auto kDevice = c10::DeviceType::CUDA;
constexpr auto kKey = c10::DispatchKey::AutocastCUDA;

// isTensorSubclassLike is also true while a Python dispatch mode is active.
bool fused_autocast_may_run(const at::Tensor& x, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias) {
  const bool grad = at::GradMode::is_enabled();
  auto plain = [&](const at::Tensor& t) {
    return t.is_cuda() && t.scalar_type() == at::kFloat && !at::isTensorSubclassLike(t) &&
           !(grad && t.requires_grad());
  };
  return plain(x) && plain(weight) && (!bias.has_value() || plain(*bias));
}

// The fused autocast path (`fused`, nullopt where its kernel does not apply) or the casts.
template <class Fused, class ByCasting>
auto fused_or_by_casting(Fused fused, ByCasting by_casting, const at::Tensor& x, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, int64_t dim) {
  if (fused_autocast_may_run(x, weight, bias)) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(kKey);
    if (auto out = fused(x, weight, bias, dim, at::autocast::get_autocast_dtype(kDevice))) return *out;
  }
  return by_casting(x, weight, bias, dim);
}

at::Tensor forward_autocast_cuda(const at::Tensor& x, const at::Tensor& weight,
                                 const std::optional<at::Tensor>& bias, int64_t dim) {
  return fused_or_by_casting(forward_cuda_autocast, autocast::forward_by_casting<kDevice, kKey>, x, weight,
                             bias, dim);
}

std::string kernel_path_autocast_cuda(const at::Tensor& x, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias, int64_t dim) {
  return fused_or_by_casting(cuda_kernel_path_autocast, autocast::kernel_path_by_casting<kDevice, kKey>, x,
                             weight, bias, dim);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, AutocastCUDA, m) {
  m.impl("forward", &forward_autocast_cuda);
  m.impl("kernel_path", &kernel_path_autocast_cuda);
}

}  // namespace fusedconv
