#pragma once
// The SIMD heart of the fused CPU forward: one conv output row for fixed (b, d, h), i.e.
// conv[co][w] = bias[co] + sum_taps weight[co][tap] * input[tap_offset + w] for all C_out
// channels and all (padded) W_out positions, read from a packed slab of x. The row is
// consumed straight from registers by an epilogue (store it, fold it into a running min,
// or take its min along w), so the conv values never make a round trip through memory.
//
// Several instruction-set variants (avx512, avx2+fma, generic) are compiled from one
// template (GCC vector extensions inside `#pragma GCC target` regions, no -march flags) and
// picked at run time from what the CPU supports, so the library stays portable.
#include <cstdint>
#include <type_traits>
#include <vector>

namespace fusedconv::cpu {

// Integer of T's width: the running-argmin lanes sit next to the value lanes (int32 for
// float, int64 for double), so one comparison mask selects both.
template <typename T>
using index_t = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

// Both epilogues follow torch.min: a NaN wins (the first NaN), ties keep the first index.
enum class RowEpilogue {
  // Running min over rows (dim=2: over d, dim=3: over h), for all w < w_tiles * w_tile:
  // where conv[co][w] < out[co * out_stride + w] (or is the first NaN), out[...] = conv and
  // index[...] = at. Padded positions w >= W_out hold garbage that the caller never reads.
  // Starting from out = +inf, one fold yields the conv row itself (the tests use this).
  FoldMin,
  // Min along w (dim=4) of the first w_valid positions: out[co * out_stride] = the min,
  // index[co * out_stride] = its position.
  MinAlongW,
};

template <typename T>
struct ConvRowArgs {
  const T* input;               // packed slab at the output row's origin (see tiling.h)
  const int64_t* tap_offsets;   // per tap, offset of its input row from `input`
  int64_t taps;                 // C_in * kD * kH * kW
  const T* weight;              // packed by pack_weight() with this kernel's co_block
  const T* bias;                // [c_out] (zeros when the op has no bias)
  int64_t c_out;
  int64_t w_tiles;              // w_padded / w_tile

  RowEpilogue epilogue = RowEpilogue::FoldMin;
  T* out = nullptr;
  int64_t out_stride = 0;
  index_t<T>* index = nullptr;  // argmin, laid out like out (required)
  index_t<T> at = 0;            // FoldMin: this row's index along the reduced axis
  int64_t w_valid = 0;          // MinAlongW: W_out
};

// Channel blocking shared by pack_weight() and the row kernel: full blocks of co_block
// channels, then the remainder as power-of-two blocks (11 = 8 + 2 + 1), so no channel is
// computed twice or padded. Returns the size of the block starting at channel co0.
inline int64_t channel_block(int64_t c_out, int64_t co0, int64_t co_block) {
  const int64_t rem = c_out - co0;
  if (rem >= co_block) return co_block;
  int64_t cb = 1;
  while (cb * 2 <= rem) cb *= 2;
  return cb;
}

template <typename T>
struct RowKernel {
  const char* isa;   // "avx512", "avx2" or "generic"
  int64_t w_tile;    // output positions per register tile; rows are padded to a multiple
  int64_t co_block;  // output channels per register tile (the packed weight's block)
  void (*run)(const ConvRowArgs<T>&);
};

// The fastest variant this CPU can run (float and double are instantiated), unless the
// environment variable FUSEDCONV_CPU_ISA names another available one (read once).
template <typename T>
const RowKernel<T>& best_row_kernel();

// Every variant this CPU can run, fastest first (the tests compare them all).
template <typename T>
std::vector<RowKernel<T>> available_row_kernels();

}  // namespace fusedconv::cpu
