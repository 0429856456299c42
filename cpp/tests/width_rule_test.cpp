// The channel-group choice (cuda/hopper/width_rule.h): 16-bit operands take one group of
// N = 64 only at C_out 49..64, k_r = 3, K in chunks that 3-step chunks pad no more, the
// ground the H200 lab measured (BENCHMARKS.md, v45).
#include <gtest/gtest.h>

#include "cuda/hopper/width_rule.h"

namespace fusedconv::fused::hopper {
namespace {

// The lab's shapes: K = 36 (C_in = 4), 144 (16), 288 (32) at k = 3; C_out 50 and 64.
TEST(WidthRule, SixteenBitTakesOneGroupWhereMeasured) {
  EXPECT_TRUE(one_group_of_64(64, 144, 3, true));
  EXPECT_TRUE(one_group_of_64(50, 144, 3, true));
  EXPECT_TRUE(one_group_of_64(64, 36, 3, true));
  EXPECT_TRUE(one_group_of_64(64, 288, 3, true));
  EXPECT_TRUE(one_group_of_64(49, 45, 3, true));  // 48 padded either way
}

// TF32 and 3xTF32 (float32 operands: N = 64's weights leave one CTA per SM, which lost in
// the lab), C_out outside 49..64, K in one chunk (the reference's K = 27), other k_r.
TEST(WidthRule, EverythingElseKeepsGroupsOf32) {
  EXPECT_FALSE(one_group_of_64(64, 144, 3, false));
  EXPECT_FALSE(one_group_of_64(48, 144, 3, true));
  EXPECT_FALSE(one_group_of_64(65, 144, 3, true));
  EXPECT_FALSE(one_group_of_64(64, 27, 3, true));
  EXPECT_FALSE(one_group_of_64(64, 32, 3, true));
  EXPECT_FALSE(one_group_of_64(64, 144, 2, true));
  EXPECT_FALSE(one_group_of_64(64, 144, 5, true));
}

// Where 3-step chunks pad more than 1-step ones (K = 216: 240 against 224; K = 50: 96 against
// 64) the N = 32 kernels keep their 1-step chunks.
TEST(WidthRule, MorePaddingKeepsGroupsOf32) {
  EXPECT_FALSE(one_group_of_64(64, 216, 3, true));
  EXPECT_FALSE(one_group_of_64(64, 50, 3, true));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
