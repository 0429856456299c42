"""Fake (meta) kernel: shapes and dtypes only, with the same validation as the real kernels."""
from __future__ import annotations

import torch

from fusedconv._validation import check_inputs, output_shape


@torch.library.register_fake("fusedconv::forward")
def _forward_fake(x, weight, bias=None, dim=2):
    dim = check_inputs(x, weight, bias, dim)
    return x.new_empty(output_shape(x, weight, dim))
