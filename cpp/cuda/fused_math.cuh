#pragma once
// Device math shared by the fused kernels (mma.sync in fused_kernel.cuh, wgmma in
// hopper/wgmma_kernel.cuh): NaN-aware max and min folding, and the "highest" operand splits.
#include <cuda_bf16.h>

#include <cute/tensor.hpp>

namespace fusedconv::fused {

// NaN-propagating max: fmaxf would drop the NaN.
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

// torch.min's rule for the running min along R: the first NaN wins, else the first strict
// minimum. Returns whether v replaces m (the caller updates the index with it).
__device__ __forceinline__ bool min_takes(float v, float m) { return (m == m) && (v < m || v != v); }

// One step of torch.min's running (min, index) under min_takes's rule.
__device__ __forceinline__ void min_update(float& m, int& arg, float v, int idx) {
  const bool take = min_takes(v, m);
  m = take ? v : m;
  arg = take ? idx : arg;
}

// NaN-propagating min in one instruction (min.NaN, sm_80+; CuTe and the CUDA math API have
// no float version). For the min value alone: a signed-zero tie may give -0 for +0, which
// the softmax maps to the same output; argmin tracking uses min_takes instead.
__device__ __forceinline__ float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// v rounded to TF32 (round half up on the magnitude), as float bits: the splits' big part.
__device__ __forceinline__ uint32_t tf32_big_bits(float v) {
  return cutlass::tfloat32_t::round_half_ulp_truncate(v).raw() & 0xffffe000u;
}

// 3xTF32 split: big = tf32_big_bits(v), small = the exact remainder v - big, itself rounded
// to TF32. The cross terms use `cross`:
// big for finite values, 0 for Inf/NaN, so that an Inf never meets the other operand's
// small part (often exactly 0) and turns into a NaN; big * big alone carries Inf/NaN.
__device__ __forceinline__ void split_tf32(float v, cutlass::tfloat32_t& big,
                                           cutlass::tfloat32_t& cross,
                                           cutlass::tfloat32_t& small) {
  const bool finite = isfinite(v);
  const uint32_t big_bits = tf32_big_bits(v);
  big = cutlass::tfloat32_t::bitcast(big_bits);
  cross = cutlass::tfloat32_t::bitcast(finite ? big_bits : 0u);
  // Rounded too (the MMA would truncate it): unbiased errors do not pile up over long K.
  small = finite ? cutlass::tfloat32_t::round_half_ulp_truncate(v - __uint_as_float(big_bits))
                 : cutlass::tfloat32_t::bitcast(0u);
}

// The wgmma kernels' "highest" split of w (x: bf16_pairs_truncated): big as split_tf32's, and the two
// cross-term operands as one bf16 pair (low half: bf16(cross), rounded toward zero so that a
// finite value near FLT_MAX stays finite; high half: bf16(v - big), rounded to nearest).
// A bf16 cross term is off by ~2^-9 of itself, itself ~2^-11 of the product: ~2^-19 per
// product (float64 simulation: rel err 0.6-2.3e-6 at K = 81..2000, 3xTF32 ~1e-7).
__device__ __forceinline__ void split_tf32_bf16(float v, cutlass::tfloat32_t& big, uint32_t& pair) {
  const bool finite = isfinite(v);
  const uint32_t big_bits = tf32_big_bits(v);
  big = cutlass::tfloat32_t::bitcast(big_bits);
  const float cross = finite ? __uint_as_float(big_bits) : 0.0f;
  const float small = finite ? v - __uint_as_float(big_bits) : 0.0f;
  pair = uint32_t(__bfloat16_as_ushort(__float2bfloat16_rz(cross))) |
         (uint32_t(__bfloat16_as_ushort(__float2bfloat16_rn(small))) << 16);
}

// split_tf32_bf16's pairs for two values a and b whose big part the TF32 MMA takes from the
// value itself (it reads the top 19 bits, truncating), as a bf16 wgmma's A registers hold them:
// `tops` = (top 16 bits of a | of b << 16), i.e. bf16_rz(trunc19(v)), and `smalls` =
// (bf16_rn(v - trunc19(v)) of a | of b << 16), the remainder exact before its rounding (< 2^-10
// |v|). One PRMT and one F2FP per two values. An Inf or NaN becomes 0 first: its pair is 0, as
// in split_tf32_bf16, and the TF32 part, the value itself, carries it.
__device__ __forceinline__ void bf16_pairs_truncated(float a, float b, uint32_t& tops, uint32_t& smalls) {
  const float fa = isfinite(a) ? a : 0.0f, fb = isfinite(b) ? b : 0.0f;
  const uint32_t ua = __float_as_uint(fa), ub = __float_as_uint(fb);
  tops = __byte_perm(ua, ub, 0x7632);
  const __nv_bfloat162 s = __floats2bfloat162_rn(fa - __uint_as_float(ua & 0xffffe000u),
                                                 fb - __uint_as_float(ub & 0xffffe000u));
  smalls = *reinterpret_cast<const uint32_t*>(&s);
}

// One operand value as the MMA consumes it (TF32 reads the top 19 bits of the float).
template <class ValA, class Element>
__device__ __forceinline__ ValA to_mma(Element v) {
  if constexpr (cute::is_same_v<ValA, cutlass::tfloat32_t>) {
    return cutlass::tfloat32_t::bitcast(__float_as_uint(v));
  } else {
    return ValA(v);  // a copy, or a rounding conversion when ValA is narrower
  }
}

}  // namespace fusedconv::fused
