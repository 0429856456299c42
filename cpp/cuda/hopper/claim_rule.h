#pragma once
// When a persistent grid's CTAs claim their work items from a counter (each takes the next
// unclaimed item when it finishes one) instead of fixed shares (every walkers-th item). Plain
// host arithmetic, so that ctest can check it against the measured points
// (cpp/tests/claim_rule_test.cpp); wgmma_launch.cuh applies it.

namespace fusedconv::fused::hopper {

// With fixed shares an SM's CTAs end up to 20% apart (TIMELINE, session 48: the reference's
// TF32 CTAs take 44-54 µs for the same three items), and the SM idles behind its slowest.
// Claims let the faster CTAs take more items, but cost a memset of the counter before the
// launch and pay only over enough rounds of items (lab, H100, session 48, the lean kernels,
// µs fixed -> claimed): TF32 at 5 CTAs per SM 56.7 -> 57.2 (3 rounds), 72.9 -> 75.4 (4), 88.8
// -> 87.9 (5), 105.5 -> 103.0 (6), 203.7 -> 193.3 (12); bf16 44.2 -> 46.2, 57.6 -> 59.0, 69.7
// -> 69.8, 82.5 -> 81.8, 156.3 -> 147.7. 3xTF32's items vary the most, and its kernel at 4 per
// SM gains from 3 rounds: 58.1 -> 63.7 (2), 84.1 -> 81.9 (3), 109.2 -> 99.5 (4), 394.6 ->
// 367.3 (15).
constexpr long long kClaimFromRounds = 6;
constexpr long long kClaimFromRounds3x = 3;

// items: the grid's work items; walkers: the rings that walk them (CTAs x items per CTA).
inline bool claims_pay(long long items, long long walkers, bool split3x) {
  if (walkers <= 0) return false;
  return (items + walkers - 1) / walkers >= (split3x ? kClaimFromRounds3x : kClaimFromRounds);
}

}  // namespace fusedconv::fused::hopper
