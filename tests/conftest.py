"""Shared helpers for the fusedconv test suite.

Plain functions (import them with ``from conftest import ...``; pytest puts tests/ on
sys.path) and matching fixtures:

- ``reference(x, weight, bias, dim)``: the float64 composite conv3d -> min -> softmax.
- ``eager(x, weight, bias, dim)``: the same composite in the inputs' own dtype (cuDNN TF32
  off, so float32 eager on a GPU is fp32-accurate); ``cudnn_without_tf32()`` is that context.
- ``rel_err(actual, expected)``: max|actual - expected| / max|expected|, in float64 on the
  CPU (NaN if either holds NaN: compare non-finite values with ``assert_nonfinite_match``).
- ``assert_nonfinite_match(actual, expected)``: same NaN/+inf/-inf positions, and returns
  rel_err over the positions where expected is finite.
- ``make_inputs(shape, ...)``: fresh random x/weight/bias (randn or rand, scaled like
  nn.Conv3d's init so the logits stay O(1)).
- ``REL_TOL``/``rel_tol(dtype, precision)``: the DESIGN.md section 2 limits vs float64.
- ``DEVICES``: ["cpu", "cuda"], the cuda entry skipped without a GPU; ``requires_cuda`` mark.
- ``float32_precision(mode)``: context manager that sets torch.set_float32_matmul_precision
  and restores it afterwards (fixture ``set_precision`` does the same for a whole test).
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import fusedconv  # noqa: F401  (registers torch.ops.fusedconv)
from fusedconv._precision import float32_matmul_precision

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]

# Relative error limits vs float64, per DESIGN.md section 2.
REL_TOL = {
    ("float32", "highest"): 1e-5,
    ("float32", "high"): 2e-3,
    ("float32", "medium"): 2e-3,
    ("bfloat16", None): 1e-2,
    ("float16", None): 1e-2,
    ("float64", None): 1e-12,
}


def rel_tol(dtype: torch.dtype, precision: str = "highest") -> float:
    name = str(dtype).removeprefix("torch.")
    return REL_TOL[(name, precision if name == "float32" else None)]


def reference(x, weight, bias=None, dim=2):
    """softmax(min(conv3d(x, weight, bias), dim).values, dim=1), computed in float64."""
    b = None if bias is None else bias.double()
    conv = F.conv3d(x.double(), weight.double(), b)
    return torch.softmax(torch.min(conv, dim=dim)[0], dim=1)


@contextlib.contextmanager
def cudnn_without_tf32():
    """cuDNN convolutions in true fp32. PyTorch lets cuDNN use TF32 by default
    (torch.backends.cudnn.allow_tf32), whatever the matmul precision: such an eager result
    is only ~1e-3 accurate and no reference for the fp32-accurate "highest" mode."""
    cudnn = torch.backends.cudnn
    with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark,
                     deterministic=cudnn.deterministic, allow_tf32=False):
        yield


def eager(x, weight, bias=None, dim=2):
    """The unfused PyTorch composite in the inputs' dtype (what users run today), with
    cuDNN's TF32 off so that float32 on a GPU is fp32-accurate (see cudnn_without_tf32)."""
    with cudnn_without_tf32():
        return torch.softmax(torch.min(F.conv3d(x, weight, bias), dim=dim)[0], dim=1)


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Max abs error over max abs value of ``expected``, both as float64; 0 for empty tensors."""
    actual, expected = actual.double().cpu(), expected.double().cpu()
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.numel() == 0:
        return 0.0
    scale = expected.abs().max().item()
    return (actual - expected).abs().max().item() / (scale if scale > 0 else 1.0)


def assert_nonfinite_match(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """Asserts NaN and +-inf sit at the same positions; returns rel_err over the finite rest."""
    actual, expected = actual.double().cpu(), expected.double().cpu()
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    for name, test in (("NaN", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        mismatch = test(actual) != test(expected)
        assert not mismatch.any(), (
            f"{name} pattern differs from eager at {int(mismatch.sum())} positions, first at "
            f"{tuple(mismatch.nonzero()[0].tolist())}"
        )
    finite = torch.isfinite(expected)
    return rel_err(actual[finite], expected[finite])


def make_inputs(
    shape,
    *,
    dist: str = "randn",
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
    bias: bool = True,
    seed: int | None = None,
):
    """Random (x, weight, bias) for shape (B, C_in, C_out, D, H, W, kD, kH, kW).

    ``dist="randn"``: zero-mean normal x and weight; ``"rand"``: uniform [0, 1) x and a
    positive weight (all logits positive, which stresses the softmax's max subtraction).
    The weight is scaled by 1/sqrt(fan_in), like nn.Conv3d's init, so logits are O(1).
    """
    batch, c_in, c_out, depth, height, width, k_d, k_h, k_w = shape
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    sample = torch.randn if dist == "randn" else torch.rand
    fan_in = c_in * k_d * k_h * k_w
    x = sample(batch, c_in, depth, height, width, generator=gen, dtype=torch.float64)
    w = sample(c_out, c_in, k_d, k_h, k_w, generator=gen, dtype=torch.float64) / fan_in**0.5
    b = sample(c_out, generator=gen, dtype=torch.float64) if bias else None
    to = dict(device=device, dtype=dtype)
    return x.to(**to), w.to(**to), (None if b is None else b.to(**to))


def make_inputs_without_near_ties(
    shape, dims, *, gap, dist="randn", dtype=torch.float32, device="cpu", bias=True, view=None
):
    """Random inputs (make_inputs) whose min along each of `dims` beats the runner-up
    of every column by `gap` (measured in float64). The min is not differentiable at a tie:
    a near-tie within a float32 conv's error (~1e-6), or within gradcheck's finite
    differences (eps 1e-6 moves a conv value by up to ~1e-5), may take the other argmin and
    move that column's gradient, so gradient tests against float64 would fail at random
    (seen on the H200, 2026-11-29, and in the CPU float32 parity test, 2026-11-30). Exact
    ties are tested on their own. `view(x, w)` -> (x, w), e.g. a strided slice, is what is
    checked and returned."""
    view = view or (lambda x, w: (x, w))
    for _ in range(100):
        x, w, b = make_inputs(shape, dist=dist, dtype=torch.float64, device=device, bias=bias)
        conv = torch.nn.functional.conv3d(*view(x, w), b)
        gaps = []
        for dim in dims:
            if conv.shape[dim] >= 2:
                two = conv.topk(2, dim=dim, largest=False).values  # sorted: min, runner-up
                gaps.append((two.narrow(dim, 1, 1) - two.narrow(dim, 0, 1)).min().item())
        if all(g > gap for g in gaps):
            return *view(x.to(dtype), w.to(dtype)), (None if b is None else b.to(dtype))
    raise AssertionError("no random inputs without near-ties in 100 draws")


def graph_replay(x, weight, bias, dim, fresh):
    """The op captured in a CUDA graph on a copy of x (one warm-up call outside the capture,
    on a side stream), then replayed with `fresh` copied into that input: the replay's output."""
    static_x = x.clone()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.ops.fusedconv.forward(static_x, weight, bias, dim)
        with torch.cuda.graph(graph, stream=stream):
            captured = torch.ops.fusedconv.forward(static_x, weight, bias, dim)
    static_x.copy_(fresh)
    graph.replay()
    torch.cuda.synchronize()
    return captured


def misaligned_copy(x):
    """x's values at a base that is not 16-byte aligned: the cp.async kernels (one CTA per
    work item) run instead of the TMA ones."""
    storage = torch.empty(x.numel() + 1, device=x.device, dtype=x.dtype)
    x_copied = storage[1:].view_as(x)
    x_copied.copy_(x)
    assert x_copied.data_ptr() % 16 != 0
    return x_copied


def persistent_batch(waves, tiles_per_index):
    """A batch whose work items (tiles) fill `waves` waves of 4 CTAs per SM: past one wave the
    TMA kernels run one wave of persistent CTAs, each taking several items in turn
    (wgmma_launch.cuh, persistent_grid). At N = 24 (C_out = 20), k_r = 3 and without the
    argmin: 1.3 waves keep TF32's 3-per-SM kernel and 16-bit's 4-per-SM one (two rounds of
    items either way); 1.9 take TF32's retiring 4-per-SM kernel (two rounds instead of three);
    2.2 take the lean 5-per-SM kernels (TF32: two rounds instead of three; 16-bit and
    autocast: two instead of three). With the argmin (the backward's recompute) 2.2 takes
    TF32's retiring kernel and 16-bit's 4-per-SM one (wgmma_launch.cuh, retire_pays and
    takes_lean; the ctest RetireRule.PersistentTestBatchesTakeTheNamedKernels checks these
    choices on the H200's 132 SMs). At N = 32 (C_out = 29) 1.9 waves take the lean kernels,
    4 per SM (RetireRule.LeanAtN32MatchesTheLab)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return int(waves * 4 * sms / tiles_per_index) + 1


float32_precision = float32_matmul_precision  # the package's own scoped setter


@pytest.fixture
def set_precision():
    """Call set_precision("high") inside a test; the old precision is restored afterwards."""
    old = torch.get_float32_matmul_precision()
    yield torch.set_float32_matmul_precision
    torch.set_float32_matmul_precision(old)


@pytest.fixture(name="reference")
def _reference_fixture():
    return reference


@pytest.fixture(name="eager")
def _eager_fixture():
    return eager


@pytest.fixture(name="rel_err")
def _rel_err_fixture():
    return rel_err


@pytest.fixture(name="make_inputs")
def _make_inputs_fixture():
    return make_inputs


_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@functools.lru_cache(maxsize=None)
def load_example(name):
    """examples/<name>.py as a module (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, _EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernelbench_example():
    """examples/kernelbench_modelnew.py: the KernelBench ``Model`` users have, and the fused
    ``ModelNew``."""
    return load_example("kernelbench_modelnew")
