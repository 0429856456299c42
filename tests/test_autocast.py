"""torch.autocast: the op behaves like the eager pattern it replaces (cpp/common/autocast.cpp).

Under autocast, conv3d casts its float32 inputs to the autocast dtype and softmax decides the
output dtype (float32 on CUDA, the autocast dtype on CPU): the fused op must give the dtype
eager gives, and exactly what it gives for the same inputs cast by hand.
"""
from __future__ import annotations

import pytest
import torch

import fusedconv
from conftest import DEVICES, make_inputs, reference, rel_err, rel_tol

# (B, C_in, C_out, D, H, W, kD, kH, kW): odd sizes, C_out > 32 (two channel groups on a GPU).
SHAPES = [(2, 3, 5, 7, 9, 11, 3, 3, 3), (1, 4, 33, 6, 7, 5, 3, 2, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]
LOW_DTYPES = [torch.bfloat16, torch.float16]


def _op(x, w, b, dim=2):
    return torch.ops.fusedconv.forward(x, w, b, dim)


def _eager_pattern(x, w, b, dim):
    return torch.softmax(torch.min(torch.nn.functional.conv3d(x, w, b), dim=dim)[0], dim=1)


def _eager_under_autocast(device, low, x, w, b, dim):
    try:
        with torch.autocast(device, dtype=low):
            return _eager_pattern(x, w, b, dim)
    except (NotImplementedError, RuntimeError) as e:  # e.g. no float16 conv3d on some CPUs
        pytest.skip(f"eager {low} conv3d under autocast on {device}: {e}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("dim", [2, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_output_follows_eager_under_autocast(shape, dim, low, device):
    x, w, b = make_inputs(shape, device=device)  # float32, as in an AMP model
    theirs = _eager_under_autocast(device, low, x, w, b, dim)
    with torch.autocast(device, dtype=low):
        ours = _op(x, w, b, dim)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    # Exactly the op on the inputs cast by hand (autocast adds nothing else)...
    by_hand = _op(x.to(low), w.to(low), b.to(low), dim).to(ours.dtype)
    assert torch.equal(ours, by_hand)
    # ...which is within the low-precision bound of float64 on those cast inputs, and so
    # within twice that of eager under autocast (whose conv output is rounded to `low`).
    exact = reference(x.to(low), w.to(low), b.to(low), dim)
    assert rel_err(ours, exact) <= rel_tol(low)
    assert rel_err(ours, theirs) <= 2 * rel_tol(low)


@pytest.mark.parametrize("device", DEVICES)
def test_float64_and_autocast_off_are_left_alone(device):
    x, w, b = make_inputs(SHAPES[0], dtype=torch.float64, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        ours = _op(x, w, b)
    assert ours.dtype == torch.float64 and torch.equal(ours, _op(x, w, b))
    x32, w32, b32 = (t.float() for t in (x, w, b))
    with torch.autocast(device, dtype=torch.bfloat16, enabled=False):
        assert _op(x32, w32, b32).dtype == torch.float32


@pytest.mark.parametrize("device", DEVICES)
def test_kernel_path_names_the_kernel_autocast_runs(device):
    x, w, b = make_inputs(SHAPES[0], device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        inside = fusedconv.kernel_path(x, w, b)
    assert inside == fusedconv.kernel_path(x.bfloat16(), w.bfloat16(), b.bfloat16())
    if device == "cuda":
        assert inside.endswith("bf16") and not fusedconv.kernel_path(x, w, b).endswith("bf16")


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_under_autocast_match_casting_by_hand(device):
    x, w, b = make_inputs(SHAPES[0], device=device)
    leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
    with torch.autocast(device, dtype=torch.bfloat16):
        y = _op(*leaves)
    grad_y = torch.randn(y.shape, dtype=y.dtype, device=device)
    grads = torch.autograd.grad(y, leaves, grad_y)
    by_hand = [t.clone().requires_grad_(True) for t in (x, w, b)]
    y_hand = _op(*(t.bfloat16() for t in by_hand)).to(y.dtype)
    grads_hand = torch.autograd.grad(y_hand, by_hand, grad_y)
    for got, want, leaf in zip(grads, grads_hand, leaves):
        assert got.dtype == leaf.dtype == torch.float32 and got.shape == leaf.shape
        assert torch.isfinite(got).all() and torch.equal(got, want)


def test_compiled_op_under_autocast_cpu():
    x, w, b = make_inputs(SHAPES[0])
    compiled = torch.compile(_op, fullgraph=True, backend="aot_eager")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = compiled(x, w, b), _op(x, w, b)
    assert got.dtype == want.dtype == torch.bfloat16 and torch.equal(got, want)
