#pragma once
// Dynamic shared memory beyond 48 KB needs a per-kernel opt-in attribute; both kernel
// families' launchers raise it here.
#include <cuda_runtime.h>

namespace fusedconv::fused {

// Raises kKernel's dynamic shared-memory limit to `bytes` once per device (a host-side
// attribute: no sync, graph-safe). The kernel is a template argument so that each kernel
// keeps its own record of the limit set.
template <auto kKernel>
cudaError_t allow_dynamic_smem(int bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  static int raised_to[64] = {};
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if (device < 64 && raised_to[device] >= bytes) return cudaSuccess;
  err = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess && device < 64) raised_to[device] = bytes;
  return err;
}

}  // namespace fusedconv::fused
