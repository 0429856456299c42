#pragma once
// Whether C_out takes channel groups of N = 64 (one group at 33..64, a cluster above) instead
// of groups of N = 32 (or 24). Plain host arithmetic, so that ctest checks it
// (cpp/tests/width_rule_test.cpp); wgmma_dispatch.cu applies it, and wgmma_launch.cuh
// (launch_group64) adds what depends on the grid: planes by TMA, shared memory, and R whole.

namespace fusedconv::fused::hopper {

// The wgmma operands of a precision mode, as far as the rule tells them apart.
enum class Operands { k16bit, kTF32, k3xTF32 };

// One CTA gathers each plane once for all 64 channels, where the groups of 32 (or 24) gather
// it once each, at k_r = 3 with K = C_in * k_p * k_q in chunks (above 32).
// 16-bit operands (bf16, fp16, autocast): C_out 33..64, one warpgroup, 2 CTAs per SM, where
// 3-step chunks (48 K) pad K no more than 1-step ones (16 K). Lab (H200, session 26, µs two
// groups of 32 / one of 64; every kernel by TMA in 3-step chunks): bf16 C_in = 16, C_out = 64
// (B = 16, D = 16, H = W = 64) 164.1 / 145.4, autocast 196.7 / 133.1; C_in = 4 (K = 36),
// B = 128, D = 24, H = W = 32 196.5 / 160.8; C_in = 16 there 422.0 / 339.5 (C_out = 50 419.9 /
// 333.4), autocast 528.0 / 347.8; C_in = 32 (K = 288) 237.3 / 188.7. Session 28, against two
// groups of 24: C_out = 48 (K = 144) 151.7 / 135.7, 40 151.2 / 132.3, K = 36 (B = 128) 165.2 /
// 156.4.
// TF32: two warpgroups in one CTA per SM (its weights, 110.6 KB at K = 144, leave room for
// one), sharing the ring and the weights; one warpgroup at N = 64 lost (3-7%, session 26).
// C_out 49..64, and 33..48 from K = 144. Lab (H200, session 27, µs the groups' kernel /
// two warpgroups in 3-step chunks), C_in = 16 (K = 144), D = 16, H = W = 64: C_out = 64, B = 16:
// 9-step chunks 210.5 / 177.0 (3-step 224.7), B = 8 111.1 / 95.6, B = 4 60.7 / 53.0; C_out =
// 50 208.1 / 176.3, 49 208.3 / 175.2; two groups of 24 (9-step): C_out = 48 203.8 / 176.3, 40
// 202.2 / 175.7; B = 128, D = 24, H = W = 32: C_out = 64 596.3 / 516.1, 48 553.6 / 485.3;
// B = 1024, D = H = W = 8 232.6 / 184.4. Smaller K (3-step chunks), C_out = 64, D = 24, H = W
// = 32: K = 36 (B = 128) 232.0 / 229.4, K = 72 (B = 64) 169.6 / 152.5, K = 108 271.1 / 216.5;
// K = 36 at C_out = 48 lost (groups of 24: 221.6 / 226.2). K = 288's weights do not fit
// (launch_group64 leaves it to the groups of 32). 3xTF32 has no such kernel.
// Above 64 channels: a cluster of groups of 64 wherever the groups of 32 would be an even
// number (the same padded channels: C_out 97..128, 161..192, 225..256), by the rules above.
// Lab (H200, session 28, µs groups of 32 / of 64; TF32 two warpgroups, 16-bit one), C_in = 16,
// B = 16, D = 16, H = W = 64: C_out = 128 TF32 441.2 / 352.1, bf16 326.6 / 262.5; 100 437.0 /
// 348.5, 324.9 / 255.0; 97 435.8 / 347.9, 324.4 / 254.5; 192 706.4 / 614.5, 476.1 / 401.6;
// 256 920.5 / 791.4, 655.9 / 505.6. D = 24, H = W = 32, C_out = 128: TF32 K = 36 (B = 128)
// 491.5 / 472.8, K = 72 (B = 64) 338.0 / 303.0, K = 108 564.2 / 438.0; bf16 K = 36 419.6 /
// 330.9, K = 288 (C_in = 32, D = 16, H = W = 64) 941.1 / 592.0. An odd count (a third more
// channels at 65..96) lost: 96 TF32 339.2 / 346.1, bf16 247.5 / 254.5; 80 TF32 340.9 / 347.4.
inline bool groups_of_64(int c_out, int k_plane, int k_r, Operands operands) {
  auto up = [](int k, int m) { return (k + m - 1) / m * m; };
  const bool even_groups_of_32 = (c_out + 31) / 32 % 2 == 0;
  if (k_r != 3 || k_plane <= 32 || c_out > 256 || (c_out > 64 && !even_groups_of_32)) return false;
  switch (operands) {
    case Operands::k16bit: return c_out > 32 && up(k_plane, 48) <= up(k_plane, 16);
    case Operands::kTF32: return c_out > 48 || (c_out > 32 && k_plane >= 144);
    case Operands::k3xTF32: break;
  }
  return false;
}

}  // namespace fusedconv::fused::hopper
