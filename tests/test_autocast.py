"""torch.autocast: the op behaves like the eager pattern it replaces (cpp/common/autocast.h).

Under autocast, conv3d casts its float32 inputs to the autocast dtype and softmax decides the
output dtype (float32 on CUDA, the autocast dtype on CPU): the fused op must give the dtype
eager gives. Where it casts, it gives exactly what it gives for the inputs cast by hand; on
CUDA, float32 inputs that need no gradient run the fused autocast kernel instead (float32
data, 16-bit MMA operands: "cuda-wgmma-autocast-*"), within the 16-bit error bound of that.
"""
from __future__ import annotations

import pytest
import torch

import fusedconv
from conftest import (
    DEVICES,
    assert_nonfinite_match,
    make_inputs,
    misaligned_copy,
    persistent_batch,
    reference,
    rel_err,
    rel_tol,
    requires_cuda,
)

# (B, C_in, C_out, D, H, W, kD, kH, kW): odd sizes, C_out > 32 (two channel groups on a GPU).
SHAPES = [(2, 3, 5, 7, 9, 11, 3, 3, 3), (1, 4, 33, 6, 7, 5, 3, 2, 1)]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]
LOW_DTYPES = [torch.bfloat16, torch.float16]


def _op(x, w, b, dim=2):
    return torch.ops.fusedconv.forward(x, w, b, dim)


def _fused_autocast(path):
    return path.startswith("cuda-wgmma-autocast-")


def _hopper():
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


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
        path = fusedconv.kernel_path(x, w, b, dim)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    by_hand = _op(x.to(low), w.to(low), b.to(low), dim).to(ours.dtype)
    if _fused_autocast(path):  # x and w rounded like the casts; bias and y not rounded
        assert rel_err(ours, by_hand) <= rel_tol(low)
    else:  # exactly the op on the inputs cast by hand (autocast adds nothing else)
        assert torch.equal(ours, by_hand)
    # Within the low-precision bound of float64 on the cast inputs, and so within twice
    # that of eager under autocast (whose conv output is rounded to `low`).
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
    cast_path = fusedconv.kernel_path(x.bfloat16(), w.bfloat16(), b.bfloat16())
    if device == "cuda" and _hopper():
        assert inside == "cuda-wgmma-autocast-bf16"
    else:
        assert inside == cast_path
    # Inputs that need a gradient take the casts (the backward sees 16-bit inputs).
    w.requires_grad_(True)
    with torch.autocast(device, dtype=torch.bfloat16):
        assert fusedconv.kernel_path(x, w, b) == cast_path
        with torch.no_grad():
            assert fusedconv.kernel_path(x, w, b) == inside


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


@requires_cuda
def test_fused_autocast_falls_back_to_casting():
    # k_r = 5: the wgmma kernel has it for 16-bit data, not for autocast's float32 data.
    x, w, b = make_inputs((2, 3, 5, 9, 9, 11, 5, 3, 3), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        ours = _op(x, w, b)
        assert not _fused_autocast(fusedconv.kernel_path(x, w, b))
    assert torch.equal(ours, _op(x.bfloat16(), w.bfloat16(), b.bfloat16()).float())


@requires_cuda
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
def test_fused_autocast_nonfinite_and_determinism(low):
    x, w, b = make_inputs((2, 3, 7, 6, 9, 10, 3, 3, 3), device="cuda")
    x[0, 1, 2, 3, 4] = float("nan")
    x[1, 0, 4, 5, 6] = float("inf")
    x[1, 2, 0, 1, 1] = -float("inf")
    with torch.autocast("cuda", dtype=low):
        ours, again = _op(x, w, b), _op(x, w, b)
    by_hand = _op(x.to(low), w.to(low), b.to(low)).float()
    assert torch.equal(torch.isnan(ours), torch.isnan(again)) and torch.equal(
        ours.nan_to_num(), again.nan_to_num())
    assert assert_nonfinite_match(ours, by_hand) <= rel_tol(low)


def _check_fused_autocast_rings_agree(x, w, b, low):
    """The fused autocast kernel on float32 x: within the 16-bit bound of float64 on the cast
    inputs, and bitwise what the cp.async kernel (one CTA per tile) gives for the same values."""
    with torch.autocast("cuda", dtype=low):
        assert _fused_autocast(fusedconv.kernel_path(x, w, b))
        ours, one_per_tile = _op(x, w, b), _op(misaligned_copy(x), w, b)
    assert rel_err(ours, reference(x.to(low), w.to(low), b.to(low))) <= rel_tol(low)
    assert torch.equal(ours, one_per_tile)


@pytest.mark.skipif(not _hopper(), reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("waves, c_out, h", [(1.3, 20, 30), (2.2, 20, 30), (1.9, 29, 30), (2.2, 20, 31), (1.9, 29, 31)])
def test_fused_autocast_on_persistent_grids(waves, c_out, h, low):
    """Float32 data past one wave of tiles: persistent CTAs of the 4-per-SM kernel (1.3
    waves) and of the lean 5-per-SM one (2.2; conftest.persistent_batch); at C_out = 29
    (N = 32) the lean 4-per-SM one (1.9). H = 31 (a 29 x 30 plane: 15 tiles of 2 x 32, the
    last row of them half empty, against 16 of 4 x 16) runs the lean ones on 2 x 32 tiles."""
    tiles = 14 if h == 30 else 16  # of 4 x 16, which the lean rule counts
    x, w, b = make_inputs((persistent_batch(waves, tiles), 3, c_out, 9, h, 32, 3, 3, 3), device="cuda")
    _check_fused_autocast_rings_agree(x, w, b, low)


@pytest.mark.skipif(not _hopper(), reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
def test_fused_autocast_with_channel_groups(low):
    """C_out = 56: two channel groups of 28 (N = 32), a cluster of CTAs per tile; B = 18 is
    504 CTAs, two waves of the 3-per-SM kernel and one of the lean 4-per-SM one."""
    x, w, b = make_inputs((18, 3, 56, 9, 30, 32, 3, 3, 3), device="cuda", dist="rand")
    _check_fused_autocast_rings_agree(x, w, b, low)


@pytest.mark.skipif(not _hopper(), reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("c_in, c_out", [(3, 64), (16, 80), (16, 20)])
def test_fused_autocast_on_persistent_channel_clusters(c_in, c_out, low):
    """Channel clusters past one wave run persistent too (v43): C_out = 64 (two groups of N =
    32) at 2.5 waves of 4 per SM; C_in = 16, C_out = 80 (K = 144: 3 k-steps per chunk, three
    groups of 27 in N = 32) at about 2 waves of 3 per SM on a 19 x 22 plane (10 tiles of 4 x 16
    per group). C_out = 20: the same K on one channel group of N = 24, 3 k-steps per chunk there
    too since v44. (C_out 33..64 at that K: test_fused_autocast_on_groups_of_64.)"""
    shape = ((persistent_batch(2.5, 28), 3, 64, 9, 30, 32, 3, 3, 3) if c_in == 3
             else (persistent_batch(1.5, 10 * ((c_out + 31) // 32)), 16, c_out, 7, 21, 24, 3, 3, 3))
    x, w, b = make_inputs(shape, device="cuda", dist="rand")
    _check_fused_autocast_rings_agree(x, w, b, low)


@pytest.mark.skipif(not _hopper(), reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("low", LOW_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("c_in, c_out, batch", [(16, 64, 14), (16, 50, 80), (4, 57, 80), (16, 40, 80),
                                                 (16, 100, 14), (4, 170, 80)])
def test_fused_autocast_on_groups_of_64(c_in, c_out, batch, low):
    """Float32 data at C_out 33..64 with K in chunks (144, 36) runs one channel group of N =
    64 by TMA (v45; 33..48 since v48; width_rule.h), and C_out 97..128 a cluster of two (v47),
    161..192 of three (v48), at one wave (B = 14) and persistent (80); the cp.async ring runs
    groups of 32 or 24 (softmax sums in another order): both within the 16-bit bound."""
    x, w, b = make_inputs((batch, c_in, c_out, 7, 21, 24, 3, 3, 3), device="cuda", dist="rand")
    cast = reference(x.to(low), w.to(low), b.to(low))
    with torch.autocast("cuda", dtype=low):
        assert _fused_autocast(fusedconv.kernel_path(x, w, b))
        ours, groups, again = _op(x, w, b), _op(misaligned_copy(x), w, b), _op(x, w, b)
    assert rel_err(ours, cast) <= rel_tol(low) and rel_err(groups, cast) <= rel_tol(low)
    assert torch.equal(ours, again)


@requires_cuda
def test_compiled_op_under_autocast_cuda():
    x, w, b = make_inputs(SHAPES[1], device="cuda")
    compiled = torch.compile(_op, fullgraph=True, backend="aot_eager")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        got, want = compiled(x, w, b), _op(x, w, b)
    assert got.dtype == want.dtype == torch.float32
    assert rel_err(got, want) <= rel_tol(torch.bfloat16)
