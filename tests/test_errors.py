"""Every bad input of DESIGN.md section 2 gets a clear RuntimeError naming the problem.

Each case runs through the real kernels (CPU, and CUDA when present), through the fake
kernel on meta tensors, and through torch.compile (Dynamo runs the fake kernel while
tracing). The Python fake-kernel checks must read exactly like the C++ ones.
"""
from __future__ import annotations

import re

import pytest
import torch

import fusedconv
from conftest import requires_cuda

X_SHAPE = (2, 3, 5, 6, 7)
W_SHAPE = (4, 3, 3, 2, 3)


def _inputs(device, dtype=torch.float32):
    x = torch.randn(X_SHAPE, dtype=dtype).to(device)
    w = torch.randn(W_SHAPE, dtype=dtype).to(device)
    b = torch.randn(W_SHAPE[0], dtype=dtype).to(device)
    return x, w, b


def _case(name, match):
    """Decorator collecting (name, build(device) -> args, regex the message must match)."""

    def register(build):
        CASES.append(pytest.param(build, match, id=name))
        return build

    return register


CASES = []


@_case("x_rank_4", r"x must be 5-D .*got shape \[2, 3, 5, 6\]")
def _(device):
    x, w, b = _inputs(device)
    return x[..., 0], w, b, 2


@_case("x_rank_6", r"x must be 5-D .*got shape \[2, 3, 5, 6, 7, 1\]")
def _(device):
    x, w, b = _inputs(device)
    return x.unsqueeze(-1), w, b, 2


@_case("weight_rank_4", r"weight must be 5-D .*got shape \[4, 3, 3, 2\]")
def _(device):
    x, w, b = _inputs(device)
    return x, w[..., 0], b, 2


@_case("channel_mismatch", r"channel mismatch: x has C_in=3 \(shape \[2, 3, 5, 6, 7\]\) but weight "
       r"expects C_in=2 \(shape \[4, 2, 3, 2, 3\]\)")
def _(device):
    x, w, b = _inputs(device)
    return x, w[:, :2], b, 2


@_case("weight_no_out_channels", r"C_out >= 1 .*got shape \[0, 3, 3, 2, 3\]")
def _(device):
    x, w, b = _inputs(device)
    return x, w[:0], None, 2


for _axis, _name in ((2, "depth"), (3, "height"), (4, "width")):
    _big = list(W_SHAPE)
    _big[_axis] = X_SHAPE[_axis] + 1

    @_case(f"kernel_larger_than_input_{_name}",
           rf"kernel larger than input: weight shape \[{', '.join(map(str, _big))}\] does not fit "
           rf"x shape \[2, 3, 5, 6, 7\] along axis {_axis}")
    def _(device, _big=tuple(_big)):
        x, _, b = _inputs(device)
        return x, torch.randn(_big).to(device), b, 2


@_case("x_integer", r"x must be float32, float64, bfloat16 or float16, got Int")
def _(device):
    x, w, b = _inputs(device)
    return x.int(), w.int(), b.int(), 2


@_case("x_int64", r"x must be float32, float64, bfloat16 or float16, got Long")
def _(device):
    x, w, b = _inputs(device)
    return x.long(), w.long(), None, 2


@_case("x_bool", r"x must be float32, float64, bfloat16 or float16, got Bool")
def _(device):
    x, w, b = _inputs(device)
    return x > 0, w > 0, None, 2


@_case("weight_dtype_mismatch", r"weight dtype Double does not match x dtype Float")
def _(device):
    x, w, b = _inputs(device)
    return x, w.double(), b, 2


@_case("weight_integer", r"weight dtype Int does not match x dtype Float")
def _(device):
    x, w, b = _inputs(device)
    return x, w.int(), b, 2


@_case("bias_dtype_mismatch", r"bias dtype BFloat16 does not match x dtype Float")
def _(device):
    x, w, b = _inputs(device)
    return x, w, b.bfloat16(), 2


@_case("bias_wrong_length", r"bias must have shape \(C_out,\) = \(4,\), got shape \[5\]")
def _(device):
    x, w, _ = _inputs(device)
    return x, w, torch.randn(5).to(device), 2


@_case("bias_2d", r"bias must have shape \(C_out,\) = \(4,\), got shape \[4, 1\]")
def _(device):
    x, w, b = _inputs(device)
    return x, w, b[:, None], 2


for _dim in (0, 1, 5, -4, -6, 100):

    @_case(f"dim_{_dim}", rf"dim must be one of 2, 3, 4 \(or -3, -2, -1\).*got dim={_dim}(?![0-9])")
    def _(device, _dim=_dim):
        x, w, b = _inputs(device)
        return x, w, b, _dim


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=requires_cuda)])
@pytest.mark.parametrize("build,match", CASES)
def test_real_kernel_rejects(build, match, device):
    args = build(device)
    with pytest.raises(RuntimeError, match=match):
        torch.ops.fusedconv.forward(*args)
    with pytest.raises(RuntimeError, match=match):  # the functional form and kernel_path too
        fusedconv.conv3d_min_softmax(*args)
    with pytest.raises(RuntimeError, match=match):
        fusedconv.kernel_path(*args)


@pytest.mark.parametrize("build,match", CASES)
def test_fake_kernel_rejects_on_meta(build, match):
    with pytest.raises(RuntimeError, match=match):
        torch.ops.fusedconv.forward(*build("meta"))


@pytest.mark.parametrize("build,match", CASES)
def test_fake_kernel_message_mirrors_cpp(build, match):
    """python/fusedconv/_validation.py must say exactly what cpp/common/problem.cpp says."""
    with pytest.raises(RuntimeError) as on_cpu:
        torch.ops.fusedconv.forward(*build("cpu"))
    with pytest.raises(RuntimeError) as on_meta:
        torch.ops.fusedconv.forward(*build("meta"))
    assert _first_line(on_meta.value) == _first_line(on_cpu.value)


@pytest.mark.parametrize(
    "build,match",
    [c for c in CASES if c.id in ("x_rank_4", "channel_mismatch", "kernel_larger_than_input_width",
                                  "x_integer", "weight_dtype_mismatch", "bias_wrong_length", "dim_5")],
)
def test_compile_rejects(build, match):
    """torch.compile traces with the fake kernel: the error surfaces with the same message."""
    torch._dynamo.reset()
    x, w, b, dim = build("cpu")
    compiled = torch.compile(
        lambda x, w, b: torch.ops.fusedconv.forward(x, w, b, dim), backend="eager", fullgraph=True
    )
    with pytest.raises(RuntimeError, match=match):
        compiled(x, w, b)


# ---- mixed devices ----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["weight", "bias"])
def test_mixed_devices_meta(which):
    x, w, b = _inputs("cpu")
    args = {"weight": (x, w.to("meta"), b), "bias": (x, w, b.to("meta"))}[which]
    with pytest.raises(RuntimeError, match=rf"{which} is on meta but x is on cpu"):
        torch.ops.fusedconv.forward(*args)


@requires_cuda
@pytest.mark.parametrize("which", ["x", "weight", "bias"])
def test_mixed_devices_cuda(which):
    x, w, b = _inputs("cuda")
    args = {"x": (x.cpu(), w, b), "weight": (x, w.cpu(), b), "bias": (x, w, b.cpu())}[which]
    with pytest.raises(RuntimeError, match=r"is on (cuda:0|cpu) but x is on (cpu|cuda:0)"):
        torch.ops.fusedconv.forward(*args)


def test_module_rejects_bad_input_clearly():
    module = fusedconv.Conv3dMinSoftmax(3, 4, 3)
    with pytest.raises(RuntimeError, match=re.escape("channel mismatch: x has C_in=2")):
        module(torch.randn(1, 2, 5, 5, 5))
