"""The unfused composite and the float64 yardstick, shared by the CLI and the benchmarks."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def eager_forward(x, weight, bias=None, dim=2):
    """The unfused PyTorch composite: conv3d -> min over ``dim`` -> softmax over channels."""
    return torch.softmax(torch.min(F.conv3d(x, weight, bias), dim=dim)[0], dim=1)


def float64_reference(x, weight, bias=None, dim=2):
    """``eager_forward`` computed in float64 from the same inputs."""
    return eager_forward(x.double(), weight.double(), None if bias is None else bias.double(), dim)


def rel_err(actual, expected) -> float:
    """max|actual - expected| / max|expected| (0 for empty or all-zero ``expected``)."""
    scale = expected.abs().max().item() if expected.numel() else 0.0
    if not scale:
        return 0.0
    return (actual.double() - expected.double()).abs().max().item() / scale
