"""Functional API."""
from __future__ import annotations

import torch


def conv3d_min_softmax(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, dim: int = 2
) -> torch.Tensor:
    """``softmax(min(conv3d(x, weight, bias), dim).values, dim=1)`` in one fused op.

    Args:
        x: input of shape (B, C_in, D, H, W); float32, float64, bfloat16 or float16.
        weight: conv weight of shape (C_out, C_in, kD, kH, kW), same dtype and device as x.
        bias: optional conv bias of shape (C_out,).
        dim: axis of the conv output to take the min over: 2 (depth, default), 3 or 4
            (negative values count from the end, as in PyTorch).

    Returns:
        (B, C_out, ...) with the ``dim`` axis of the conv output removed, in x's dtype.
        The conv is stride 1, no padding. float32 precision follows
        ``torch.get_float32_matmul_precision()`` (see README). Under ``torch.autocast``
        the inputs are cast as for ``conv3d`` and the output takes ``softmax``'s autocast
        dtype (float32 on CUDA), as in the unfused pattern.
    """
    return torch.ops.fusedconv.forward(x, weight, bias, dim)


def kernel_path(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, dim: int = 2
) -> str:
    """Names the implementation :func:`conv3d_min_softmax` would run for these inputs.

    For diagnostics and tests, e.g. ``"cpu-fused"``, ``"cuda-wgmma-tf32"`` (the sm_90a
    kernel), ``"cuda-fused-3xtf32"`` (the sm_80+ kernel) or ``"cuda-composite"`` (the correct,
    unfused fallback for configurations the fused CUDA kernels do not cover; README.md,
    "Which CUDA kernel runs"). Validates the inputs exactly like the op.
    """
    return torch.ops.fusedconv.kernel_path(x, weight, bias, dim)
