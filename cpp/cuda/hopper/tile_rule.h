#pragma once
// Which output tile a Hopper kernel that comes in two takes: 4 x 16 positions (every kernel)
// or 2 x 32 (the lean kernels, and 3xTF32's kept one at N = 24, k_r = 3 on one channel group,
// by TMA). Plain host arithmetic, so that ctest checks it (cpp/tests/tile_rule_test.cpp);
// wgmma_launch.cuh applies it: wide_tile_pays for every such kernel, and for 3xTF32's also
// wide_tile_saves_a_round.

#include "cuda/hopper/retire_rule.h"  // item_rounds

namespace fusedconv::fused::hopper {

// Tiles of tile_p x tile_q positions that cover a p_out x q_out output plane.
inline long long plane_tiles(long long p_out, long long q_out, int tile_p, int tile_q) {
  return ((p_out + tile_p - 1) / tile_p) * ((q_out + tile_q - 1) / tile_q);
}

// The 2 x 32 tile where it covers the plane in fewer tiles: a 30 x 30 plane (the reference
// workload) in 15 instead of 16. Per tile it cost the same as 4 x 16 or less on the H200 at
// its bank-conflict-free pitches (lab, session 23, B = 1024: 6.3% fewer tiles, 6.8-8% less
// time; BENCHMARKS.md, v42); at equal counts its footprint is larger (4 rows of 44 floats
// against 6 of 20 at k_p = 3), so 4 x 16 stays.
inline bool wide_tile_pays(long long p_out, long long q_out) {
  return plane_tiles(p_out, q_out, 2, 32) < plane_tiles(p_out, q_out, 4, 16);
}

// A kernel whose 2 x 32 tiles cost more per item than its 4 x 16 ones takes them only where
// they need fewer rounds of items at its CTAs per SM: 3xTF32's kept kernel (3 per SM), whose
// items took ~5% longer on 2 x 32 tiles when it still wrote three split planes per slot (lab,
// H200, B = 1024: 6.3% fewer items, 1.2% less time; v42). The split planes are gone since v58;
// the rule has not been measured again without them. Package, graph µs 4 x 16 / 2 x 32 at the reference
// shape by batch (items narrow / wide, rounds at 396 per round): B = 40 (640 / 600, 2 / 2)
// 65.4 / 67.6; 72 (1152 / 1080, 3 / 3) 96.5 / 99.2; 83 (1328 / 1245, 4 / 4) 115.7 / 119.3;
// 128 (2048 / 1920, 6 / 5) 171.3 / 162.1; 256 (4096 / 3840, 11 / 10) 318.2 / 316.3.
inline bool wide_tile_saves_a_round(long long narrow_items, long long wide_items, int per_sm, int sms) {
  return item_rounds(wide_items, per_sm, sms) < item_rounds(narrow_items, per_sm, sms);
}

}  // namespace fusedconv::fused::hopper
