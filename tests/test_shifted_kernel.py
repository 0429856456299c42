"""The shifted-plane kernel (cpp/cuda/hopper/shifted_kernel.cuh, rule in shifted_rule.h):
16-bit operands (autocast's float32 data: C_out 1..64; bf16 or fp16 data: 17..64) and TF32 (C_out
33..64), at C_in = 16, q_in 49..64, k = 3, Q contiguous, a weight that is one 16-byte-aligned channel-major block,
a batch index within 32-bit offsets, no argmin, at least one work item (batch index x 2 output
rows) per SM.
Each test proves by the kernel's name which kernel ran, and compares with float64 on fresh
random inputs (the values the kernel's operands hold)."""
from __future__ import annotations

import contextlib

import pytest
import torch

import fusedconv
from conftest import (
    assert_nonfinite_match,
    float32_precision,
    graph_replay,
    make_inputs,
    misaligned_copy,
    reference,
    rel_err,
)

WGMMA_DEVICE = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
pytestmark = pytest.mark.skipif(
    not WGMMA_DEVICE or not fusedconv.cuda_kernels_built(),
    reason="needs a compute capability 9.0 GPU and a build with the CUDA kernels",
)

KERNEL = "shifted_conv_min_softmax_kernel"
TOL = 1e-2  # 16-bit or TF32 operands, float32 accumulation, against float64 on the rounded values
# mode: (data dtype, operand dtype, kernel_path); "high": float32 matmul precision, TF32 operands
MODES = {
    "bf16": (torch.bfloat16, torch.bfloat16, "cuda-wgmma-bf16"),
    "fp16": (torch.float16, torch.float16, "cuda-wgmma-fp16"),
    "autocast-bf16": (torch.float32, torch.bfloat16, "cuda-wgmma-autocast-bf16"),
    "autocast-fp16": (torch.float32, torch.float16, "cuda-wgmma-autocast-fp16"),
    "high": (torch.float32, torch.float32, "cuda-wgmma-tf32"),
}

# (B, C_out, D, H, W), C_in = 16, k = 3: the C_in = 16 target shape; C_out = 50 at q_in = 57
# with an odd p_out (a last pair of one row) and 299 items (persistent: 2 or 3 per warpgroup);
# C_out = 49 at 270 items; one output plane (D = 3) at q_in = 49; 155 items (B = 5: at most
# one per warpgroup) at q_in = 63. 299 items on 132 CTAs give some CTAs' warpgroups 3 and 2
# items (ping-pong past the other's last plane); D = 3 and 4 have one and two output planes.
# C_out = 33 and 48: 31 and 16 padded channels.
CASES = [(16, 64, 16, 64, 64), (23, 50, 5, 27, 57), (9, 49, 4, 61, 64), (70, 64, 3, 9, 49), (5, 64, 4, 64, 63),
         (11, 33, 6, 25, 60), (6, 48, 5, 50, 52)]
IDS = ["x".join(map(str, c)) for c in CASES]


def _inputs(case, mode, dist="randn"):
    batch, c_out, d, h, w = case
    return make_inputs((batch, 16, c_out, d, h, w, 3, 3, 3), dtype=MODES[mode][0], device="cuda", dist=dist)


def _context(mode):
    data, operand, _ = MODES[mode]
    if mode == "high":
        return float32_precision("high")
    return torch.autocast("cuda", dtype=operand) if data != operand else contextlib.nullcontext()


def _run(x, w, b, dim=2):
    """The op (in the caller's autocast and precision) and whether the shifted kernel ran (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        y = torch.ops.fusedconv.forward(x, w, b, dim)
        torch.cuda.synchronize()
    return y, any(KERNEL in e.key for e in prof.key_averages())


def _forward(mode, x, w, b, dim=2):
    """The op under `mode` and whether the shifted kernel ran."""
    with _context(mode):
        return _run(x, w, b, dim)


def _reference(mode, x, w, b, dim=2):
    """float64 on the operand values: x and the weights as the operand type rounds them (the
    bias stays in the data type, as the kernel adds it)."""
    operand = MODES[mode][1]
    return reference(x.to(operand).double(), w.to(operand).double(), None if b is None else b.double(), dim)


def _reference_err(mode, y, x, w, b, dim=2):
    return rel_err(y, _reference(mode, x, w, b, dim))


@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("mode", list(MODES))
def test_matches_float64(mode, case, dist):
    x, w, b = _inputs(case, mode, dist)
    y, ran = _forward(mode, x, w, b)
    assert ran
    assert y.dtype == MODES[mode][0] and y.is_contiguous()
    assert _reference_err(mode, y, x, w, b) <= TOL
    assert torch.equal(y, _forward(mode, x, w, b)[0])  # run to run
    with _context(mode):
        assert torch.ops.fusedconv.kernel_path(x, w, b, 2) == MODES[mode][2]


SIXTEEN_BIT = [m for m in MODES if m != "high"]


@pytest.mark.parametrize("case", [(19, 17, 5, 30, 61), (8, 24, 4, 64, 64), (14, 32, 6, 21, 50), (9, 16, 4, 40, 64),
                                  (27, 8, 3, 11, 52), (14, 3, 5, 21, 49), (14, 1, 4, 21, 57)],
                         ids=["17", "24", "32", "16", "8", "3", "1"])
@pytest.mark.parametrize("mode", list(MODES))
def test_narrow_channels(mode, case):
    """C_out 1..32 (at most half of M's 64 rows live; at C_out <= 32 a cluster's second CTA copies
    no weights): autocast takes it at every C_out, bf16 / fp16 data from 17, TF32 leaves it to the
    channel-group kernels (which were faster there, BENCHMARKS.md v53, v54)."""
    x, w, b = _inputs(case, mode, "rand")
    y, ran = _forward(mode, x, w, b)
    c_out = case[1]
    assert ran == (mode.startswith("autocast") or (mode in SIXTEEN_BIT and c_out >= 17))
    assert _reference_err(mode, y, x, w, b) <= TOL


@pytest.mark.parametrize("mode", list(MODES))
def test_views_without_copies(mode):
    """Strided views it takes (a channel slice, a misaligned base, dim = 3 with Q = W still
    contiguous) and one it leaves to the other kernels (channels_last_3d: Q is not contiguous)."""
    batch, c_out, d, h, w_in = 23, 50, 5, 27, 57
    wide, w, b = make_inputs((batch, 20, c_out, d, h, w_in, 3, 3, 3), dtype=MODES[mode][0], device="cuda")
    w = w[:, 2:18].contiguous()
    sliced = wide[:, 2:18]
    for x in (sliced, misaligned_copy(sliced.contiguous())):
        y, ran = _forward(mode, x, w, b)
        assert ran and _reference_err(mode, y, x, w, b) <= TOL
    x = torch.randn(batch, 16, 28, d + 2, w_in, device="cuda").to(MODES[mode][0])  # dim = 3: R = H, P = D, Q = W
    y, ran = _forward(mode, x, w, b, 3)
    assert ran and _reference_err(mode, y, x, w, b, 3) <= TOL
    x = sliced.contiguous().to(memory_format=torch.channels_last_3d)
    y, ran = _forward(mode, x, w, b)
    assert not ran and _reference_err(mode, y, x, w, b) <= TOL


@pytest.mark.parametrize("mode", ["bf16", "autocast-fp16"])
def test_weight_layouts(mode):
    """Weights it copies as one block (contiguous, channels_last_3d; dim = 3's permuted view in
    test_views_without_copies) and ones it leaves to the other kernels (a channel slice of a
    wider weight, a base that is not 16-byte aligned)."""
    x, w, b = _inputs((23, 50, 5, 27, 57), mode)
    wide = torch.randn(50, 20, 3, 3, 3, device="cuda").to(w.dtype)
    for weight, taken in ((w.to(memory_format=torch.channels_last_3d), True), (wide[:, 2:18], False),
                          (misaligned_copy(w), False)):
        y, ran = _forward(mode, x, weight, b)
        assert ran == taken and _reference_err(mode, y, x, weight, b) <= TOL, (weight.stride(), taken)


def test_routing_edges():
    """Just outside the rule: C_out = 16 and 65, q_in = 48 and 65, C_in = 15, too few items;
    3xTF32, and B = 4 (124 items) under autocast. (TF32 at q_in = 64: test_matches_float64; TF32
    at C_out = 32: test_narrow_channels.)"""
    for batch, c_in, c_out, h, w_in in [(16, 16, 16, 24, 64), (16, 16, 65, 24, 64), (16, 16, 64, 24, 48),
                                        (16, 16, 64, 24, 65), (16, 15, 64, 24, 64), (2, 16, 64, 24, 64)]:
        x, w, b = make_inputs((batch, c_in, c_out, 4, h, w_in, 3, 3, 3), dtype=torch.bfloat16, device="cuda")
        y, ran = _forward("bf16", x, w, b)
        assert not ran and _reference_err("bf16", y, x, w, b) <= TOL, (batch, c_in, c_out, h, w_in)
    x, w, b = _inputs((70, 64, 3, 9, 49), "high")
    with float32_precision("highest"):  # 3xTF32
        assert not _run(x, w, b)[1]
    x, w, b = _inputs((4, 64, 4, 64, 64), "autocast-bf16")  # 4 x 31 = 124 items (an H200 has 132 SMs)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert _run(x, w, b)[1] == (124 >= torch.cuda.get_device_properties(0).multi_processor_count)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("infinite_bias", [True, False])
def test_nan_inf_follow_eager(mode, infinite_bias):
    """NaN / Inf in x with a finite bias (one min.NaN per value, the bias after the min) and with
    infinite biases (the CTA adds the bias per plane: a +inf conv meets -inf as NaN)."""
    x, w, b = _inputs((70, 64, 3, 9, 49), mode)
    x[0, 1, 1, 5, 6] = float("nan")
    x[3, 0, 2, 3, 3] = float("inf")
    x[5, 2, 0, 8, 40] = float("-inf")
    if infinite_bias:
        b[0], b[17] = float("-inf"), float("-inf")
    y, ran = _forward(mode, x, w, b)
    assert ran
    expected = _reference(mode, x, w, b).cpu()
    assert torch.isnan(expected).any() and not torch.isnan(expected).all()
    assert assert_nonfinite_match(y, expected) <= TOL * 10


def test_no_bias_and_graph_capture():
    x, w, _ = _inputs((70, 64, 3, 9, 49), "bf16")
    y, ran = _forward("bf16", x, w, None)
    assert ran and rel_err(y, _reference("bf16", x, w, None)) <= TOL
    fresh, _, _ = _inputs((70, 64, 3, 9, 49), "bf16")
    assert torch.equal(graph_replay(x, w, None, 2, fresh), _forward("bf16", fresh, w, None)[0])


def test_backward_recomputes_elsewhere():
    """The backward asks for the argmin, which this kernel does not track: bf16 inputs that need
    gradients take the argmin kernels, and the gradients match float64."""
    x, w, b = _inputs((70, 64, 3, 9, 49), "bf16")
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    y = fusedconv.conv3d_min_softmax(xs, ws, bs, dim=2)
    grad_y = torch.randn_like(y)
    y.backward(grad_y)
    xd, wd, bd = (t.double().requires_grad_() for t in (x, w, b))
    torch.softmax(torch.nn.functional.conv3d(xd, wd, bd).min(dim=2).values, dim=1).backward(grad_y.double())
    for got, want in ((xs.grad, xd.grad), (ws.grad, wd.grad), (bs.grad, bd.grad)):
        assert rel_err(got, want) <= 5 * TOL


BIG_GPU = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_properties(0).total_memory < 40 * 2**30,
    reason="needs a GPU with 40 GB",
)


@BIG_GPU
def test_input_over_2_pow_31_elements():
    """64-bit offsets: x has 2.2e9 elements; the last batch indices against float64."""
    batch = 2**31 // (16 * 3 * 9 * 64) + 1
    x = torch.randn(batch, 16, 3, 9, 64, device="cuda", dtype=torch.bfloat16)
    assert x.numel() > 2**31
    _, w, b = _inputs((1, 64, 3, 9, 64), "bf16")
    y, ran = _forward("bf16", x, w, b)
    assert ran
    assert _reference_err("bf16", y[-3:], x[-3:], w, b) <= TOL
    del x, y
    torch.cuda.empty_cache()


@BIG_GPU
def test_batch_index_past_32_bit_offsets():
    """A batch index whose elements span more than 2^31 (a channel stride of 1.5 x 2^27): the
    kernel adds 32-bit offsets to one pointer per item, so the other kernels take it; the same
    values contiguous (160 items) take the shifted kernel."""
    batch, xs_c = 40, 2**27 + 2**24
    storage = torch.randn(batch * 1728 + 15 * xs_c, device="cuda", dtype=torch.bfloat16)
    x = storage.as_strided((batch, 16, 3, 9, 64), (1728, xs_c, 576, 64, 1))
    _, w, b = _inputs((1, 64, 3, 9, 64), "bf16")
    y, ran = _forward("bf16", x, w, b)
    assert not ran
    dense = x.contiguous()
    del storage, x
    y_dense, ran_dense = _forward("bf16", dense, w, b)
    assert ran_dense
    assert _reference_err("bf16", y, dense, w, b) <= TOL
    assert _reference_err("bf16", y_dense, dense, w, b) <= TOL
    del dense, y, y_dense
    torch.cuda.empty_cache()
