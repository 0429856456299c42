"""Input checks for the fake kernel; they mirror cpp/common/problem.cpp message for message."""
from __future__ import annotations

import torch

_OP = "fusedconv.forward"
_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


# c10's names for dtypes, so that messages read exactly as the C++ checks print them.
_C10_NAMES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half",
    torch.bfloat16: "BFloat16", torch.uint8: "Byte", torch.int8: "Char", torch.int16: "Short",
    torch.int32: "Int", torch.int64: "Long", torch.bool: "Bool",
    torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble",
}


def _shape(t: torch.Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _dtype(t: torch.Tensor) -> str:
    return _C10_NAMES.get(t.dtype, str(t.dtype))


def check_inputs(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, dim: int) -> int:
    """Raises RuntimeError for bad inputs; returns ``dim`` normalised to 2, 3 or 4."""
    if x.dim() != 5:
        raise RuntimeError(f"{_OP}: x must be 5-D (B, C_in, D, H, W), got shape {_shape(x)}")
    if weight.dim() != 5:
        raise RuntimeError(
            f"{_OP}: weight must be 5-D (C_out, C_in, kD, kH, kW), got shape {_shape(weight)}"
        )
    if x.dtype not in _DTYPES:
        raise RuntimeError(f"{_OP}: x must be float32, float64, bfloat16 or float16, got {_dtype(x)}")
    if weight.dtype != x.dtype:
        raise RuntimeError(f"{_OP}: weight dtype {_dtype(weight)} does not match x dtype {_dtype(x)}")
    if weight.device != x.device:
        raise RuntimeError(f"{_OP}: weight is on {weight.device} but x is on {x.device}")
    if x.shape[1] != weight.shape[1]:
        raise RuntimeError(
            f"{_OP}: channel mismatch: x has C_in={x.shape[1]} (shape {_shape(x)}) but weight "
            f"expects C_in={weight.shape[1]} (shape {_shape(weight)})"
        )
    if weight.shape[0] < 1 or weight.shape[1] < 1:
        raise RuntimeError(
            f"{_OP}: weight must have C_out >= 1 and C_in >= 1, got shape {_shape(weight)}"
        )
    for axis in range(2, 5):
        if not 1 <= weight.shape[axis] <= x.shape[axis]:
            raise RuntimeError(
                f"{_OP}: kernel larger than input: weight shape {_shape(weight)} does not fit "
                f"x shape {_shape(x)} along axis {axis}"
            )
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != weight.shape[0]:
            raise RuntimeError(
                f"{_OP}: bias must have shape (C_out,) = ({weight.shape[0]},), got shape {_shape(bias)}"
            )
        if bias.dtype != x.dtype:
            raise RuntimeError(f"{_OP}: bias dtype {_dtype(bias)} does not match x dtype {_dtype(x)}")
        if bias.device != x.device:
            raise RuntimeError(f"{_OP}: bias is on {bias.device} but x is on {x.device}")
    if not (2 <= dim <= 4 or -3 <= dim <= -1):
        raise RuntimeError(
            f"{_OP}: dim must be one of 2, 3, 4 (or -3, -2, -1): the depth, height or width axis "
            f"of the 5-D conv output, got dim={dim}"
        )
    return dim + 5 if dim < 0 else dim


def output_shape(x: torch.Tensor, weight: torch.Tensor, dim: int) -> list:
    """Conv output shape (B, C_out, D_out, H_out, W_out) with the normalised ``dim`` removed."""
    sizes = [x.shape[0], weight.shape[0]] + [x.shape[a] - weight.shape[a] + 1 for a in range(2, 5)]
    del sizes[dim]
    return sizes
