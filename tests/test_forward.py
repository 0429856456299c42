"""Forward correctness vs a float64 composite: odd shapes, dims, dtypes, layouts, bias."""
from __future__ import annotations

import pytest
import torch

import fusedconv
from conftest import DEVICES, eager, float32_precision, make_inputs, reference, rel_err, rel_tol

# (B, C_in, C_out, D, H, W, kD, kH, kW): odd sizes, no tile multiples, non-cubic kernels,
# C_out = 1 (softmax of one value), C_out > 32, a kernel as large as the input.
SHAPES = [
    (2, 3, 5, 7, 9, 11, 3, 3, 3),
    (1, 1, 1, 4, 5, 6, 2, 2, 2),
    (3, 4, 24, 6, 7, 5, 3, 2, 1),
    (2, 7, 33, 5, 6, 7, 1, 3, 3),
    (1, 3, 24, 9, 10, 11, 3, 3, 3),
    (2, 2, 3, 5, 5, 5, 5, 5, 5),
    (2, 16, 17, 3, 9, 8, 3, 1, 2),
]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]
DIMS = [2, 3, 4, -1, -2, -3]


def _check_float32(actual, x, w, b, dim, precision="highest"):
    assert actual.dtype == torch.float32
    expected = reference(x, w, b, dim)
    assert actual.shape == expected.shape
    err = rel_err(actual, expected)
    assert err <= rel_tol(torch.float32, precision), f"rel err {err:.3e} vs float64"
    if precision == "highest":
        torch.testing.assert_close(actual, eager(x, w, b, dim), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_float32_matches_float64(shape, dim, dist, device):
    x, w, b = make_inputs(shape, dist=dist, device=device)
    _check_float32(fusedconv.conv3d_min_softmax(x, w, b, dim), x, w, b, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES[:4], ids=SHAPE_IDS[:4])
def test_no_bias(shape, dim, device):
    x, w, _ = make_inputs(shape, device=device, bias=False)
    _check_float32(torch.ops.fusedconv.forward(x, w, None, dim), x, w, None, dim)
    _check_float32(torch.ops.fusedconv.forward(x, w, dim=dim), x, w, None, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("dim", [2, -2, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_float64(shape, dim, dist, device):
    x, w, b = make_inputs(shape, dist=dist, dtype=torch.float64, device=device)
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    assert actual.dtype == torch.float64
    assert rel_err(actual, reference(x, w, b, dim)) <= rel_tol(torch.float64)


@pytest.mark.parametrize(
    "device,dtype",
    [
        ("cpu", torch.bfloat16),
        pytest.param("cuda", torch.bfloat16, marks=DEVICES[1].marks),
        pytest.param("cuda", torch.float16, marks=DEVICES[1].marks),
    ],
)
@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("dim", [2, 3, -1])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_half_precision(shape, dim, dist, device, dtype):
    x, w, b = make_inputs(shape, dist=dist, dtype=dtype, device=device)
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    assert actual.dtype == dtype
    # The reference sees exactly the (rounded) low-precision values the op saw.
    err = rel_err(actual, reference(x, w, b, dim))
    assert err <= rel_tol(dtype), f"rel err {err:.3e} vs float64"


def test_float16_on_cpu_works_or_says_why():
    """float16 passes validation; on the CPU it must either be right or fail with a clear error."""
    x, w, b = make_inputs(SHAPES[0], dtype=torch.float16)
    try:
        actual = fusedconv.conv3d_min_softmax(x, w, b)
    except RuntimeError as err:
        assert "Half" in str(err) or "float16" in str(err), str(err)
        return
    assert actual.dtype == torch.float16
    assert rel_err(actual, reference(x, w, b)) <= rel_tol(torch.float16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("precision", ["high", "medium"])
@pytest.mark.parametrize("dim", [2, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_tf32_modes(shape, dim, precision, device):
    """"high"/"medium" may use TF32: rel err <= 2e-3 vs float64."""
    for dist in ("randn", "rand"):
        x, w, b = make_inputs(shape, dist=dist, device=device)
        with float32_precision(precision):
            actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
        _check_float32(actual, x, w, b, dim, precision)


@pytest.mark.parametrize("device", DEVICES)
def test_reference_workload(device):
    """The real problem size (batch trimmed on the CPU): fp32-accurate in "highest"."""
    batch = 128 if device == "cuda" else 4
    torch.manual_seed(0)
    conv = torch.nn.Conv3d(3, 24, 3).to(device)
    x = torch.rand(batch, 3, 24, 32, 32, device=device)
    w, b = conv.weight.detach(), conv.bias.detach()
    _check_float32(fusedconv.conv3d_min_softmax(x, w, b, 2), x, w, b, 2)


# ---- layouts -----------------------------------------------------------------------------
LAYOUT_SHAPE = (3, 5, 7, 6, 9, 8, 3, 2, 3)


def _relayout(kind, x, w, b):
    """Same values as (x, w, b) in another memory layout."""
    if kind == "contiguous":
        return x, w, b
    if kind == "x_channels_last_3d":
        return x.to(memory_format=torch.channels_last_3d), w, b
    if kind == "x_sliced":
        big = torch.zeros(x.shape[0], x.shape[1] + 1, 2 * x.shape[2], x.shape[3] + 2, x.shape[4] + 1,
                          dtype=x.dtype, device=x.device)
        view = big[:, 1:, ::2, 1:-1, :-1]
        view.copy_(x)
        return view, w, b
    if kind == "x_permuted":
        return x.permute(4, 0, 3, 1, 2).contiguous().permute(1, 3, 4, 2, 0), w, b
    if kind == "x_batch_broadcast":
        return x[:1].expand_as(x), w, b
    if kind == "weight_channels_last_bias_strided":
        strided = torch.zeros(2 * b.shape[0], dtype=b.dtype, device=b.device)[::2]
        strided.copy_(b)
        return x, w.to(memory_format=torch.channels_last_3d), strided
    if kind == "weight_permuted":
        return x, w.permute(2, 3, 4, 1, 0).contiguous().permute(4, 3, 0, 1, 2), b
    raise AssertionError(kind)


LAYOUTS = ["contiguous", "x_channels_last_3d", "x_sliced", "x_permuted", "x_batch_broadcast",
           "weight_channels_last_bias_strided", "weight_permuted"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [2, 3, 4])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts(layout, dim, dtype, device):
    x, w, b = _relayout(layout, *make_inputs(LAYOUT_SHAPE, dtype=dtype, device=device))
    if layout not in ("contiguous", "weight_channels_last_bias_strided", "weight_permuted"):
        assert not x.is_contiguous()
    actual = fusedconv.conv3d_min_softmax(x, w, b, dim)
    expected = reference(x, w, b, dim)
    assert actual.shape == expected.shape
    assert rel_err(actual, expected) <= rel_tol(dtype)
    if layout == "x_batch_broadcast":  # every batch entry saw the same input
        assert torch.equal(actual, actual[:1].expand_as(actual))


@pytest.mark.parametrize("device", DEVICES)
def test_inputs_not_modified(device):
    x, w, b = make_inputs(SHAPES[0], device=device)
    copies = [t.clone() for t in (x, w, b)]
    fusedconv.conv3d_min_softmax(x, w, b, 3)
    for before, after in zip(copies, (x, w, b)):
        assert torch.equal(before, after)


@pytest.mark.parametrize("device", DEVICES)
def test_fresh_output_each_call(device):
    x, w, b = make_inputs(SHAPES[0], device=device)
    first = fusedconv.conv3d_min_softmax(x, w, b)
    second = fusedconv.conv3d_min_softmax(x, w, b)
    assert first.data_ptr() != second.data_ptr()
    assert torch.equal(first, second)
