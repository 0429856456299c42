#pragma once
// Whether the shifted-plane kernel (shifted_kernel.cuh) takes a problem. Plain host arithmetic,
// so that ctest checks it (cpp/tests/shifted_rule_test.cpp); shifted_launch.cu applies it.
//
// Its ring row pitch is 64 positions and its M is 64 channels, so it pads Q to 64 and C_out to
// 64: it takes q_in 49..64 and C_out 49..64 (at most 31% padding either way), C_in = 16 (one
// swizzle row per position), k = 3 on every axis, bf16 or fp16 data (TF32 ran at v49's level in
// the lab: its shared-memory wgmma chain runs at 70% of the TF32 rate; autocast's float32 data
// ran slower in the package than the kernel it would replace: v50, below),
// Q contiguous (its loads walk Q), no argmin (the forward's inference path), and at least one
// item (batch index x output row pair) per warpgroup, 2 per SM: below that its per-item time
// (all of R on one warpgroup) is unmeasured against the R-split kernels.
// Lab (H200, session 31, µs, shifted / the package's autocast kernel at N = 64, C_in = 16, D =
// 16, H = W = 64): B = 16, C_out = 64 122.1 / 133.2, C_out = 50 120.2 / 131.2, B = 8 68.3 /
// 77.7, B = 32 223.6 / 243.1 (BENCHMARKS.md, "Session 31 lab"). In the package (session 33, the
// target shape): bf16 data 135.0 against 147.4 µs, autocast 151.3 against 134.1 (v50).

namespace fusedconv::fused::hopper {

struct ShiftedCase {
  bool sixteen_bit_data;  // bf16 or fp16 x (not autocast's float32 x)
  bool argmin, q_contiguous;
  int c_in, c_out, k_r, k_p, k_q, q_in, p_out, batch;
};

inline bool takes_shifted(const ShiftedCase& c, int sms) {
  const long long items = static_cast<long long>(c.batch) * ((c.p_out + 1) / 2);
  return c.sixteen_bit_data && !c.argmin && c.q_contiguous && c.c_in == 16 && c.k_r == 3 && c.k_p == 3 && c.k_q == 3 &&
         c.c_out > 48 && c.c_out <= 64 && c.q_in > 48 && c.q_in <= 64 && items >= 2LL * sms;
}

}  // namespace fusedconv::fused::hopper
