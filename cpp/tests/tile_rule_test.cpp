// The output-tile choice (cuda/hopper/tile_rule.h): 2 x 32 tiles only where they cover the
// plane in fewer tiles than 4 x 16, as measured on the H200 (BENCHMARKS.md, v42).
#include <gtest/gtest.h>

#include "cuda/hopper/tile_rule.h"

namespace fusedconv::fused::hopper {
namespace {

TEST(TileRule, PlaneTilesCountRaggedEdges) {
  EXPECT_EQ(plane_tiles(30, 30, 4, 16), 16);  // 8 x 2
  EXPECT_EQ(plane_tiles(30, 30, 2, 32), 15);  // 15 x 1
  EXPECT_EQ(plane_tiles(1, 1, 4, 16), 1);
  EXPECT_EQ(plane_tiles(62, 62, 2, 32), 62);  // 31 x 2
  EXPECT_EQ(plane_tiles(62, 62, 4, 16), 64);  // 16 x 4
}

// The reference workload's 30 x 30 plane (measured: 4-8% faster at B = 128 and 1024 by lean
// kernel) and a 62 x 62 plane (W = 64) take 2 x 32.
TEST(TileRule, WideWhereFewerTiles) {
  EXPECT_TRUE(wide_tile_pays(30, 30));
  EXPECT_TRUE(wide_tile_pays(62, 62));
  EXPECT_TRUE(wide_tile_pays(29, 31));  // 15 x 1 against 8 x 2
  EXPECT_TRUE(wide_tile_pays(2, 32));   // 1 against 1 x 2
}

// Equal counts keep 4 x 16 (the larger footprint per tile costs): the tests' 28 x 30 plane
// (14 either way); narrow planes, where 2 x 32 would leave most of its columns empty, too.
TEST(TileRule, NarrowOrEqualKeepsFourBySixteen) {
  EXPECT_FALSE(wide_tile_pays(28, 30));
  EXPECT_FALSE(wide_tile_pays(30, 16));  // 15 against 8
  EXPECT_FALSE(wide_tile_pays(64, 20));  // 32 against 32
  EXPECT_FALSE(wide_tile_pays(1, 1));
  EXPECT_FALSE(wide_tile_pays(4, 16));  // 2 against 1
}

// 3xTF32's kept kernel (3 per SM, 132 SMs: 396 items a round) against the package's batch
// sweep at the reference shape (16 tiles of 4 x 16 or 15 of 2 x 32 per batch index): 2 x 32
// measured slower at B = 40, 72 and 83 (the same rounds), faster at 128 and 256.
TEST(TileRule, HighestWideOnlyWhereItSavesARound) {
  constexpr int kH200Sms = 132;
  auto wide = [](long long batch) { return wide_tile_saves_a_round(16 * batch, 15 * batch, 3, kH200Sms); };
  EXPECT_FALSE(wide(40));
  EXPECT_FALSE(wide(72));
  EXPECT_FALSE(wide(83));
  EXPECT_TRUE(wide(128));  // 6 rounds -> 5
  EXPECT_TRUE(wide(256));  // 11 -> 10
  EXPECT_TRUE(wide(52));   // the tests' batch (conftest.persistent_batch(1.55, 16)): 3 -> 2
}

}  // namespace
}  // namespace fusedconv::fused::hopper
