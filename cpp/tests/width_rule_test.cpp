// The channel-group choice (cuda/hopper/width_rule.h): C_out 33..64 (TF32 49..64, 33..48 from
// K = 144) takes one group of N = 64, and 97..128, 161..192, 225..256 a cluster of two to
// four, only at k_r = 3 with K in chunks, 16-bit operands only where 3-step chunks pad no
// more, and never for 3xTF32: the ground the H200 lab measured (BENCHMARKS.md, v45 to v48).
#include <gtest/gtest.h>

#include "cuda/hopper/width_rule.h"

namespace fusedconv::fused::hopper {
namespace {

constexpr Operands k16 = Operands::k16bit, kTF32 = Operands::kTF32, k3x = Operands::k3xTF32;

// The lab's shapes: K = 36 (C_in = 4), 144 (16), 288 (32) at k = 3; C_out 40 to 64.
TEST(WidthRule, SixteenBitTakesOneGroupWhereMeasured) {
  EXPECT_TRUE(groups_of_64(64, 144, 3, k16));
  EXPECT_TRUE(groups_of_64(50, 144, 3, k16));
  EXPECT_TRUE(groups_of_64(64, 36, 3, k16));
  EXPECT_TRUE(groups_of_64(64, 288, 3, k16));
  EXPECT_TRUE(groups_of_64(49, 45, 3, k16));  // 48 padded either way
  EXPECT_TRUE(groups_of_64(48, 144, 3, k16));  // C_out 33..48: session 28
  EXPECT_TRUE(groups_of_64(40, 144, 3, k16));
  EXPECT_TRUE(groups_of_64(48, 36, 3, k16));
  EXPECT_TRUE(groups_of_64(33, 144, 3, k16));
}

// TF32 (two warpgroups): C_out 49..64 at K = 36..144, where padding does not matter; C_out
// 33..48 (two groups of 24 otherwise) from K = 144, which won there, where K = 36 lost.
TEST(WidthRule, TF32TakesOneGroupWhereMeasured) {
  struct Case {
    int c_out, k_plane;
    bool one_group;
  };
  const Case cases[] = {{64, 144, true}, {49, 144, true}, {64, 36, true},  {64, 108, true},
                        {64, 216, true},  // (launch_group64 checks the fit)
                        {48, 144, true}, {40, 144, true}, {33, 200, true}, {48, 36, false},
                        {48, 108, false}, {32, 144, false}};
  for (const Case& c : cases) {
    EXPECT_EQ(groups_of_64(c.c_out, c.k_plane, 3, kTF32), c.one_group) << c.c_out << " x " << c.k_plane;
  }
}

// Above 64: groups of 64 where they pad no more than the groups of 32, whose count is then
// even (session 28 lab: C_out 97..128 at K = 36, 72, 108, 144 in TF32 and 36, 144, 288 in
// 16-bit; 192 and 256 at K = 144); C_out 65..96 would pad a third more and lost.
TEST(WidthRule, ClustersWherePaddingIsEqual) {
  for (Operands op : {k16, kTF32}) {
    for (int c_out : {97, 100, 112, 128, 161, 170, 192, 225, 256}) {
      for (int k_plane : {36, 144, 288}) {
        EXPECT_TRUE(groups_of_64(c_out, k_plane, 3, op)) << c_out << " x " << k_plane;
      }
    }
    for (int c_out : {65, 80, 96, 129, 160, 193, 224, 257, 300}) {
      EXPECT_FALSE(groups_of_64(c_out, 144, 3, op)) << c_out;
    }
    EXPECT_FALSE(groups_of_64(128, 27, 3, op));
    EXPECT_FALSE(groups_of_64(128, 144, 5, op));
  }
  EXPECT_TRUE(groups_of_64(128, 72, 3, kTF32));
  EXPECT_TRUE(groups_of_64(128, 108, 3, kTF32));
  EXPECT_FALSE(groups_of_64(128, 216, 3, k16));  // 3-step chunks pad more
  EXPECT_FALSE(groups_of_64(128, 144, 3, k3x));
}

// 3xTF32 (no N = 64 kernel), C_out of one group of 32, K in one chunk (the reference's
// K = 27), other k_r.
TEST(WidthRule, EverythingElseKeepsGroupsOf32) {
  for (Operands op : {k16, kTF32}) {
    EXPECT_FALSE(groups_of_64(32, 144, 3, op));
    EXPECT_FALSE(groups_of_64(65, 144, 3, op));
    EXPECT_FALSE(groups_of_64(64, 27, 3, op));
    EXPECT_FALSE(groups_of_64(64, 32, 3, op));
    EXPECT_FALSE(groups_of_64(64, 144, 2, op));
    EXPECT_FALSE(groups_of_64(64, 144, 5, op));
  }
  EXPECT_FALSE(groups_of_64(64, 144, 3, k3x));
  EXPECT_FALSE(groups_of_64(64, 36, 3, k3x));
}

// Where 16-bit 3-step chunks pad more than 1-step ones (K = 216: 240 against 224; K = 50: 96
// against 64) the N = 32 kernels keep their 1-step chunks.
TEST(WidthRule, MorePaddingKeepsGroupsOf32) {
  EXPECT_FALSE(groups_of_64(64, 216, 3, k16));
  EXPECT_FALSE(groups_of_64(64, 50, 3, k16));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
