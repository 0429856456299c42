"""NaN/Inf as eager, empty batches, extreme logits, output shapes on meta tensors."""
from __future__ import annotations

import pytest
import torch

import fusedconv
from conftest import DEVICES, assert_nonfinite_match, make_inputs, reference, rel_err, rel_tol

DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [2, 3, 4])
def test_nan_in_one_column_poisons_only_that_column(dim, dtype, device):
    """A 1x1x1 kernel keeps one NaN in one conv column. It sits at a middle index of the min
    axis, which fminf/std::min-style minimums would silently drop."""
    x, w, b = make_inputs((2, 3, 5, 6, 7, 8, 1, 1, 1), dtype=dtype, device=device)
    index = [1, 0, 3, 4, 5]
    x[tuple(index)] = float("nan")
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    expected = reference(x, w, b, dim)
    assert expected.isnan().any() and not expected.isnan().all()
    assert rel_err(torch.nan_to_num(actual), torch.nan_to_num(expected)) <= 1e-5
    assert_nonfinite_match(actual, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [2, 3, 4, -1])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_nan_position_along_min_axis(where, dim, dtype, device):
    """NaN as the first, a middle or the last element of the min: the min is NaN every time."""
    x, w, b = make_inputs((1, 2, 3, 6, 5, 7, 1, 1, 1), dtype=dtype, device=device)
    axis = dim % 5
    index = [0, 1, 2, 2, 3]
    index[axis] = {"first": 0, "middle": x.shape[axis] // 2, "last": x.shape[axis] - 1}[where]
    x[tuple(index)] = float("nan")
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    expected = reference(x, w, b, dim)
    assert_nonfinite_match(actual, expected)
    assert rel_err(torch.nan_to_num(actual), torch.nan_to_num(expected)) <= 1e-5


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [2, 3, 4])
def test_nan_and_inf_scattered(dim, dtype, device):
    """NaN, +inf and -inf through a 3x3x3 conv: +-inf mins, inf-inf NaNs, all as eager."""
    x, w, b = make_inputs((2, 3, 5, 8, 9, 10, 3, 3, 3), dtype=dtype, device=device, seed=7)
    flat = x.view(-1)
    gen = torch.Generator().manual_seed(3)
    picks = torch.randperm(flat.numel(), generator=gen)[:6].tolist()
    for position, value in zip(picks, ["nan", "inf", "-inf", "inf", "-inf", "nan"]):
        flat[position] = float(value)
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    expected = reference(x, w, b, dim)
    assert torch.isfinite(expected).any() and not torch.isfinite(expected).all()
    assert assert_nonfinite_match(actual, expected) <= rel_tol(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [2, 3, 4])
def test_infinite_mins(dim, device):
    """C_in = 1 and a 1x1x1 kernel: x = -inf gives a -inf min in channels with positive weight
    (softmax 0 there) and +inf in the others; a column of +inf gives a +inf min (NaN softmax)."""
    x = torch.randn(2, 1, 4, 5, 6, dtype=torch.float64)
    w = torch.tensor([1.5, -0.5, 2.0, -1.0], dtype=torch.float64).view(4, 1, 1, 1, 1)
    b = torch.randn(4, dtype=torch.float64)
    x[0, 0, 1, 2, 3] = -float("inf")
    line = [slice(None)] * 5
    line[0], line[1] = 1, 0
    for axis in range(2, 5):
        line[axis] = 0 if axis != dim else slice(None)
    x[tuple(line)] = float("inf")  # a whole min column of +inf in batch 1
    for dtype in DTYPES:
        args = [t.to(device, dtype) for t in (x, w, b)]
        actual = fusedconv.conv3d_min_softmax(*args, dim)
        expected = reference(*args, dim)
        assert (expected == 0).any() and expected.isnan().any()
        assert assert_nonfinite_match(actual, expected) <= rel_tol(dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_in_weight_or_bias(device):
    x, w, b = make_inputs((1, 2, 3, 5, 5, 5, 2, 2, 2), device=device)
    w_nan = w.clone()
    w_nan[1, 0, 0, 0, 0] = float("nan")
    assert fusedconv.conv3d_min_softmax(x, w_nan, b).isnan().all()
    b_nan = b.clone()
    b_nan[2] = float("nan")
    assert fusedconv.conv3d_min_softmax(x, w, b_nan).isnan().all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits_do_not_overflow(dtype, device):
    """Logits in the hundreds: exp() overflows unless the softmax subtracts the max."""
    x, w, b = make_inputs((2, 3, 6, 5, 7, 6, 3, 3, 3), dtype=dtype, device=device)
    x = x * 200
    actual = fusedconv.conv3d_min_softmax(x, w, b)
    expected = reference(x, w, b)
    assert torch.isfinite(actual).all()
    # float32 rounding of logits ~300 limits the accuracy to ~1e-4 (eager is no better).
    assert rel_err(actual, expected) <= (1e-12 if dtype == torch.float64 else 1e-3)


@pytest.mark.parametrize("device", DEVICES + ["meta"])
@pytest.mark.parametrize("dim", [2, 3, 4, -1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_empty_batch(dtype, dim, device):
    x = torch.empty(0, 3, 6, 7, 8, dtype=dtype, device=device)
    w = torch.randn(5, 3, 3, 2, 3, dtype=dtype).to(device)
    b = torch.randn(5, dtype=dtype).to(device)
    out = torch.ops.fusedconv.forward(x, w, b, dim)
    full = [0, 5, 4, 6, 6]
    del full[dim % 5]
    assert list(out.shape) == full and out.dtype == dtype and out.device == x.device


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("dim", [2, 3, 4, -1, -2, -3])
def test_meta_output_shape_and_dtype(dim, dtype):
    x = torch.empty(3, 4, 9, 8, 7, dtype=dtype, device="meta")
    w = torch.empty(6, 4, 3, 2, 1, dtype=dtype, device="meta")
    out = torch.ops.fusedconv.forward(x, w, None, dim)
    cpu_shape = reference(torch.zeros(3, 4, 9, 8, 7), torch.zeros(6, 4, 3, 2, 1), None, dim).shape
    assert out.shape == cpu_shape and out.dtype == dtype and out.device.type == "meta"


def test_meta_matches_real_output_metadata():
    """Fake and real kernels agree on shape, dtype and strides (torch.compile relies on it)."""
    for dim in (2, 3, 4):
        x, w, b = make_inputs((2, 3, 5, 6, 7, 8, 3, 2, 3))
        real = torch.ops.fusedconv.forward(x, w, b, dim)
        fake = torch.ops.fusedconv.forward(x.to("meta"), w.to("meta"), b.to("meta"), dim)
        assert (real.shape, real.dtype, real.stride()) == (fake.shape, fake.dtype, fake.stride())


@pytest.mark.parametrize("device", DEVICES)
def test_single_output_channel_is_all_ones(device):
    x, w, b = make_inputs((2, 3, 1, 5, 6, 7, 2, 3, 2), device=device)
    out = fusedconv.conv3d_min_softmax(x, w, b, 3)
    assert torch.equal(out, torch.ones_like(out))
