#pragma once
// Whether the shifted-plane kernel (shifted_kernel.cuh) takes a problem. Plain host arithmetic,
// so that ctest checks it (cpp/tests/shifted_rule_test.cpp); shifted_launch.cu applies it.
//
// Its ring row pitch is 64 positions and its M is 64 channels, so it pads Q to 64 and C_out to
// 64: it takes q_in 49..64 (at most 31% padding) and C_out 33..64 in TF32 (at C_out = 48 it still
// beats the channel-group kernels: 136.2 against 167.5 µs; at 32 it lost, 131.9 against 106.5),
// 17..64 with bf16 / fp16 data (bf16 at C_out = 48 77.1 against 136.9, at 32 / 24 / 17 74.5 /
// 73.5 / 72.1 against 100.6 / 89.6 / 89.5; at 16 / 8 it lost, 71.8 / 71.0 against 70.4 / 62.1)
// and 1..64 under autocast (float32 data, 16-bit operands: at C_out = 16 / 8 / 4 / 1 73.5 / 72.6
// / 71.5 / 71.4 against 87.7 / 81.1 / 81.0 / 79.9, H100, v54), C_in = 16
// (one swizzle row per position), k = 3 on every axis, 16-bit operands (bf16 / fp16 data, or
// autocast's float32 data) and TF32, Q contiguous (its loads walk Q), a weight that is one
// 16-byte-aligned block with the output channel outermost (its prologue copies it by 16-byte
// loads; any order of the other axes, so dims 3 and 4 too), a batch index whose elements lie
// within 32-bit offsets of its first (its loads add 32-bit offsets to one pointer per item), no
// argmin (the forward's inference path), and at least one item (batch index x output row pair)
// per SM: from B = 5 to 8 at the target shape (155 to 248 items, at most one per warpgroup)
// the other kernels took 68-84 µs against its ~54 (v51), at B = 4 (124 items) autocast's 47.7.
// H200, the C_in = 16 target shape (B = 16, C_out = 64, D = 16, H = W = 64) in the bench
// (BENCHMARKS.md, v53): TF32 138.0 µs (v49's kernel 168.5), autocast 82.6, bf16 data 81.1.
#include <algorithm>
#include <cstdint>
#include <utility>

namespace fusedconv::fused::hopper {

struct ShiftedCase {
  bool sixteen_bit_operands;  // bf16 / fp16 data, or autocast's float32 data with bf16 / fp16 operands
  bool tf32;                  // float32 data, "high" / "medium" precision
  bool autocast;              // float32 data with bf16 / fp16 operands (also sixteen_bit_operands)
  bool argmin, q_contiguous;
  bool weight_block;  // weight_is_channel_major_block(...)
  bool offsets_32bit;  // offsets_fit_int32(...)
  int c_in, c_out, k_r, k_p, k_q, q_in, p_out, batch;
};

// Work items per batch index: output row pairs.
inline int shifted_row_pairs(int p_out) { return (p_out + 1) / 2; }

// Whether a (c_out, c_in, k_r, k_p, k_q) weight with these element strides is one dense block
// with the output channel outermost: the other four axes, in any order, tile ws_n elements.
inline bool weight_is_channel_major_block(int c_in, int k_r, int k_p, int k_q, int64_t ws_n, int64_t ws_c,
                                          int64_t ws_r, int64_t ws_p, int64_t ws_q) {
  const int64_t sizes[4] = {c_in, k_r, k_p, k_q}, strides[4] = {ws_c, ws_r, ws_p, ws_q};
  std::pair<int64_t, int64_t> axes[4];  // (stride, size) of the axes longer than 1: their stride matters
  int n = 0;
  for (int i = 0; i < 4; ++i) {
    if (sizes[i] != 1) axes[n++] = {strides[i], sizes[i]};
  }
  std::sort(axes, axes + n);
  int64_t expect = 1;  // dense: each axis steps over all the shorter-strided ones
  for (int i = 0; i < n; ++i) {
    if (axes[i].first != expect) return false;
    expect *= axes[i].second;
  }
  return ws_n == expect;
}

// Whether every element offset the kernel adds to its per-item pointer fits an int: a batch
// index's extent, with the three rows an item may read past the last (never loaded).
inline bool offsets_fit_int32(int c_in, int r_in, int p_in, int q_in, int64_t xs_c, int64_t xs_r, int64_t xs_p) {
  const int64_t span = (c_in - 1) * xs_c + (r_in - 1) * xs_r + (p_in + 3) * xs_p + q_in;
  return span <= INT32_MAX;
}

inline bool takes_shifted(const ShiftedCase& c, int sms) {
  const long long items = static_cast<long long>(c.batch) * shifted_row_pairs(c.p_out);
  const int min_c_out = c.autocast ? 1 : c.sixteen_bit_operands ? 17 : 33;
  return (c.sixteen_bit_operands || c.tf32) && !c.argmin && c.q_contiguous && c.weight_block && c.offsets_32bit &&
         c.c_in == 16 && c.k_r == 3 && c.k_p == 3 && c.k_q == 3 && c.c_out >= min_c_out && c.c_out <= 64 &&
         c.q_in > 48 && c.q_in <= 64 && items >= sms;
}

}  // namespace fusedconv::fused::hopper
