// The CPU autocast registration (the rules: common/autocast.h).
#include "common/autocast.h"

#include <torch/library.h>

namespace fusedconv {

TORCH_LIBRARY_IMPL(fusedconv, AutocastCPU, m) {
  constexpr auto kDevice = c10::DeviceType::CPU;
  constexpr auto kKey = c10::DispatchKey::AutocastCPU;
  m.impl("forward", &autocast::forward_by_casting<kDevice, kKey>);
  m.impl("kernel_path", &autocast::kernel_path_by_casting<kDevice, kKey>);
}

}  // namespace fusedconv
