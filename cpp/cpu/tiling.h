#pragma once
// How the fused CPU forward splits one problem into independent tasks.
//
// A task owns one batch index and a tile of output rows (d, h); a "row" is the conv output
// for fixed (b, d, h): all C_out channels x all W_out positions. A task must own whole min
// columns, so the reduced axis is never split: for dim=2 a task spans all of D_out, for
// dim=3 all of H_out. For dim=4 the min runs along each row, so a task spans all of H_out
// and tiles D_out. The task's input (a "slab" of x) is packed once into a small contiguous
// buffer: that handles any strides, channels_last_3d and the bf16/fp16 upcast in one place.
//
// The output y is viewed as (B, C_out, G, P): G ("groups") is the kept one of d/h and P
// ("positions") the contiguous last axis:
//   dim=2: G = H_out, P = W_out      dim=3: G = D_out, P = W_out      dim=4: G = D_out, P = H_out
#include <cstdint>

#include "common/problem.h"

namespace fusedconv::cpu {

struct TilePlan {
  int64_t tile_d = 1, tile_h = 1;    // output rows per task along d and h
  int64_t tiles_d = 1, tiles_h = 1;  // number of tiles along d and h
  int64_t num_tasks = 0;             // batch * tiles_d * tiles_h

  // Packed slab of x for one task: [C_in][slab_d][slab_h][slab_w].
  int64_t slab_d = 1, slab_h = 1, slab_w = 1;
  int64_t w_padded = 1;  // W_out rounded up to the row kernel's w tile

  // y viewed as (B, C_out, G, P), see above; groups_per_task = G extent of one task.
  int64_t groups = 1, positions = 1, groups_per_task = 1;

  int64_t slab_elements(int64_t c_in) const { return c_in * slab_d * slab_h * slab_w; }
};

// Task coordinates: batch index and the first output (d, h) row of the tile, plus how many
// rows the tile really has (the last tile along an axis may be shorter).
struct TaskRange {
  int64_t b, d0, h0, nd, nh;
};

// Plans tiles for `p` given the row kernel's w tile (lanes per tile) and the number of
// worker threads. Aims at enough tasks to balance the threads, at little input re-packing
// (tile >> kernel size) and at a slab that stays within `max_slab_bytes` where possible.
TilePlan plan_tiles(const Problem& p, int64_t w_tile, int64_t num_threads,
                    int64_t elem_bytes = 4, int64_t max_slab_bytes = int64_t{1} << 20);

// Coordinates of task `t` (0 <= t < plan.num_tasks).
TaskRange task_range(const Problem& p, const TilePlan& plan, int64_t t);

// Offsets (in elements) of the C_in*kD*kH*kW taps inside a packed slab, relative to the
// slab position of the output row's origin; tap order (ci, kd, kh, kw) as in the weight.
void tap_offsets(const Problem& p, const TilePlan& plan, int64_t* offsets);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace fusedconv::cpu
