"""Scoped float32 matmul precision (the knob that picks the op's float32 mode)."""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def float32_matmul_precision(mode: str):
    """Temporarily ``torch.set_float32_matmul_precision(mode)`` ("highest", "high", "medium")."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(mode)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(old)
