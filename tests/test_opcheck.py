"""torch.library.opcheck on the forward op: schema, fake kernel, dispatch, aot_dispatch.

Inputs here never require grad; the requires_grad variants belong to the autograd tests.
"""
from __future__ import annotations

import pytest
import torch

import fusedconv  # noqa: F401
from conftest import DEVICES, make_inputs


def _cases(device):
    x, w, b = make_inputs((2, 3, 5, 6, 7, 8, 3, 2, 3), device=device)
    x64, w64, b64 = make_inputs((1, 2, 3, 5, 5, 6, 2, 2, 2), dtype=torch.float64, device=device)
    xb, wb, bb = make_inputs((2, 3, 4, 5, 6, 5, 3, 3, 3), dtype=torch.bfloat16, device=device)
    return {
        "dim2": ((x, w, b, 2), {}),
        "dim3_no_bias": ((x, w, None, 3), {}),
        "dim-1_kwargs": ((x, w), {"bias": b, "dim": -1}),
        "default_dim": ((x, w, b), {}),
        "channels_last": ((x.to(memory_format=torch.channels_last_3d), w, b, 2), {}),
        "sliced": ((x[:, :, 1:, :, ::2], w, b, 4), {}),
        "float64": ((x64, w64, b64, 3), {}),
        "bfloat16": ((xb, wb, bb, 2), {}),
        "empty_batch": ((x[:0], w, b, 2), {}),
    }


CASE_NAMES = list(_cases("cpu"))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASE_NAMES)
def test_opcheck_forward(case, device):
    args, kwargs = _cases(device)[case]
    assert not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
    torch.library.opcheck(torch.ops.fusedconv.forward.default, args, kwargs)
