#pragma once
// Dynamic shared memory beyond 48 KB needs a per-kernel opt-in attribute; both kernel
// families' launchers raise it here.
#include <cuda_runtime.h>

#include <atomic>

namespace fusedconv::fused {

// Raises kKernel's dynamic shared-memory limit on the current device to the device's
// opt-in maximum less the kernel's static shared memory (the driver rejects a larger
// limit), once (a host-side attribute: no sync, graph-safe). Every caller sets the same
// value, so threads that launch the kernel for the first time at once cannot lower each
// other's limit (raising it only as far as each launch needs could). The planners reject
// launches beyond that maximum. The kernel is a template argument so that each kernel
// keeps its own record.
template <auto kKernel>
cudaError_t allow_dynamic_smem(int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> raised[kMaxDevices] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  const bool recorded = device >= 0 && device < kMaxDevices;
  if (recorded && raised[device].load(std::memory_order_acquire)) return cudaSuccess;
  int optin = 0;
  err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return err;
  cudaFuncAttributes attributes{};
  err = cudaFuncGetAttributes(&attributes, kKernel);
  if (err != cudaSuccess) return err;
  const int limit = optin - static_cast<int>(attributes.sharedSizeBytes);
  err = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             limit > bytes ? limit : bytes);
  if (err == cudaSuccess && recorded) raised[device].store(true, std::memory_order_release);
  return err;
}

}  // namespace fusedconv::fused
