"""Fake (meta) kernels: shapes and dtypes only, with the same validation as the real kernels."""
from __future__ import annotations

import torch

from fusedconv._validation import check_inputs, output_shape


@torch.library.register_fake("fusedconv::forward")
def _forward_fake(x, weight, bias=None, dim=2):
    dim = check_inputs(x, weight, bias, dim)
    return x.new_empty(output_shape(x, weight, dim))


@torch.library.register_fake("fusedconv::backward")
def _backward_fake(grad_y, y, x, weight, bias, dim, output_mask):
    dim = check_inputs(x, weight, bias, dim)
    y_shape = list(output_shape(x, weight, dim))
    for name, t in (("grad_y", grad_y), ("y", y)):
        if list(t.shape) != y_shape:
            raise RuntimeError(
                f"fusedconv.backward: {name} must have the output's shape {y_shape}, "
                f"got {list(t.shape)}"
            )
    want_x, want_w, want_b = output_mask
    # Real kernels return empty_like(x/weight) (layout preserved) or a (0,)-shaped placeholder.
    grad_x = torch.empty_like(x) if want_x else x.new_empty((0,))
    grad_w = torch.empty_like(weight) if want_w else weight.new_empty((0,))
    grad_b = x.new_empty((weight.shape[0],)) if (want_b and bias is not None) else x.new_empty((0,))
    return grad_x, grad_w, grad_b
