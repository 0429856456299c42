// fusedconv::forward on the CPU through the dispatcher vs a float64 ATen composite:
// odd shapes, all dims, all dtypes, layouts, NaN/Inf, torch.min's argmin, empty batch.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <sstream>
#include <tuple>
#include <vector>

#include "common/problem.h"
#include "cpu/forward_cpu.h"
#include "test_util.h"

namespace fusedconv::testing {
namespace {

double tolerance(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble: return 1e-12;
    case at::kFloat: return 1e-5;  // DESIGN.md: fp32-accurate
    case at::kHalf: return 5e-3;
    default: return 2e-2;          // bfloat16: 8 mantissa bits in the output
  }
}

// Odd sizes on purpose: W_out not a multiple of any vector width, C_out not a multiple of
// any channel block, kernels that are not cubic, outputs of extent 1.
const std::vector<Shape> kShapes = {
    {2, 3, 24, 24, 32, 32, 3, 3, 3},  // the reference workload's sizes, small batch
    {3, 2, 5, 7, 9, 11, 2, 3, 1},
    {1, 1, 1, 3, 3, 3, 3, 3, 3},       // a single output position
    {2, 4, 13, 6, 5, 37, 1, 2, 4},
    {1, 3, 31, 5, 17, 3, 2, 1, 3},
    {2, 5, 7, 4, 6, 50, 3, 2, 5},
};

using GridParam = std::tuple<int, int64_t, at::ScalarType>;  // shape index, dim, dtype

class ForwardGrid : public ::testing::TestWithParam<GridParam> {};

TEST_P(ForwardGrid, MatchesFloat64Composite) {
  const auto [shape_index, dim, dtype] = GetParam();
  const Shape& s = kShapes[shape_index];
  for (bool uniform : {false, true}) {
    SCOPED_TRACE(uniform ? "rand" : "randn");
    at::manual_seed(1000 * shape_index + 10 * dim + uniform);
    const Inputs in = random_inputs(s, uniform, dtype);
    const at::Tensor y = call_forward(in.x, in.weight, in.bias, dim);
    const at::Tensor ref = reference(in.x, in.weight, in.bias, dim);
    ASSERT_EQ(y.sizes(), ref.sizes());
    ASSERT_EQ(y.scalar_type(), dtype);
    EXPECT_LE(rel_err(y, ref), tolerance(dtype));
    // Without bias too.
    const at::Tensor y_nb = call_forward(in.x, in.weight, std::nullopt, dim);
    EXPECT_LE(rel_err(y_nb, reference(in.x, in.weight, std::nullopt, dim)), tolerance(dtype));
  }
}

std::string grid_name(const ::testing::TestParamInfo<GridParam>& info) {
  const auto [shape_index, dim, dtype] = info.param;
  std::ostringstream os;
  os << "shape" << shape_index << "_dim" << (dim < 0 ? "m" : "") << (dim < 0 ? -dim : dim) << "_"
     << c10::toString(dtype);
  return os.str();
}

INSTANTIATE_TEST_SUITE_P(
    AllDimsDtypes, ForwardGrid,
    ::testing::Combine(::testing::Range(0, static_cast<int>(kShapes.size())),
                       ::testing::Values<int64_t>(2, 3, 4, -1),
                       ::testing::Values(at::kFloat, at::kDouble, at::kBFloat16, at::kHalf)),
    grid_name);

// Non-contiguous, permuted, channels_last_3d, expanded and offset inputs read through strides.
TEST(ForwardLayouts, StridedInputsMatchContiguous) {
  at::manual_seed(7);
  const Shape s{3, 3, 10, 7, 8, 13, 3, 2, 3};
  const Inputs in = random_inputs(s, false, at::kFloat);
  std::vector<std::pair<std::string, at::Tensor>> xs = {
      {"every other w",
       at::randn({s.b, s.c_in, s.d, s.h, 2 * s.w}).slice(4, 0, 2 * s.w, 2)},
      {"permuted", at::randn({s.w, s.h, s.d, s.c_in, s.b}).permute({4, 3, 2, 1, 0})},
      {"channels_last_3d", in.x.contiguous(at::MemoryFormat::ChannelsLast3d)},
      {"expanded batch", at::randn({1, s.c_in, s.d, s.h, s.w}).expand({s.b, -1, -1, -1, -1})},
      {"storage offset", at::randn({s.b + 2, s.c_in, s.d, s.h, s.w}).slice(0, 2, s.b + 2)},
  };
  const at::Tensor w_cl = in.weight.contiguous(at::MemoryFormat::ChannelsLast3d);
  const at::Tensor w_t = in.weight.transpose(0, 1).contiguous().transpose(0, 1);
  const at::Tensor b_strided = at::randn({2 * s.c_out}).slice(0, 0, 2 * s.c_out, 2);
  for (const auto& [name, x] : xs) {
    SCOPED_TRACE(name);
    for (int64_t dim : {2, 3, 4}) {
      SCOPED_TRACE(dim);
      const at::Tensor ref = reference(x, in.weight, in.bias, dim);
      EXPECT_LE(rel_err(call_forward(x, in.weight, in.bias, dim), ref), 1e-5);
      EXPECT_LE(rel_err(call_forward(x, w_cl, in.bias, dim), ref), 1e-5);
      EXPECT_LE(rel_err(call_forward(x, w_t, b_strided, dim),
                        reference(x, w_t, b_strided, dim)),
                1e-5);
    }
  }
}

// NaN anywhere in a min column makes the min NaN and then its whole softmax NaN; Inf as eager.
TEST(ForwardSpecialValues, NanAndInfFollowEager) {
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
    for (int64_t dim : {2, 3, 4}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " dim " + std::to_string(dim));
      at::manual_seed(11 + dim);
      const Shape s{3, 2, 6, 7, 8, 9, 2, 3, 2};
      Inputs in = random_inputs(s, false, dtype);
      in.x[0][1][3][4][5] = std::numeric_limits<double>::quiet_NaN();
      in.x[1][0][0][0][0] = std::numeric_limits<double>::infinity();
      in.x[2][1][6][7][8] = -std::numeric_limits<double>::infinity();
      in.x[2][0][2][2][2] = std::numeric_limits<double>::infinity();
      const at::Tensor y = call_forward(in.x, in.weight, in.bias, dim);
      const at::Tensor ref = reference(in.x, in.weight, in.bias, dim);
      ASSERT_TRUE(ref.isnan().any().item<bool>());  // the test really exercises NaN
      EXPECT_TRUE(at::equal(y.isnan(), ref.isnan()));
      EXPECT_TRUE(at::allclose(y.to(at::kDouble), ref, /*rtol=*/0, /*atol=*/tolerance(dtype),
                               /*equal_nan=*/true));
    }
  }
}

// The argmin the backward pass uses: int32, shaped like y, torch.min's index (first minimum
// on ties, first NaN).
TEST(ForwardArgmin, MatchesTorchMinIncludingTiesAndNan) {
  for (int64_t dim : {2, 3, 4}) {
    for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16}) {
      for (int variant = 0; variant < 3; ++variant) {  // random, integer ties, with NaN
        SCOPED_TRACE("dim " + std::to_string(dim) + " " + c10::toString(dtype) + " variant " +
                     std::to_string(variant));
        at::manual_seed(100 + variant + 10 * dim);
        const Shape s{2, 3, 13, 9, 7, 21, 3, 2, 3};
        Inputs in;
        if (variant == 1) {  // small integers: exact conv values, many exact ties
          in.x = at::randint(-2, 3, {s.b, s.c_in, s.d, s.h, s.w}).to(dtype);
          in.weight = at::randint(-1, 2, {s.c_out, s.c_in, s.kd, s.kh, s.kw}).to(dtype);
          in.bias = at::randint(-1, 2, {s.c_out}).to(dtype);
        } else {
          in = random_inputs(s, false, dtype);
          // bf16 rounding of the conv output could reorder near-ties differently from a
          // float64 reference; random bf16 cases use float64 values in the check below.
        }
        if (variant == 2) {
          in.x[0][2][4][3][10] = std::numeric_limits<double>::quiet_NaN();
          in.x[1][0][0][5][2] = std::numeric_limits<double>::quiet_NaN();
        }
        const Problem p = check_inputs(in.x, in.weight, in.bias, dim);
        at::Tensor argmin;
        fused_forward_cpu(p, in.x, in.weight, in.bias, &argmin);
        at::Tensor expected;
        reference(in.x, in.weight, in.bias, dim, &expected);
        ASSERT_EQ(argmin.scalar_type(), at::kInt);
        ASSERT_EQ(argmin.sizes(), expected.sizes());
        if (dtype == at::kBFloat16 && variant != 1) {
          // Only check that each index points at a value within bf16 rounding of the min.
          const at::Tensor conv = at::conv3d(in.x.to(at::kDouble), in.weight.to(at::kDouble),
                                             in.bias.to(at::kDouble));
          const at::Tensor picked = conv.gather(dim, argmin.to(at::kLong).unsqueeze(dim));
          const at::Tensor best = std::get<0>(at::min(conv, dim, /*keepdim=*/true));
          EXPECT_TRUE(at::allclose(picked, best, 0, 3e-2, /*equal_nan=*/true));
          continue;
        }
        const int64_t mismatches = (argmin.to(at::kLong) != expected).sum().item<int64_t>();
        EXPECT_EQ(mismatches, 0);
      }
    }
  }
}

TEST(ForwardEdgeCases, EmptyBatchGivesEmptyResult) {
  const at::Tensor x = at::randn({0, 3, 5, 6, 7});
  const at::Tensor w = at::randn({4, 3, 2, 2, 2});
  for (int64_t dim : {2, 3, 4}) {
    const at::Tensor y = call_forward(x, w, std::nullopt, dim);
    EXPECT_EQ(y.numel(), 0);
    EXPECT_EQ(y.sizes(), reference(x, w, std::nullopt, dim).sizes());
    at::Tensor argmin;
    fused_forward_cpu(check_inputs(x, w, std::nullopt, dim), x, w, std::nullopt, &argmin);
    EXPECT_EQ(argmin.sizes(), y.sizes());
  }
}

// Results must not depend on how tasks were spread over threads.
TEST(ForwardEdgeCases, BitwiseIdenticalForAnyThreadCount) {
  at::manual_seed(5);
  const Inputs in = random_inputs({5, 3, 24, 12, 14, 30, 3, 3, 3}, false, at::kFloat);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor one = call_forward(in.x, in.weight, in.bias, 2);
  at::set_num_threads(std::max(2, threads));
  const at::Tensor many = call_forward(in.x, in.weight, in.bias, 2);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, many));
}

TEST(ForwardEdgeCases, KernelPathIsFusedForEveryDtypeAndLayout) {
  const at::Tensor x = at::randn({2, 3, 5, 6, 7});
  const at::Tensor w = at::randn({4, 3, 2, 2, 2});
  for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf}) {
    EXPECT_EQ(call_kernel_path(x.to(dtype), w.to(dtype), std::nullopt, 2), "cpu-fused");
  }
  EXPECT_EQ(call_kernel_path(x.contiguous(at::MemoryFormat::ChannelsLast3d), w, std::nullopt, -1),
            "cpu-fused");
}

}  // namespace
}  // namespace fusedconv::testing
