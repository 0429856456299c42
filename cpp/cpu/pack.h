#pragma once
// Packing of x slabs and of the weight into the layouts the row kernel reads. Packing reads
// through arbitrary strides (non-contiguous, channels_last_3d) and converts the storage
// dtype to the compute dtype (bf16/fp16 -> float), so the hot loop sees one clean layout.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/problem.h"
#include "cpu/conv_row_kernel.h"
#include "cpu/tiling.h"

namespace fusedconv::cpu {

// Copies x[b, :, d0 : d0+nd+kD-1, h0 : h0+nh+kH-1, :] into slab [C_in][slab_d][slab_h][slab_w]
// (columns W..slab_w are left untouched: the caller zeroes them once).
template <typename scalar_t, typename T>
void pack_slab(const Problem& p, const TilePlan& plan, const TaskRange& r, const scalar_t* x,
               const int64_t* x_strides, T* slab) {
  const int64_t planes = r.nd + p.k_d - 1;
  const int64_t rows = r.nh + p.k_h - 1;
  const int64_t sw = x_strides[4];
  for (int64_t ci = 0; ci < p.c_in; ++ci) {
    for (int64_t dd = 0; dd < planes; ++dd) {
      for (int64_t hh = 0; hh < rows; ++hh) {
        const scalar_t* src = x + r.b * x_strides[0] + ci * x_strides[1] +
                              (r.d0 + dd) * x_strides[2] + (r.h0 + hh) * x_strides[3];
        T* dst = slab + ((ci * plan.slab_d + dd) * plan.slab_h + hh) * plan.slab_w;
        if (sw == 1) {
          for (int64_t w = 0; w < p.width; ++w) dst[w] = static_cast<T>(src[w]);
        } else {
          for (int64_t w = 0; w < p.width; ++w) dst[w] = static_cast<T>(src[w * sw]);
        }
      }
    }
  }
}

// Packs weight (C_out, C_in, kD, kH, kW), any strides, as the row kernel's channel blocks
// (channel_block()): out[co0 * taps + tap * cb + j] = weight[co0 + j][tap] for the block
// of cb channels starting at co0, taps in (ci, kd, kh, kw) order.
template <typename scalar_t, typename T>
void pack_weight(const Problem& p, const at::Tensor& weight, int64_t co_block, T* out) {
  const scalar_t* w = weight.const_data_ptr<scalar_t>();
  const auto s = weight.strides();
  const int64_t taps = p.c_in * p.k_d * p.k_h * p.k_w;
  for (int64_t co0 = 0, cb = 0; co0 < p.c_out; co0 += cb) {
    cb = channel_block(p.c_out, co0, co_block);
    int64_t tap = 0;
    for (int64_t ci = 0; ci < p.c_in; ++ci)
      for (int64_t kd = 0; kd < p.k_d; ++kd)
        for (int64_t kh = 0; kh < p.k_h; ++kh)
          for (int64_t kw = 0; kw < p.k_w; ++kw, ++tap)
            for (int64_t j = 0; j < cb; ++j)
              out[co0 * taps + tap * cb + j] = static_cast<T>(
                  w[(co0 + j) * s[0] + ci * s[1] + kd * s[2] + kh * s[3] + kw * s[4]]);
  }
}

// bias (C_out,), any stride, in the compute dtype; zeros when there is none.
template <typename scalar_t, typename T>
void pack_bias(const Problem& p, const std::optional<at::Tensor>& bias, T* out) {
  if (!bias.has_value()) {
    std::fill(out, out + p.c_out, T(0));
    return;
  }
  const scalar_t* b = bias->const_data_ptr<scalar_t>();
  const int64_t s = bias->stride(0);
  for (int64_t co = 0; co < p.c_out; ++co) out[co] = static_cast<T>(b[co * s]);
}

}  // namespace fusedconv::cpu
