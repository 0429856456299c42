// Where the shifted-plane kernel runs (cuda/hopper/shifted_rule.h): bf16 or fp16 data, forward
// only, C_in = 16, k = 3, C_out and q_in 49..64, Q contiguous, one item per warpgroup (2 per SM)
// at least.
#include <gtest/gtest.h>

#include "cuda/hopper/shifted_rule.h"

namespace fusedconv::fused::hopper {
namespace {

constexpr int kSms = 132;

// The C_in = 16 target shape: B = 16, C_out = 64, H = W = 64 (31 row pairs).
ShiftedCase target() { return {true, false, true, 16, 64, 3, 3, 3, 64, 62, 16}; }

TEST(ShiftedRule, TakesTheTargetShape) { EXPECT_TRUE(takes_shifted(target(), kSms)); }

TEST(ShiftedRule, EdgesOfChannelsAndWidth) {
  for (int c_out : {48, 49, 64, 65}) {
    ShiftedCase c = target();
    c.c_out = c_out;
    EXPECT_EQ(takes_shifted(c, kSms), c_out == 49 || c_out == 64) << c_out;
  }
  for (int q_in : {48, 49, 57, 64, 65}) {
    ShiftedCase c = target();
    c.q_in = q_in;
    EXPECT_EQ(takes_shifted(c, kSms), q_in >= 49 && q_in <= 64) << q_in;
  }
}

TEST(ShiftedRule, OnlySixteenBitDataForwardAtSixteenChannelsAndKThree) {
  ShiftedCase c = target();
  c.sixteen_bit_data = false;  // TF32, 3xTF32, autocast's float32 data
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.argmin = true;  // the backward's recompute
  EXPECT_FALSE(takes_shifted(c, kSms));
  c = target();
  c.q_contiguous = false;  // channels_last_3d, dim = 4
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

TEST(ShiftedRule, NeedsAnItemPerWarpgroup) {
  ShiftedCase c = target();
  c.batch = 8;  // 248 items < 264
  EXPECT_FALSE(takes_shifted(c, kSms));
  c.batch = 9;  // 279
  EXPECT_TRUE(takes_shifted(c, kSms));
  c.p_out = 1;  // one row: one item per batch index
  c.batch = 263;
  EXPECT_FALSE(takes_shifted(c, kSms));
  c.batch = 264;
  EXPECT_TRUE(takes_shifted(c, kSms));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
