#include "cpu/tiling.h"

#include <algorithm>

namespace fusedconv::cpu {
namespace {

// Starting tile along the free axis. Large tiles pay off twice: the (k-1)-row halo is
// re-packed less often, and with the whole axis in one tile the slab's source rows are
// contiguous planes of x, which stream from memory at full speed (measured: with 8-row
// tiles, packing the reference workload took ~40% as long as the convolution itself).
// The slab bound below still keeps a slab cache-resident.
constexpr int64_t kPreferredTile = 32;
// Tasks per thread wanted for load balance (tasks are handed out dynamically).
constexpr int64_t kTasksPerThread = 4;

int64_t slab_bytes(const Problem& p, int64_t tile_d, int64_t tile_h, int64_t slab_w,
                   int64_t elem_bytes) {
  return p.c_in * (tile_d + p.k_d - 1) * (tile_h + p.k_h - 1) * slab_w * elem_bytes;
}

}  // namespace

TilePlan plan_tiles(const Problem& p, int64_t w_tile, int64_t num_threads, int64_t elem_bytes,
                    int64_t max_slab_bytes) {
  TilePlan plan;
  plan.w_padded = round_up(p.w_out, w_tile);
  plan.slab_w = plan.w_padded + p.k_w - 1;

  // The reduced axis (d for dim=2, h for dim=3) is never split; for dim=4 h stays whole so
  // that a task's output groups are contiguous rows of y. The other axis is "free".
  const bool free_is_h = p.dim == 2;
  const int64_t free_extent = free_is_h ? p.h_out : p.d_out;
  plan.tile_d = p.d_out;
  plan.tile_h = p.h_out;
  int64_t& tile = free_is_h ? plan.tile_h : plan.tile_d;

  tile = std::min(free_extent, kPreferredTile);
  const int64_t wanted_tasks = std::max<int64_t>(1, num_threads) * kTasksPerThread;
  while (tile > 1 && p.batch * ceil_div(free_extent, tile) < wanted_tasks) {
    tile = ceil_div(tile, 2);
  }
  while (tile > 1 &&
         slab_bytes(p, plan.tile_d, plan.tile_h, plan.slab_w, elem_bytes) > max_slab_bytes) {
    tile = ceil_div(tile, 2);
  }

  plan.tiles_d = ceil_div(p.d_out, plan.tile_d);
  plan.tiles_h = ceil_div(p.h_out, plan.tile_h);
  plan.num_tasks = p.batch * plan.tiles_d * plan.tiles_h;
  plan.slab_d = plan.tile_d + p.k_d - 1;
  plan.slab_h = plan.tile_h + p.k_h - 1;

  if (p.dim == 2) {
    plan.groups = p.h_out;
    plan.positions = p.w_out;
    plan.groups_per_task = plan.tile_h;
  } else {
    plan.groups = p.d_out;
    plan.positions = p.dim == 3 ? p.w_out : p.h_out;
    plan.groups_per_task = plan.tile_d;
  }
  return plan;
}

TaskRange task_range(const Problem& p, const TilePlan& plan, int64_t t) {
  const int64_t per_batch = plan.tiles_d * plan.tiles_h;
  const int64_t b = t / per_batch;
  const int64_t r = t % per_batch;
  const int64_t d0 = (r / plan.tiles_h) * plan.tile_d;
  const int64_t h0 = (r % plan.tiles_h) * plan.tile_h;
  return TaskRange{b, d0, h0, std::min(plan.tile_d, p.d_out - d0),
                   std::min(plan.tile_h, p.h_out - h0)};
}

void tap_offsets(const Problem& p, const TilePlan& plan, int64_t* offsets) {
  int64_t t = 0;
  for (int64_t ci = 0; ci < p.c_in; ++ci)
    for (int64_t kd = 0; kd < p.k_d; ++kd)
      for (int64_t kh = 0; kh < p.k_h; ++kh)
        for (int64_t kw = 0; kw < p.k_w; ++kw)
          offsets[t++] = ((ci * plan.slab_d + kd) * plan.slab_h + kh) * plan.slab_w + kw;
}

}  // namespace fusedconv::cpu
