// Where the shifted-plane kernel runs (cuda/hopper/shifted_rule.h): 16-bit operands (autocast:
// C_out 1..64; bf16 / fp16 data: 17..64) and TF32 (C_out 33..64), forward only, C_in = 16, k = 3, q_in 49..64, Q
// contiguous, a channel-major dense weight, 32-bit offsets within a batch index, one item per
// SM at least.
#include <gtest/gtest.h>

#include "cuda/hopper/shifted_rule.h"

namespace fusedconv::fused::hopper {
namespace {

constexpr int kSms = 132;

// The C_in = 16 target shape: B = 16, C_out = 64, H = W = 64 (31 row pairs).
ShiftedCase target() { return {true, false, false, false, true, true, true, 16, 64, 3, 3, 3, 64, 62, 16}; }

TEST(ShiftedRule, TakesTheTargetShape) { EXPECT_TRUE(takes_shifted(target(), kSms)); }

TEST(ShiftedRule, EdgesOfChannelsAndWidth) {
  for (int c_out : {0, 1, 8, 16, 17, 24, 32, 33, 48, 49, 64, 65}) {
    ShiftedCase c = target();  // bf16 / fp16 data
    c.c_out = c_out;
    EXPECT_EQ(takes_shifted(c, kSms), c_out >= 17 && c_out <= 64) << c_out;
    c.autocast = true;  // float32 data, 16-bit operands
    EXPECT_EQ(takes_shifted(c, kSms), c_out >= 1 && c_out <= 64) << c_out;
    c.autocast = false;
    c.sixteen_bit_operands = false;
    c.tf32 = true;
    EXPECT_EQ(takes_shifted(c, kSms), c_out >= 33 && c_out <= 64) << c_out;
  }
  for (int q_in : {48, 49, 57, 64, 65}) {
    ShiftedCase c = target();
    c.q_in = q_in;
    EXPECT_EQ(takes_shifted(c, kSms), q_in >= 49 && q_in <= 64) << q_in;
  }
}

TEST(ShiftedRule, OnlySixteenBitOperandsForwardAtSixteenChannelsAndKThree) {
  ShiftedCase c = target();
  c.sixteen_bit_operands = false;  // 3xTF32
  EXPECT_FALSE(takes_shifted(c, kSms));
  c.tf32 = true;  // TF32, at every width the rule takes (v52: at 64 too)
  for (int q_in : {49, 63, 64}) {
    c.q_in = q_in;
    EXPECT_TRUE(takes_shifted(c, kSms)) << q_in;
  }
  c.q_in = 65;
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.argmin = true;  // the backward's recompute
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.q_contiguous = false;  // channels_last_3d, dim = 4
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.weight_block = false;  // a strided or misaligned weight
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.offsets_32bit = false;  // a batch index past 2^31 elements
  EXPECT_FALSE(takes_shifted(c, kSms));
  for (int c_in : {8, 15, 17, 32}) {
    c = target();
    c.c_in = c_in;
    EXPECT_FALSE(takes_shifted(c, kSms)) << c_in;
  }
  c = target();
  c.k_q = 2;
  EXPECT_FALSE(takes_shifted(c, kSms));
}

TEST(ShiftedRule, NeedsAnItemPerSm) {
  EXPECT_EQ(shifted_row_pairs(62), 31);
  EXPECT_EQ(shifted_row_pairs(7), 4);
  ShiftedCase c = target();
  c.batch = 4;  // 124 items < 132
  EXPECT_FALSE(takes_shifted(c, kSms));
  c.batch = 5;  // 155
  EXPECT_TRUE(takes_shifted(c, kSms));
  c.p_out = 1;  // one row: one item per batch index
  c.batch = 131;
  EXPECT_FALSE(takes_shifted(c, kSms));
  c.batch = 132;
  EXPECT_TRUE(takes_shifted(c, kSms));
}

TEST(ShiftedRule, OffsetsWithinABatchIndex) {
  // Contiguous (16, D, H, W): the span is 16 * D * H * W plus three rows.
  EXPECT_TRUE(offsets_fit_int32(16, 16, 64, 64, 16 * 64 * 64, 64 * 64, 64));
  const int64_t d = 2048, hw = 64 * 64;  // 16 x 2048 x 64 x 64 = 2^27 elements: fits
  EXPECT_TRUE(offsets_fit_int32(16, d, 64, 64, d * hw, hw, 64));
  // One batch index of 2^31 elements (D = 32768) does not, nor a channel stride past 2^31 / 15.
  EXPECT_FALSE(offsets_fit_int32(16, 16 * d, 64, 64, 16 * d * hw, hw, 64));
  EXPECT_FALSE(offsets_fit_int32(16, 3, 9, 64, int64_t(1) << 28, 576, 64));
  // The last representable span: (c_in - 1) xs_c + (r_in - 1) xs_r + (p_in + 3) xs_p + q_in.
  const int64_t xs_c = (INT32_MAX - 64 - (2 * 576) - (12 * 64)) / 15;
  EXPECT_TRUE(offsets_fit_int32(16, 3, 9, 64, xs_c, 576, 64));
  EXPECT_FALSE(offsets_fit_int32(16, 3, 9, 64, xs_c + 1, 576, 64));
}

TEST(ShiftedRule, ChannelMajorWeightBlocks) {
  // (C_out, 16, 3, 3, 3) contiguous, and dims 3 / 4's permuted views of it (R, P, Q reordered).
  EXPECT_TRUE(weight_is_channel_major_block(16, 3, 3, 3, 432, 27, 9, 3, 1));
  EXPECT_TRUE(weight_is_channel_major_block(16, 3, 3, 3, 432, 27, 3, 9, 1));
  EXPECT_TRUE(weight_is_channel_major_block(16, 3, 3, 3, 432, 27, 1, 3, 9));
  // channels_last_3d weight: C_in innermost.
  EXPECT_TRUE(weight_is_channel_major_block(16, 3, 3, 3, 432, 1, 144, 48, 16));
  // The output channel not outermost, a gap between channels, a sliced input channel axis.
  EXPECT_FALSE(weight_is_channel_major_block(16, 3, 3, 3, 1, 64 * 27, 576, 192, 64));
  EXPECT_FALSE(weight_is_channel_major_block(16, 3, 3, 3, 440, 27, 9, 3, 1));
  EXPECT_FALSE(weight_is_channel_major_block(16, 3, 3, 3, 864, 54, 9, 3, 1));
  // Size-1 axes take any stride.
  EXPECT_TRUE(weight_is_channel_major_block(16, 1, 3, 3, 144, 9, 7777, 3, 1));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
