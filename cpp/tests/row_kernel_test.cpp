// The SIMD row kernel, every instruction-set variant this CPU can run, against scalar loops:
// the conv row itself, the running min over rows and the min along w, with torch.min's
// tie and NaN rules. Padding columns of the slab hold NaN to prove they never leak.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/conv_row_kernel.h"
#include "cpu/pack.h"
#include "cpu/tiling.h"
#include "test_util.h"

namespace fusedconv::cpu {
namespace {

using testing::make_problem;

template <typename T>
at::ScalarType dtype_of() {
  return sizeof(T) == 4 ? at::kFloat : at::kDouble;
}

// One kernel variant, a small problem (W_out = 21: ragged for every vector width), a packed
// slab and packed weights.
template <typename T>
struct RowSetup {
  Problem p;
  TilePlan plan;
  std::vector<int64_t> offsets;
  std::vector<T> slab, weight, bias;
  at::Tensor weight_tensor;

  RowSetup(const RowKernel<T>& kernel, int64_t c_out, bool integers) {
    p = make_problem(1, 2, c_out, 3, 4, 23, 2, 2, 3, /*dim=*/3);
    plan = plan_tiles(p, kernel.w_tile, 1);
    offsets.resize(p.c_in * p.k_d * p.k_h * p.k_w);
    tap_offsets(p, plan, offsets.data());
    const auto random = [&](at::IntArrayRef sizes) {
      return (integers ? at::randint(-3, 4, sizes) : at::randn(sizes)).to(dtype_of<T>());
    };
    const at::Tensor values = random({plan.slab_elements(p.c_in)}).contiguous();
    slab.assign(values.data_ptr<T>(), values.data_ptr<T>() + values.numel());
    for (int64_t i = 0; i < static_cast<int64_t>(slab.size()); ++i) {
      if (i % plan.slab_w >= p.width) slab[i] = std::numeric_limits<T>::quiet_NaN();
    }
    weight_tensor = random({p.c_out, p.c_in, p.k_d, p.k_h, p.k_w});
    weight.resize(p.c_out * offsets.size());
    pack_weight<T, T>(p, weight_tensor, kernel.co_block, weight.data());
    const at::Tensor b = random({p.c_out}).contiguous();
    bias.assign(b.data_ptr<T>(), b.data_ptr<T>() + p.c_out);
  }

  int64_t row_origin(int64_t hl) const { return hl * plan.slab_w; }  // d-local row 0

  // conv[co][w] for w < W_out, in double, by plain loops over (ci, kd, kh, kw).
  std::vector<double> naive_row(int64_t hl) const {
    std::vector<double> out(p.c_out * p.w_out);
    const at::Tensor w64 = weight_tensor.to(at::kDouble).contiguous();
    const double* w = w64.data_ptr<double>();
    const int64_t taps = static_cast<int64_t>(offsets.size());
    for (int64_t co = 0; co < p.c_out; ++co)
      for (int64_t x = 0; x < p.w_out; ++x) {
        double acc = bias[co];
        for (int64_t t = 0; t < taps; ++t)
          acc += w[co * taps + t] * static_cast<double>(slab[row_origin(hl) + offsets[t] + x]);
        out[co * p.w_out + x] = acc;
      }
    return out;
  }

  ConvRowArgs<T> args(int64_t hl, RowEpilogue epilogue, T* out, index_t<T>* index,
                      int64_t out_stride) const {
    ConvRowArgs<T> a;
    a.input = slab.data() + row_origin(hl);
    a.tap_offsets = offsets.data();
    a.taps = static_cast<int64_t>(offsets.size());
    a.weight = weight.data();
    a.bias = bias.data();
    a.c_out = p.c_out;
    a.w_tiles = 0;  // set by the caller from the kernel's w_tile
    a.epilogue = epilogue;
    a.out = out;
    a.out_stride = out_stride;
    a.index = index;
    a.w_valid = p.w_out;
    return a;
  }
};

// torch.min's rule for replacing a running min m by v.
bool takes(double v, double m) { return v < m || (std::isnan(v) && !std::isnan(m)); }

template <typename T>
class RowKernelTest : public ::testing::Test {};
using ComputeTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(RowKernelTest, ComputeTypes);

const int64_t kChannelCounts[] = {1, 5, 7, 13, 24, 29};

TYPED_TEST(RowKernelTest, FoldFromInfinityIsTheConvRow) {
  using T = TypeParam;
  for (const RowKernel<T>& kernel : available_row_kernels<T>()) {
    for (int64_t c_out : kChannelCounts) {
      SCOPED_TRACE(std::string(kernel.isa) + " c_out " + std::to_string(c_out));
      at::manual_seed(c_out);
      RowSetup<T> s(kernel, c_out, /*integers=*/false);
      const int64_t stride = s.plan.w_padded;
      std::vector<T> out(c_out * stride, std::numeric_limits<T>::infinity());
      std::vector<index_t<T>> index(c_out * stride, -1);
      ConvRowArgs<T> a = s.args(1, RowEpilogue::FoldMin, out.data(), index.data(), stride);
      a.w_tiles = s.plan.w_padded / kernel.w_tile;
      a.at = 7;
      kernel.run(a);
      const std::vector<double> ref = s.naive_row(1);
      const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
      for (int64_t co = 0; co < c_out; ++co)
        for (int64_t w = 0; w < s.p.w_out; ++w) {
          const double r = ref[co * s.p.w_out + w];
          ASSERT_NEAR(out[co * stride + w], r, tol * (1 + std::abs(r))) << co << "," << w;
          ASSERT_EQ(index[co * stride + w], 7);
        }
    }
  }
}

TYPED_TEST(RowKernelTest, FoldKeepsFirstMinimumAndFirstNan) {
  using T = TypeParam;
  for (const RowKernel<T>& kernel : available_row_kernels<T>()) {
    for (int64_t c_out : kChannelCounts) {
      SCOPED_TRACE(std::string(kernel.isa) + " c_out " + std::to_string(c_out));
      at::manual_seed(100 + c_out);
      RowSetup<T> s(kernel, c_out, /*integers=*/true);  // exact sums: many exact ties
      // A NaN read only by row 1 (input row 2 lies outside row 0's 2-row window).
      s.slab[2 * s.plan.slab_w + 5] = std::numeric_limits<T>::quiet_NaN();
      const int64_t stride = s.plan.w_padded;
      std::vector<T> out(c_out * stride, std::numeric_limits<T>::infinity());
      std::vector<index_t<T>> index(c_out * stride, 0);
      std::vector<double> expect(c_out * s.p.w_out, INFINITY);
      std::vector<int64_t> expect_index(c_out * s.p.w_out, 0);
      const int64_t rows[] = {0, 1, 0, 1};  // rows repeat: ties must keep the first
      for (int64_t step = 0; step < 4; ++step) {
        ConvRowArgs<T> a = s.args(rows[step], RowEpilogue::FoldMin, out.data(), index.data(),
                                  stride);
        a.w_tiles = s.plan.w_padded / kernel.w_tile;
        a.at = static_cast<index_t<T>>(step);
        kernel.run(a);
        const std::vector<double> row = s.naive_row(rows[step]);
        for (int64_t i = 0; i < c_out * s.p.w_out; ++i)
          if (takes(row[i], expect[i])) {
            expect[i] = row[i];
            expect_index[i] = step;
          }
      }
      int64_t nans = 0;
      for (int64_t co = 0; co < c_out; ++co)
        for (int64_t w = 0; w < s.p.w_out; ++w) {
          const double e = expect[co * s.p.w_out + w];
          const double got = out[co * stride + w];
          nans += std::isnan(e);
          if (std::isnan(e)) {
            ASSERT_TRUE(std::isnan(got)) << co << "," << w;
          } else {
            ASSERT_EQ(got, e) << co << "," << w;
          }
          ASSERT_EQ(index[co * stride + w], expect_index[co * s.p.w_out + w]) << co << "," << w;
        }
      EXPECT_GT(nans, 0);
    }
  }
}

TYPED_TEST(RowKernelTest, MinAlongWIsTorchMinOfTheRow) {
  using T = TypeParam;
  for (const RowKernel<T>& kernel : available_row_kernels<T>()) {
    for (int64_t c_out : kChannelCounts) {
      for (int variant = 0; variant < 3; ++variant) {  // random, integer ties, NaN
        SCOPED_TRACE(std::string(kernel.isa) + " c_out " + std::to_string(c_out) +
                     " variant " + std::to_string(variant));
        at::manual_seed(200 + 3 * c_out + variant);
        RowSetup<T> s(kernel, c_out, /*integers=*/variant != 0);
        if (variant == 2) s.slab[1 * s.plan.slab_w + 17] = std::numeric_limits<T>::quiet_NaN();
        const int64_t stride = 3;  // out[co * stride]: scattered like the forward's groups
        std::vector<T> out(c_out * stride, 0);
        std::vector<index_t<T>> index(c_out * stride, -1);
        ConvRowArgs<T> a = s.args(1, RowEpilogue::MinAlongW, out.data(), index.data(), stride);
        a.w_tiles = s.plan.w_padded / kernel.w_tile;
        kernel.run(a);
        const std::vector<double> row = s.naive_row(1);
        for (int64_t co = 0; co < c_out; ++co) {
          double m = INFINITY;
          int64_t at = 0;
          for (int64_t w = 0; w < s.p.w_out; ++w)
            if (takes(row[co * s.p.w_out + w], m)) {
              m = row[co * s.p.w_out + w];
              at = w;
            }
          if (std::isnan(m)) {
            ASSERT_TRUE(std::isnan(out[co * stride])) << co;
          } else {
            const double tol = variant == 0 ? (sizeof(T) == 4 ? 1e-5 : 1e-12) : 0;
            ASSERT_NEAR(out[co * stride], m, tol * (1 + std::abs(m))) << co;
          }
          ASSERT_EQ(index[co * stride], at) << co;
        }
      }
    }
  }
}

}  // namespace
}  // namespace fusedconv::cpu
