#pragma once
// When a retiring kernel (kRetireEachPlane: one more CTA per SM, each CTA slower) beats the
// kernel it replaces. Plain host arithmetic, so that ctest can check it against the measured
// crossovers (cpp/tests/retire_rule_test.cpp); wgmma_launch.cuh applies it.

#include <climits>

namespace fusedconv::fused::hopper {

// Rounds of items that per_sm CTAs per SM take: a persistent grid's, or the waves of a grid
// of one CTA per item.
inline long long item_rounds(long long items, int per_sm, int sms) {
  const long long wave = 1LL * per_sm * sms;
  return (items + wave - 1) / wave;
}

// Where the retiring kernel takes fewer rounds, or where the kept one takes from_rounds or
// more: at equal rounds the extra CTA per SM wins only on long persistent grids.
inline bool retiring_pays(long long items, int keep_per_sm, int retire_per_sm, int sms, long long from_rounds) {
  if (sms <= 0 || keep_per_sm <= 0 || retire_per_sm <= 0) return false;
  const long long keep = item_rounds(items, keep_per_sm, sms);
  return item_rounds(items, retire_per_sm, sms) < keep || keep >= from_rounds;
}

// from_rounds measured on the H200: TF32's retiring kernel on persistent grids (v37), and the
// lean kernels against the one they replace (v36 / v38).
constexpr long long kRetireFromRounds = 3;
constexpr long long kLeanFromRounds = 4;

// Whether the lean kernel (lean_per_sm CTAs per SM) beats the one it replaces on a grid of
// `items`: the retiring kernel (retire_per_sm; 0: the mode has none) where that beats the kept
// one, else the kept one. At equal CTAs per SM it replaces the retiring kernel always: it is
// that kernel without the argmin. A grid of one CTA per item (not persistent: R split over a
// cluster) takes it only where it needs fewer waves, as the retiring kernel there.
inline bool lean_pays(long long items, int keep_per_sm, int retire_per_sm, int lean_per_sm, int sms,
                      bool persistent = true) {
  const long long retire_from = persistent ? kRetireFromRounds : LLONG_MAX;
  const long long lean_from = persistent ? kLeanFromRounds : LLONG_MAX;
  const bool retire = retire_per_sm > 0 && retiring_pays(items, keep_per_sm, retire_per_sm, sms, retire_from);
  if (retire && retire_per_sm == lean_per_sm) return true;
  return retiring_pays(items, retire ? retire_per_sm : keep_per_sm, lean_per_sm, sms, lean_from);
}

}  // namespace fusedconv::fused::hopper
