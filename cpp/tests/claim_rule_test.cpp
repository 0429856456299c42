// The item-claim choice (cuda/hopper/claim_rule.h) against the points measured on the H100
// (132 SMs; BENCHMARKS.md, session 48): where claims measured faster by more than 1%, the rule
// claims; where they measured slower or tied, it keeps fixed shares.
#include <gtest/gtest.h>

#include <string>

#include "cuda/hopper/claim_rule.h"

namespace fusedconv::fused::hopper {
namespace {

constexpr long long kH100Sms = 132;

struct Point {
  long long batch;
  int per_sm;
  bool split3x;
  bool claims;  // measured faster claiming
};

// The reference plane (30 x 30 outputs: 15 tiles of 2 x 32 per batch index): the TF32 and
// bf16 lean kernels at 5 CTAs per SM (B = 213, 5 rounds: TF32 1% faster, bf16 a tie; kept
// fixed), 3xTF32's at 4.
TEST(ClaimRule, MatchesTheLab) {
  for (const Point pt : {Point{128, 5, false, false}, Point{171, 5, false, false}, Point{213, 5, false, false},
                         Point{256, 5, false, true}, Point{512, 5, false, true}, Point{1024, 5, false, true},
                         Point{70, 4, true, false}, Point{96, 4, true, true}, Point{128, 4, true, true},
                         Point{256, 4, true, true}, Point{512, 4, true, true}, Point{1024, 4, true, true}}) {
    SCOPED_TRACE("batch " + std::to_string(pt.batch) + ", " + std::to_string(pt.per_sm) + " per SM" +
                 (pt.split3x ? ", 3xTF32" : ""));
    EXPECT_EQ(claims_pay(pt.batch * 15, pt.per_sm * kH100Sms, pt.split3x), pt.claims);
  }
}

TEST(ClaimRule, OneRoundNeverClaims) {
  for (const bool split3x : {false, true}) {
    EXPECT_FALSE(claims_pay(660, 660, split3x));
    EXPECT_FALSE(claims_pay(1, 660, split3x));
    EXPECT_FALSE(claims_pay(100, 0, split3x));
  }
  EXPECT_TRUE(claims_pay(5 * 660 + 1, 660, false));
  EXPECT_TRUE(claims_pay(2 * 528 + 1, 528, true));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
