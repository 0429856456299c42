#pragma once
// Scalar parts of the fused CPU forward's reductions, with eager PyTorch's NaN semantics
// (the min itself is folded inside the row kernel, see conv_row_kernel.h):
// - the running min starts at +inf / index 0;
// - softmax over channels: subtract the max (NaN-propagating; std::max / fmaxf would drop
//   NaN, so they are not used), exp, normalise.
#include <cmath>
#include <cstdint>
#include <limits>

namespace fusedconv::cpu {

// A running min before its first row: +inf with index 0. With strict "<" (see the row
// kernel's takes_min) a column of all +inf keeps index 0, as torch.min returns.
template <typename T, typename I>
inline void init_min(T* minv, I* index, int64_t n) {
  for (int64_t i = 0; i < n; ++i) minv[i] = std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) index[i] = 0;
}

// Softmax over c_out channels for each of n_pos positions:
//   y[co * y_co_stride + pos] = softmax_co(in[co * in_co_stride + pos]).
// `in` is overwritten (with the exponentials); `scratch` holds 2 * n_pos values.
template <typename T, typename out_t>
inline void softmax_channels(T* in, int64_t in_co_stride, int64_t c_out, int64_t n_pos,
                             T* scratch, out_t* y, int64_t y_co_stride) {
  T* mx = scratch;
  T* sum = scratch + n_pos;
  for (int64_t pos = 0; pos < n_pos; ++pos) {
    mx[pos] = -std::numeric_limits<T>::infinity();
    sum[pos] = T(0);
  }
  for (int64_t co = 0; co < c_out; ++co) {
    const T* v = in + co * in_co_stride;
    // NaN-propagating max: a NaN is taken, and once taken nothing compares greater.
    for (int64_t pos = 0; pos < n_pos; ++pos)
      mx[pos] = (v[pos] > mx[pos] || v[pos] != v[pos]) ? v[pos] : mx[pos];
  }
  for (int64_t co = 0; co < c_out; ++co) {
    T* v = in + co * in_co_stride;
    for (int64_t pos = 0; pos < n_pos; ++pos) {
      v[pos] = std::exp(v[pos] - mx[pos]);
      sum[pos] += v[pos];
    }
  }
  for (int64_t co = 0; co < c_out; ++co) {
    const T* v = in + co * in_co_stride;
    out_t* out = y + co * y_co_stride;
    for (int64_t pos = 0; pos < n_pos; ++pos) out[pos] = static_cast<out_t>(v[pos] / sum[pos]);
  }
}

}  // namespace fusedconv::cpu
