// The retiring-kernel choice (cuda/hopper/retire_rule.h) against the crossovers measured on
// the H200 (132 SMs; BENCHMARKS.md v36 / v37 / v38): where the retiring kernel measured faster by
// more than 1%, the rule takes it; where it measured slower, the rule keeps the other.
#include <gtest/gtest.h>

#include <climits>

#include "cuda/hopper/retire_rule.h"

namespace fusedconv::fused::hopper {
namespace {

constexpr int kH200Sms = 132;

struct Point {
  long long tiles;
  bool retire;  // measured faster retiring
};

TEST(RetireRule, RoundsCountPartialWaves) {
  EXPECT_EQ(item_rounds(1, 4, kH200Sms), 1);
  EXPECT_EQ(item_rounds(528, 4, kH200Sms), 1);
  EXPECT_EQ(item_rounds(529, 4, kH200Sms), 2);
  EXPECT_EQ(item_rounds(16384, 5, kH200Sms), 25);
}

// 16-bit operands: the lean kernel (5 CTAs per SM) against the 4-per-SM one, persistent,
// from 4 rounds (bf16 v36 crossover lab, autocast v37 lab; 5 per SM with the argmin then, the
// same rounds). 800 tiles measured equal (27.65 / 27.58 µs) and keeps.
TEST(RetireRule, SixteenBitMatchesTheCrossoverLab) {
  for (const Point pt : {Point{128, false}, Point{640, true}, Point{800, false}, Point{1024, false},
                         Point{1152, true}, Point{1280, true}, Point{1536, false}, Point{1792, true},
                         Point{2048, true}, Point{4096, true}, Point{16384, true}}) {
    SCOPED_TRACE("tiles " + std::to_string(pt.tiles));
    EXPECT_EQ(lean_pays(pt.tiles, 4, 0, 5, kH200Sms), pt.retire);
  }
}

// TF32, 3 vs 4 CTAs per SM: persistent from 3 rounds (v37 lab; 640 tiles, 4% faster retiring,
// is the one point it misses: 720 at the same 2 / 2 rounds was 2% slower); one CTA per tile
// (cp.async) only where it saves a wave (session 10 lab: 768 tiles 34.5 / 38.3 µs).
TEST(RetireRule, Tf32MatchesTheLab) {
  for (const Point pt : {Point{384, false}, Point{400, true}, Point{528, true}, Point{720, false},
                         Point{1056, true}, Point{1120, true}, Point{1184, true}, Point{1584, true},
                         Point{2048, true}, Point{16384, true}}) {
    SCOPED_TRACE("tiles " + std::to_string(pt.tiles));
    EXPECT_EQ(retiring_pays(pt.tiles, 3, 4, kH200Sms, kRetireFromRounds), pt.retire);
  }
  EXPECT_FALSE(retiring_pays(768, 3, 4, kH200Sms, LLONG_MAX));
  EXPECT_TRUE(retiring_pays(1024, 3, 4, kH200Sms, LLONG_MAX));
}

// The lean TF32 kernel (5 per SM) against the one it replaces: the 3-per-SM kernel where
// the retiring one does not pay (640 tiles: 29.08 / 23.70 µs), else the retiring 4-per-SM one
// (v38 lab: 1024: 33.35 / 35.54; 1600: 52.97 / 47.94; 2048: 60.01 / 57.74; 4096: 111.7 / 107.7).
TEST(RetireRule, LeanTf32MatchesTheLab) {
  for (const Point pt : {Point{128, false}, Point{640, true}, Point{1024, false}, Point{1600, true},
                         Point{2048, true}, Point{4096, true}, Point{16384, true}}) {
    SCOPED_TRACE("tiles " + std::to_string(pt.tiles));
    EXPECT_EQ(lean_pays(pt.tiles, 3, 4, 5, kH200Sms), pt.retire);
  }
}

// N = 32 (C_out 25..32), lean at 4 per SM (session 21 lab, reference shape at C_out = 32, 16 tiles
// per batch index): bf16 against its 3-per-SM kernel, TF32 against its retiring 4-per-SM one,
// which the lean kernel replaces wherever that one runs (the same kernel without the argmin).
TEST(RetireRule, LeanAtN32MatchesTheLab) {
  for (const long long tiles : {1024LL, 2048LL, 4096LL}) {  // B = 64, 128, 256: all faster lean
    SCOPED_TRACE("tiles " + std::to_string(tiles));
    EXPECT_TRUE(lean_pays(tiles, 3, 0, 4, kH200Sms));
    EXPECT_TRUE(lean_pays(tiles, 3, 4, 4, kH200Sms));
  }
  EXPECT_FALSE(lean_pays(300, 3, 0, 4, kH200Sms));  // one round either way
  EXPECT_FALSE(lean_pays(300, 3, 4, 4, kH200Sms));  // (TF32 keeps 3 per SM there)
}

// Grids of one CTA per item (not persistent; channel clusters were until v43): lean only where
// it needs fewer waves. 4096 CTAs (C_out = 64 at B = 128): 11 waves at 3 per SM, 8 at 4; 500
// CTAs: 2 / 1; at N = 24, 16-bit (4 / 5 per SM), 700 CTAs take 2 waves either way and 2112 take 4.
TEST(RetireRule, LeanOnOneCtaPerItemOnlyForFewerWaves) {
  EXPECT_TRUE(lean_pays(4096, 3, 0, 4, kH200Sms, false));
  EXPECT_TRUE(lean_pays(4096, 3, 4, 4, kH200Sms, false));
  EXPECT_TRUE(lean_pays(500, 3, 0, 4, kH200Sms, false));
  EXPECT_FALSE(lean_pays(700, 4, 0, 5, kH200Sms, false));
  EXPECT_FALSE(lean_pays(2112, 4, 0, 5, kH200Sms, false));  // 4 waves either way
  EXPECT_TRUE(lean_pays(2112, 4, 0, 5, kH200Sms, true));    // persistent: 4 rounds
  EXPECT_FALSE(lean_pays(300, 3, 4, 4, kH200Sms, false));   // one wave: TF32 keeps 3 per SM
}

// 3xTF32 at N = 32 (v41, lab, H200): the kept kernel 2 per SM (200 registers), the lean one 3;
// C_out = 32 at B = 128 (2048 items): 199.7 -> 186.9 µs. The 1.9-wave test batch (72 x 14
// items), sanitize_case's 800-item grid and the C_out = 56, B = 26 clusters take it.
TEST(RetireRule, HighestLeanAtN32) {
  EXPECT_TRUE(lean_pays(2048, 2, 0, 3, kH200Sms));         // 8 rounds -> 6
  EXPECT_TRUE(lean_pays(72 * 14, 2, 0, 3, kH200Sms));      // 4 -> 3
  EXPECT_TRUE(lean_pays(800, 2, 0, 3, kH200Sms));          // 4 -> 3
  EXPECT_FALSE(lean_pays(450, 2, 0, 3, kH200Sms));         // 2 either way
  EXPECT_TRUE(lean_pays(728, 2, 0, 3, kH200Sms, false));   // clusters: 3 waves -> 2
  EXPECT_FALSE(lean_pays(504, 2, 0, 3, kH200Sms, false));  // 2 either way
}

// 3xTF32's lean kernel at N = 24 (v59): 4 per SM against its kept kernel's 3.
TEST(RetireRule, HighestLeanAtN24) {
  EXPECT_TRUE(lean_pays(2048, 3, 0, 4, kH200Sms));   // the reference: 6 rounds -> 4
  EXPECT_TRUE(lean_pays(1008, 3, 0, 4, kH200Sms));   // 3 -> 2
  EXPECT_FALSE(lean_pays(700, 3, 0, 4, kH200Sms));   // 2 either way
  EXPECT_FALSE(lean_pays(1162, 3, 0, 4, kH200Sms));  // 3 either way
}

// The tests' persistent batches (tests/conftest.py, persistent_batch: 14 tiles per batch index,
// waves of 4 CTAs per SM) take the kernels their docstring names.
TEST(RetireRule, PersistentTestBatchesTakeTheNamedKernels) {
  auto tiles = [](double waves) { return 14LL * (static_cast<long long>(waves * 4 * kH200Sms / 14) + 1); };
  EXPECT_FALSE(retiring_pays(tiles(1.3), 3, 4, kH200Sms, kRetireFromRounds));  // TF32 keeps 3 per SM
  EXPECT_FALSE(lean_pays(tiles(1.3), 3, 4, 5, kH200Sms));
  EXPECT_FALSE(lean_pays(tiles(1.3), 4, 0, 5, kH200Sms));                     // 16-bit keeps 4 per SM
  EXPECT_TRUE(retiring_pays(tiles(1.9), 3, 4, kH200Sms, kRetireFromRounds));   // TF32 retires
  EXPECT_FALSE(lean_pays(tiles(1.9), 3, 4, 5, kH200Sms));
  EXPECT_FALSE(lean_pays(tiles(1.9), 4, 0, 5, kH200Sms));
  EXPECT_TRUE(lean_pays(tiles(2.2), 3, 4, 5, kH200Sms));                      // lean, both
  EXPECT_TRUE(lean_pays(tiles(2.2), 4, 0, 5, kH200Sms));
  EXPECT_TRUE(retiring_pays(tiles(2.2), 3, 4, kH200Sms, kRetireFromRounds));   // with the argmin
}

TEST(RetireRule, NoDeviceKeepsTheDefault) {
  EXPECT_FALSE(retiring_pays(16384, 4, 5, 0, kLeanFromRounds));
  EXPECT_FALSE(retiring_pays(16384, 0, 5, kH200Sms, kLeanFromRounds));
  EXPECT_FALSE(lean_pays(16384, 4, 0, 5, 0));
}

}  // namespace
}  // namespace fusedconv::fused::hopper
