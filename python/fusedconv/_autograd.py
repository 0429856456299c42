"""Autograd for torch.ops.fusedconv.forward, registered with torch.library.register_autograd.

The forward saves x, weight, bias and its output y (never the conv output). The backward op (torch.ops.fusedconv.backward,
CPU and CUDA kernels in cpp/*/backward_*) recomputes y and the argmin of every min column with
the fused forward, then gathers the gradient through those positions only: no conv-output
sized tensor exists in either pass. Ties in the min follow torch.min's index, as in eager.
"""
from __future__ import annotations

import torch


def _setup_context(ctx, inputs, output):
    x, weight, bias, dim = inputs
    ctx.dim = dim
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias, output)


def _backward(ctx, grad_y):
    x, weight, bias, y = ctx.saved_tensors
    # needs_input_grad can be shorter than the argument list when bias is None.
    needs = tuple(ctx.needs_input_grad) + (False, False, False)
    mask = [bool(needs[0]), bool(needs[1]), bool(needs[2] and ctx.has_bias)]
    if not any(mask):
        return None, None, None, None
    grad_x, grad_w, grad_b = torch.ops.fusedconv.backward(
        grad_y, y, x, weight, bias, ctx.dim, mask
    )
    return (
        grad_x if mask[0] else None,
        grad_w if mask[1] else None,
        grad_b if mask[2] else None,
        None,
    )


torch.library.register_autograd("fusedconv::forward", _backward, setup_context=_setup_context)
