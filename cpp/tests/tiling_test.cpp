// Host-side indexing of the fused CPU forward: task tiling, slab tap offsets, channel blocks.
#include <gtest/gtest.h>

#include <vector>

#include "common/problem.h"
#include "cpu/conv_row_kernel.h"
#include "cpu/tiling.h"
#include "test_util.h"

namespace fusedconv::cpu {
namespace {

using testing::make_problem;

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (int64_t dim : {2, 3, 4}) {
    out.push_back(make_problem(128, 3, 24, 24, 32, 32, 3, 3, 3, dim));  // reference workload
    out.push_back(make_problem(1, 1, 1, 1, 1, 1, 1, 1, 1, dim));
    out.push_back(make_problem(3, 2, 5, 7, 9, 11, 2, 3, 1, dim));
    out.push_back(make_problem(1, 16, 64, 16, 64, 64, 5, 5, 5, dim));
    out.push_back(make_problem(2, 4, 7, 300, 3, 5, 1, 2, 2, dim));    // long depth
    out.push_back(make_problem(1, 2, 3, 3, 200, 400, 3, 1, 3, dim));  // big planes
  }
  return out;
}

TEST(Tiling, TasksCoverEveryOutputRowExactlyOnce) {
  for (const Problem& p : problems()) {
    for (int64_t w_tile : {4, 8, 16, 32}) {
      for (int64_t threads : {1, 2, 8}) {
        SCOPED_TRACE("dim " + std::to_string(p.dim) + " D_out " + std::to_string(p.d_out) +
                     " H_out " + std::to_string(p.h_out) + " w_tile " + std::to_string(w_tile) +
                     " threads " + std::to_string(threads));
        const TilePlan plan = plan_tiles(p, w_tile, threads);
        std::vector<int> seen(p.batch * p.d_out * p.h_out, 0);
        for (int64_t t = 0; t < plan.num_tasks; ++t) {
          const TaskRange r = task_range(p, plan, t);
          ASSERT_GE(r.nd, 1);
          ASSERT_GE(r.nh, 1);
          ASSERT_LE(r.nd, plan.tile_d);
          ASSERT_LE(r.nh, plan.tile_h);
          // The reduced axis is never split, and dim=4 keeps whole h (contiguous groups).
          if (p.dim == 2) {
            ASSERT_EQ(r.nd, p.d_out);
          } else {
            ASSERT_EQ(r.nh, p.h_out);
          }
          for (int64_t d = r.d0; d < r.d0 + r.nd; ++d)
            for (int64_t h = r.h0; h < r.h0 + r.nh; ++h)
              ++seen[(r.b * p.d_out + d) * p.h_out + h];
        }
        for (int count : seen) ASSERT_EQ(count, 1);
      }
    }
  }
}

TEST(Tiling, PaddingSlabAndOutputViewAreConsistent) {
  for (const Problem& p : problems()) {
    for (int64_t w_tile : {4, 8, 16, 32}) {
      const TilePlan plan = plan_tiles(p, w_tile, 2);
      EXPECT_EQ(plan.w_padded % w_tile, 0);
      EXPECT_GE(plan.w_padded, p.w_out);
      EXPECT_LT(plan.w_padded, p.w_out + w_tile);
      EXPECT_EQ(plan.slab_w, plan.w_padded + p.k_w - 1);  // the last tile's taps stay inside
      EXPECT_EQ(plan.slab_d, plan.tile_d + p.k_d - 1);
      EXPECT_EQ(plan.slab_h, plan.tile_h + p.k_h - 1);
      // y viewed as (B, C_out, G, P) is exactly the op's output shape.
      const std::vector<int64_t> out = p.output_sizes();
      EXPECT_EQ(out[2], plan.groups);
      EXPECT_EQ(out[3], plan.positions);
      EXPECT_EQ(plan.groups_per_task, p.dim == 2 ? plan.tile_h : plan.tile_d);
    }
  }
}

TEST(Tiling, BalancesThreadsAndBoundsTheSlab) {
  const Problem p = make_problem(128, 3, 24, 24, 32, 32, 3, 3, 3, 2);
  const TilePlan plan = plan_tiles(p, 16, 2);
  EXPECT_GE(plan.num_tasks, 8);                              // >= 4 tasks per thread
  EXPECT_LE(plan.slab_elements(p.c_in) * 4, int64_t{1} << 20);  // slab <= 1 MiB
  // Few batches: the free axis is split finer to feed the threads.
  const Problem one = make_problem(1, 3, 24, 24, 32, 32, 3, 3, 3, 2);
  EXPECT_GE(plan_tiles(one, 16, 2).num_tasks, 8);
  // A huge plane shrinks the tile to keep the slab small (down to one row if needed).
  const Problem big = make_problem(1, 16, 8, 40, 40, 4000, 3, 3, 3, 3);
  const TilePlan bp = plan_tiles(big, 16, 1);
  EXPECT_TRUE(bp.tile_d == 1 || bp.slab_elements(big.c_in) * 4 <= (int64_t{1} << 20));
}

TEST(Tiling, TapOffsetsWalkTheSlabInWeightOrder) {
  const Problem p = make_problem(2, 3, 5, 9, 8, 20, 2, 3, 4, 3);
  const TilePlan plan = plan_tiles(p, 8, 2);
  const int64_t taps = p.c_in * p.k_d * p.k_h * p.k_w;
  std::vector<int64_t> off(taps);
  tap_offsets(p, plan, off.data());
  int64_t t = 0;
  for (int64_t ci = 0; ci < p.c_in; ++ci)
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw, ++t)
          EXPECT_EQ(off[t], ((ci * plan.slab_d + kd) * plan.slab_h + kh) * plan.slab_w + kw);
  // The farthest read of the last output row of a task stays inside the slab.
  const int64_t last_row = ((plan.tile_d - 1) * plan.slab_h + (plan.tile_h - 1)) * plan.slab_w;
  EXPECT_LE(last_row + off[taps - 1] + plan.w_padded, plan.slab_elements(p.c_in));
}

TEST(ChannelBlocks, CoverAllChannelsWithoutPadding) {
  for (int64_t co_block : {6, 12}) {
    for (int64_t c_out = 1; c_out <= 40; ++c_out) {
      int64_t covered = 0;
      int64_t previous = co_block;
      while (covered < c_out) {
        const int64_t cb = channel_block(c_out, covered, co_block);
        ASSERT_GE(cb, 1);
        ASSERT_LE(cb, previous);  // full blocks first, then shrinking tails
        ASSERT_TRUE(cb == co_block || (cb & (cb - 1)) == 0) << cb;  // instantiated sizes only
        previous = cb;
        covered += cb;
      }
      EXPECT_EQ(covered, c_out);
    }
  }
}

}  // namespace
}  // namespace fusedconv::cpu
