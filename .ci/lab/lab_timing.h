#pragma once
// Shared by the lab drivers (shifted_lab.cu, shifted_alone.cu): the CUDA error check and the
// launch timing (CUDA events, the median of 7 rounds of 20 launches).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(e) do { cudaError_t err_ = (e); if (err_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(err_), __LINE__); exit(1); } } while (0)

// Median µs per launch; launch(i) issues call i (i counts up across rounds: rotating inputs).
template <class Launch>
double median_launch_us(Launch&& launch) {
  std::vector<float> ms;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  int call = 0;
  for (int rep = 0; rep < 7; ++rep) {
    cudaEventRecord(e0);
    for (int i = 0; i < 20; ++i) launch(call++);
    cudaEventRecord(e1);
    CK(cudaEventSynchronize(e1));
    float t;
    cudaEventElapsedTime(&t, e0, e1);
    ms.push_back(t / 20);
  }
  std::sort(ms.begin(), ms.end());
  return ms[3] * 1e3;
}
