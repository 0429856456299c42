// CPU implementation of fusedconv::backward: the gather kernels for dx and dW (see
// cpp/common/backward_plan.h for the math). Only the argmin position of each min column carries a
// gradient, so both kernels loop over (b, c, p, q) columns, never over a dense conv output.
// Every output element is summed by one task in a fixed order: results are deterministic.
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "common/backward_plan.h"
#include "cpu/forward_cpu.h"

namespace fusedconv {
namespace {

// g = y * (grad_y - dot) for column `col` = (b * C_out + c) * plane + pq of batch item b.
template <typename scalar_t, typename acc_t>
struct MinGradCpu {
  const scalar_t* y;
  const scalar_t* gy;
  const acc_t* dot;
  int64_t c_out, plane;
  explicit MinGradCpu(const MinGrad& m)
      : y(m.y.data_ptr<scalar_t>()),
        gy(m.grad_y.data_ptr<scalar_t>()),
        dot(m.dot.data_ptr<acc_t>()),
        c_out(m.y.size(1)),
        plane(m.y.size(2) * m.y.size(3)) {}
  acc_t operator()(int64_t b, int64_t col, int64_t pq) const {
    return static_cast<acc_t>(y[col]) * (static_cast<acc_t>(gy[col]) - dot[b * plane + pq]);
  }
};

// An argmin is an index into the reduced axis; clamping keeps a bad one (from a forward
// kernel bug) from turning into an out-of-bounds access.
template <typename index_t>
int64_t argmin_at(const index_t* amin, int64_t col, int64_t r_out) {
  return std::clamp<int64_t>(amin[col], 0, r_out - 1);
}

template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;

// dx[b, ci, i, j, k] = sum over (c, kp, kq) with column (p, q) = (j - kp, k - kq) whose argmin a
// satisfies 0 <= i - a < k_r of g[b, c, p, q] * W[c, ci, i - a, kp, kq].
// One task per (b, j): it scatters into a private (C_in, r_in, q_in) buffer, then writes it out.
template <typename scalar_t, typename index_t>
void input_grad_cpu(const BackwardPlan& s, const MinGrad& m, const at::Tensor& amin_t,
                    const at::Tensor& w_p, const at::Tensor& dx_p) {
  using acc_t = at::acc_type<scalar_t, /*is_cuda=*/false>;
  const MinGradCpu<scalar_t, opmath_t<scalar_t>> g(m);
  const index_t* amin = amin_t.data_ptr<index_t>();
  const scalar_t* w = w_p.data_ptr<scalar_t>();
  scalar_t* dx = dx_p.data_ptr<scalar_t>();
  const auto ws = w_p.strides();
  const auto xs = dx_p.strides();
  const int64_t plane = s.p_out * s.q_out;

  at::parallel_for(0, s.batch * s.p_in, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(s.c_in * s.r_in * s.q_in);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / s.p_in, j = task % s.p_in;
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t c = 0; c < s.c_out; ++c) {
        for (int64_t kp = 0; kp < s.k_p; ++kp) {
          const int64_t p = j - kp;
          if (p < 0 || p >= s.p_out) continue;
          const int64_t col = (b * s.c_out + c) * plane + p * s.q_out;
          for (int64_t q = 0; q < s.q_out; ++q) {
            const acc_t gv = g(b, col + q, p * s.q_out + q);
            const int64_t a = argmin_at(amin, col + q, s.r_out);
            for (int64_t kr = 0; kr < s.k_r; ++kr) {
              for (int64_t ci = 0; ci < s.c_in; ++ci) {
                acc_t* row = &acc[(ci * s.r_in + a + kr) * s.q_in + q];
                const scalar_t* wrow = w + c * ws[0] + ci * ws[1] + kr * ws[2] + kp * ws[3];
                for (int64_t kq = 0; kq < s.k_q; ++kq) {
                  row[kq] += gv * static_cast<acc_t>(wrow[kq * ws[4]]);
                }
              }
            }
          }
        }
      }
      for (int64_t ci = 0; ci < s.c_in; ++ci) {
        for (int64_t i = 0; i < s.r_in; ++i) {
          scalar_t* out = dx + b * xs[0] + ci * xs[1] + i * xs[2] + j * xs[3];
          const acc_t* row = &acc[(ci * s.r_in + i) * s.q_in];
          for (int64_t k = 0; k < s.q_in; ++k) out[k * xs[4]] = static_cast<scalar_t>(row[k]);
        }
      }
    }
  });
}

// dW[c, ci, kr, kp, kq] = sum over (b, p, q) of g[b, c, p, q] * x[b, ci, a + kr, p + kp, q + kq]
// with a the column's argmin. One task per (c, ci).
template <typename scalar_t, typename index_t>
void weight_grad_cpu(const BackwardPlan& s, const MinGrad& m, const at::Tensor& amin_t,
                     const at::Tensor& x_p, const at::Tensor& dw_p) {
  using acc_t = at::acc_type<scalar_t, /*is_cuda=*/false>;
  const MinGradCpu<scalar_t, opmath_t<scalar_t>> g(m);
  const index_t* amin = amin_t.data_ptr<index_t>();
  const scalar_t* x = x_p.data_ptr<scalar_t>();
  scalar_t* dw = dw_p.data_ptr<scalar_t>();
  const auto xs = x_p.strides();
  const auto ws = dw_p.strides();
  const int64_t plane = s.p_out * s.q_out;
  const int64_t k_taps = s.k_r * s.k_p * s.k_q;

  at::parallel_for(0, s.c_out * s.c_in, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(k_taps);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t c = task / s.c_in, ci = task % s.c_in;
      std::fill(acc.begin(), acc.end(), acc_t(0));
      for (int64_t b = 0; b < s.batch; ++b) {
        const scalar_t* xb = x + b * xs[0] + ci * xs[1];
        for (int64_t p = 0; p < s.p_out; ++p) {
          const int64_t col = (b * s.c_out + c) * plane + p * s.q_out;
          for (int64_t q = 0; q < s.q_out; ++q) {
            const acc_t gv = g(b, col + q, p * s.q_out + q);
            const scalar_t* patch =
                xb + argmin_at(amin, col + q, s.r_out) * xs[2] + p * xs[3] + q * xs[4];
            acc_t* a = acc.data();
            for (int64_t kr = 0; kr < s.k_r; ++kr) {
              for (int64_t kp = 0; kp < s.k_p; ++kp) {
                const scalar_t* row = patch + kr * xs[2] + kp * xs[3];
                for (int64_t kq = 0; kq < s.k_q; ++kq) {
                  *a++ += gv * static_cast<acc_t>(row[kq * xs[4]]);
                }
              }
            }
          }
        }
      }
      const acc_t* a = acc.data();
      for (int64_t kr = 0; kr < s.k_r; ++kr) {
        for (int64_t kp = 0; kp < s.k_p; ++kp) {
          for (int64_t kq = 0; kq < s.k_q; ++kq) {
            dw[c * ws[0] + ci * ws[1] + kr * ws[2] + kp * ws[3] + kq * ws[4]] =
                static_cast<scalar_t>(*a++);
          }
        }
      }
    }
  });
}

at::Tensor softmax_dot(const at::Tensor& y, const at::Tensor& grad_y) {
  const at::ScalarType acc = accumulate_type(y.scalar_type());
  return (grad_y.to(acc) * y.to(acc)).sum(1).contiguous();
}

at::Tensor bias_grad(const MinGrad& m) {
  const at::Tensor ya = m.y.to(m.dot.scalar_type());
  const at::Tensor g = ya * (m.grad_y.to(m.dot.scalar_type()) - m.dot.unsqueeze(1));
  return g.sum({0, 2, 3}).to(m.y.scalar_type());
}

#define FUSEDCONV_DISPATCH_INDEX(amin, ...)                 \
  if ((amin).scalar_type() == at::kByte) {                  \
    using index_t = uint8_t;                                \
    __VA_ARGS__();                                          \
  } else {                                                  \
    using index_t = int32_t;                                \
    __VA_ARGS__();                                          \
  }

void input_grad(const BackwardPlan& s, const MinGrad& m, const at::Tensor& amin,
                const at::Tensor& w_p, const at::Tensor& dx_p) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, w_p.scalar_type(), "input_grad_cpu", [&] {
    FUSEDCONV_DISPATCH_INDEX(amin, [&] { input_grad_cpu<scalar_t, index_t>(s, m, amin, w_p, dx_p); });
  });
}

void weight_grad(const BackwardPlan& s, const MinGrad& m, const at::Tensor& amin,
                 const at::Tensor& x_p, const at::Tensor& dw_p) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x_p.scalar_type(), "weight_grad_cpu", [&] {
    FUSEDCONV_DISPATCH_INDEX(amin, [&] { weight_grad_cpu<scalar_t, index_t>(s, m, amin, x_p, dw_p); });
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cpu(
    const at::Tensor& grad_y, const at::Tensor& y, const at::Tensor& x, const at::Tensor& weight,
    const std::optional<at::Tensor>& bias, int64_t dim, std::array<bool, 3> output_mask) {
  static const BackwardBackend backend{&fused_forward_cpu, &softmax_dot, &bias_grad, &input_grad,
                                       &weight_grad};
  return run_backward(backend, grad_y, y, x, weight, bias, dim, output_mask);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusedconv, CPU, m) { m.impl("backward", &backward_cpu); }

}  // namespace fusedconv
