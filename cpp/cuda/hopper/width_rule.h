#pragma once
// Whether 16-bit operands take one channel group of N = 64 instead of a cluster of two
// groups of N = 32. Plain host arithmetic, so that ctest checks it (cpp/tests/width_rule_test.cpp);
// wgmma_dispatch.cu applies it, and wgmma_launch.cuh (launch_group64) adds what depends on
// the grid: planes by TMA, and R whole.

namespace fusedconv::fused::hopper {

// 16-bit operands (bf16, fp16, autocast) with C_out 49..64 at k_r = 3, K = C_in * k_p * k_q
// in chunks (above 32), where 3-step chunks (48 K) pad K no more than 1-step ones (16 K):
// one CTA gathers each plane once for all 64 channels, where the two groups of 32 gather it
// once each. Lab (H200, session 26, µs two groups of 32 / one of 64; every kernel by TMA in
// 3-step chunks): bf16 C_in = 16, C_out = 64 (B = 16, D = 16, H = W = 64) 164.1 / 145.4,
// autocast 196.7 / 133.1; C_in = 4 (K = 36), B = 128, D = 24, H = W = 32 196.5 / 160.8;
// C_in = 16 there 422.0 / 339.5 (C_out = 50 419.9 / 333.4), autocast 528.0 / 347.8; C_in =
// 32 (K = 288) 237.3 / 188.7. C_out 33..48 (two groups of 24) is unmeasured at N = 64.
inline bool one_group_of_64(int c_out, int k_plane, int k_r, bool operands_16bit) {
  auto up = [](int k, int m) { return (k + m - 1) / m * m; };
  return operands_16bit && c_out > 48 && c_out <= 64 && k_r == 3 && k_plane > 32 && up(k_plane, 48) <= up(k_plane, 16);
}

}  // namespace fusedconv::fused::hopper
