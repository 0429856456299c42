#include "common/backward_plan.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace fusedconv {

BackwardPlan make_backward_plan(const Problem& p) {
  BackwardPlan plan;
  const int64_t in[5] = {p.batch, p.c_in, p.depth, p.height, p.width};
  const int64_t k[5] = {p.c_out, p.c_in, p.k_d, p.k_h, p.k_w};
  plan.perm = {0, 1, p.dim, 0, 0};
  int next = 3;
  for (int64_t axis = 2; axis < 5; ++axis) {
    if (axis != p.dim) plan.perm[next++] = axis;
  }
  plan.batch = p.batch;
  plan.c_in = p.c_in;
  plan.c_out = p.c_out;
  plan.r_in = in[plan.perm[2]];
  plan.p_in = in[plan.perm[3]];
  plan.q_in = in[plan.perm[4]];
  plan.k_r = k[plan.perm[2]];
  plan.k_p = k[plan.perm[3]];
  plan.k_q = k[plan.perm[4]];
  plan.r_out = plan.r_in - plan.k_r + 1;
  plan.p_out = plan.p_in - plan.k_p + 1;
  plan.q_out = plan.q_in - plan.k_q + 1;
  return plan;
}

at::ScalarType accumulate_type(at::ScalarType t) {
  return t == at::kDouble ? at::kDouble : at::kFloat;
}

namespace {

at::Tensor no_grad(const at::Tensor& like) { return at::empty({0}, like.options()); }

}  // namespace

Problem check_backward_inputs(const at::Tensor& grad_y, const at::Tensor& y, const at::Tensor& x,
                              const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              int64_t dim) {
  const Problem p = check_inputs(x, weight, bias, dim);
  const std::vector<int64_t> y_shape = p.output_sizes();
  const at::IntArrayRef y_sizes(y_shape);
  TORCH_CHECK(grad_y.sizes() == y_sizes, "fusedconv.backward: grad_y must have the output's shape ",
              y_sizes, ", got ", grad_y.sizes());
  TORCH_CHECK(y.sizes() == y_sizes, "fusedconv.backward: y must have the output's shape ", y_sizes,
              ", got ", y.sizes());
  for (const at::Tensor* t : {&grad_y, &y}) {
    TORCH_CHECK(t->device() == x.device(), "fusedconv.backward: grad_y and y must be on x's device ",
                x.device(), ", got ", t->device());
    TORCH_CHECK(at::isFloatingType(t->scalar_type()),
                "fusedconv.backward: grad_y and y must be floating point, got ", t->scalar_type());
  }
  return p;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> run_backward(
    const BackwardBackend& backend, const at::Tensor& grad_y, const at::Tensor& y,
    const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
    int64_t dim, std::array<bool, 3> output_mask) {
  const Problem p = check_backward_inputs(grad_y, y, x, weight, bias, dim);

  const bool want_x = output_mask[0], want_w = output_mask[1];
  const bool want_b = output_mask[2] && p.has_bias;
  at::Tensor dx = no_grad(x), dw = no_grad(weight), db = no_grad(x);
  if (!want_x && !want_w && !want_b) return {dx, dw, db};
  if (grad_y.numel() == 0) {  // empty batch: nothing reaches x, weight or bias
    if (want_x) dx = at::zeros_like(x);
    if (want_w) dw = at::zeros_like(weight);
    if (want_b) db = at::zeros({p.c_out}, x.options());
    return {dx, dw, db};
  }

  MinGrad m;
  m.y = y.to(x.scalar_type()).contiguous();
  m.grad_y = grad_y.to(x.scalar_type()).contiguous();
  m.dot = backend.softmax_dot(m.y, m.grad_y);
  if (want_b) db = backend.bias_grad(m);
  if (!want_x && !want_w) return {dx, dw, db};

  // Recompute the argmin (the recomputed y is dropped at once) and shrink it to one byte per
  // column where the reduced extent allows, before the large dx buffer is allocated.
  const BackwardPlan plan = make_backward_plan(p);
  at::Tensor argmin;
  backend.forward_with_argmin(p, x, weight, bias, &argmin);
  argmin = argmin.to(plan.r_out <= 256 ? at::kByte : at::kInt).contiguous();

  const at::IntArrayRef perm(plan.perm.data(), 5);
  if (want_w) {
    dw = at::empty_like(weight);
    backend.weight_grad(plan, m, argmin, x.permute(perm), dw.permute(perm));
  }
  if (want_x) {
    dx = at::empty_like(x);
    backend.input_grad(plan, m, argmin, weight.permute(perm), dx.permute(perm));
  }
  return {dx, dw, db};
}

}  // namespace fusedconv
