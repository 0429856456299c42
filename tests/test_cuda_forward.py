"""The fused CUDA kernel (cpp/cuda/fused_*.cu) vs a float64 reference, on the GPU.

Every case asserts which path ran (torch.ops.fusedconv.kernel_path) so a silent fallback
to the composite cannot pass as the kernel. All tests skip without a GPU.
"""
from __future__ import annotations

import re

import pytest
import torch

import fusedconv
from conftest import (
    assert_nonfinite_match,
    eager,
    float32_precision,
    graph_replay,
    make_inputs,
    make_inputs_without_near_ties,
    misaligned_copy,
    persistent_batch,
    reference,
    rel_err,
)

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or not fusedconv.cuda_kernels_built(),
    reason="needs a CUDA GPU and a build with the CUDA kernels",
)

# (B, C_in, C_out, D, H, W, kD, kH, kW): odd sizes, no tile multiples, non-cubic kernels,
# both CTA configurations (C_out <= 32 and C_out up to 128), k from 1 to 5; on the wgmma
# kernel C_out > 32 splits the channels over a cluster, with and without an R split.
SHAPES = [
    (2, 3, 24, 9, 13, 17, 3, 3, 3),
    (3, 1, 5, 7, 6, 11, 1, 2, 3),
    (1, 1, 1, 4, 5, 6, 2, 2, 2),
    (2, 16, 64, 6, 20, 19, 3, 3, 3),
    (2, 5, 100, 5, 9, 10, 2, 3, 1),
    (1, 2, 128, 6, 7, 35, 5, 5, 5),
    (2, 16, 7, 11, 12, 13, 5, 4, 3),
    (5, 2, 33, 4, 3, 70, 2, 1, 4),
    (1, 3, 32, 3, 140, 3, 1, 3, 2),
    # long R: several unrolled periods of the wgmma plane loop plus a partial one, k_r = 2
    (2, 3, 20, 31, 10, 18, 2, 3, 3),
    # channel split: 2 groups of N = 24 with an R split of 4 (cluster of 8); 7 groups of 29
    (1, 4, 48, 7, 9, 21, 3, 3, 3),
    (2, 2, 200, 5, 8, 9, 3, 2, 3),
    # K in chunks on the wgmma kernel, odd chunk counts (16 K per chunk, TF32 24 where that
    # pads less): K = 36: 3 chunks (TF32: 2); K = 72: 5 (TF32: 3); K = 75 (dim 2): 5 in every
    # mode; K = 144 above: 9 (TF32: 6)
    (3, 4, 24, 7, 13, 15, 3, 3, 3),
    (2, 8, 24, 6, 9, 10, 3, 3, 3),
    (2, 3, 20, 6, 11, 12, 3, 5, 5),
    # k_r = 5 on the wgmma kernel: 6 planes per unrolled period (TF32 retiring: 5), several
    # periods and a partial one; with 2 channel groups and an R split (B = 1); along W with
    # K of one 3xTF32 chunk (dim 4), and k_r = 4 (the mma.sync kernel) along H with k_q = 5
    (2, 3, 20, 27, 10, 18, 5, 3, 3),
    (1, 2, 40, 20, 9, 21, 5, 3, 2),
    (2, 1, 16, 8, 23, 9, 2, 4, 5),
]
SHAPE_IDS = ["x".join(map(str, s)) for s in SHAPES]

# (precision mode, dtype, expected kernel_path, rel tol vs float64)
MODES = {
    "highest": (torch.float32, "cuda-fused-3xtf32", 1e-5),
    "high": (torch.float32, "cuda-fused-tf32", 2e-3),
    "bf16": (torch.bfloat16, "cuda-fused-bf16", 1e-2),
    "fp16": (torch.float16, "cuda-fused-fp16", 1e-2),
}


def _precision(mode):
    """The float32 matmul precision `mode` runs under (16-bit modes: the default)."""
    return mode if mode in ("highest", "high") else "highest"


def _run(mode, x, w, b, dim):
    """Runs the op under `mode`; returns (y, kernel_path)."""
    with float32_precision(_precision(mode)):
        path = torch.ops.fusedconv.kernel_path(x, w, b, dim)
        y = torch.ops.fusedconv.forward(x, w, b, dim)
    return y, path


# Reduction length K = C_in*kD*kH*kW above which "highest" leaves each kernel's 3xTF32 for
# the fp32 composite (cpp/cuda/forward_cuda.cpp: kMax3xTF32ReductionWgmma / ...MmaSync).
MAX_3XTF32_REDUCTION_WGMMA = 512
MAX_3XTF32_REDUCTION_MMA_SYNC = 256


# The sm_90a wgmma kernel (cpp/cuda/hopper/) runs on compute capability 9.0 devices (the
# default build targets include 90a) for C_out <= 256 (above 32 in channel groups of up to 32,
# one CTA each), a kernel extent of 1, 2, 3 or 5 along the reduced axis and <= 5 along the
# last kept axis; everything else fused runs the mma.sync kernel (C_out <= 128; 3xTF32 <= 32).
WGMMA_DEVICE = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def _wgmma_fits(w, dim):
    k_r = w.shape[dim]
    k_q = w.shape[3] if dim == 4 else w.shape[4]
    return w.shape[0] <= 256 and k_r in (1, 2, 3, 5) and k_q <= 5


def _expected_path(mode, w, dim=2):
    """The path the op must take. Every test shape's weights and input ring fit the kernels'
    shared memory (3xTF32 holds three weight copies; the wgmma kernel drops its R split where
    the split's merge area would not fit): a shape that did not would fail here."""
    k = w[0].numel()
    if mode == "highest" and k > MAX_3XTF32_REDUCTION_WGMMA:
        return "cuda-composite"
    path = MODES[mode][1]
    if WGMMA_DEVICE and _wgmma_fits(w, dim % 5):
        return path.replace("cuda-fused-", "cuda-wgmma-")
    # The mma.sync kernel: C_out <= 128, and for 3xTF32 <= 32 and K <= 256 (the composite was
    # faster).
    if mode == "highest" and k > MAX_3XTF32_REDUCTION_MMA_SYNC:
        return "cuda-composite"
    return path if w.shape[0] <= (32 if mode == "highest" else 128) else "cuda-composite"


def _check(mode, x, w, b, dim, expect_path=None):
    dtype, _, tol = MODES[mode]
    y, path = _run(mode, x, w, b, dim)
    assert path == (expect_path or _expected_path(mode, w, dim))
    assert y.dtype == dtype and y.is_contiguous()
    # The reference sees the values the kernel saw (16-bit inputs already rounded).
    expected = reference(x, w, b, dim)
    err = rel_err(y, expected)
    if mode == "highest":
        # conftest.eager runs cuDNN with TF32 off: eager float32 as the contract means it
        # (cuDNN's default TF32 was seen 2.5e-4 off on a K=16 shape on the H200).
        fp32_eager = eager(x, w, b, dim)
        torch.testing.assert_close(y, fp32_eager, atol=1e-4, rtol=1e-4)
        # Long all-positive sums (K = 960, "rand") sit at float32's own noise near 1e-5:
        # there the bound is "no worse than twice float32 eager".
        tol = max(tol, 2 * rel_err(fp32_eager, expected))
    assert err <= tol, f"{mode}: rel err {err:.3e} > {tol:.1e} vs float64"
    return y


def _check_nan_and_inf(mode, x, w, b, dim, expect_path=None):
    """Puts a NaN, a +inf and a -inf into x (batch indices 0 and 1) and checks the output's
    NaN/Inf positions and its finite values against the direct float64 conv on the CPU (same
    NaN/Inf positions as eager's math; cuDNN may pick Winograd/FFT for float32, whose transforms
    smear one Inf into NaNs)."""
    x[0, 1, 4, 5, 6] = float("nan")
    x[1, 0, 2, 3, 3] = float("inf")
    x[1, 2, 7, 8, 1] = float("-inf")
    y, path = _run(mode, x, w, b, dim)
    assert path == (expect_path or _expected_path(mode, w, dim))
    expected = reference(x.cpu(), w.cpu(), b.cpu(), dim)
    assert torch.isnan(expected).any()
    err = assert_nonfinite_match(y, expected)
    assert err <= MODES[mode][2] * 10


def _check_rings_agree(mode, x, w, b, dim):
    """_check, and bitwise the same result for the same values one element further on, which
    the cp.async ring (one CTA per work item) loads instead of TMA: the same sums."""
    y = _check(mode, x, w, b, dim)
    assert torch.equal(y, _check(mode, misaligned_copy(x), w, b, dim))


@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dim", [2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_fused_matches_float64(shape, dim, mode, dist):
    x, w, b = make_inputs(shape, dist=dist, dtype=MODES[mode][0], device="cuda")
    _check(mode, x, w, b, dim)


@pytest.mark.parametrize("shape", [(2, 3, 24, 6, 9, 11, 3, 3, 3), (1, 16, 40, 4, 7, 9, 3, 3, 3)])
def test_highest_near_float32_max(shape):
    """"highest" splits each operand into a TF32 big part and, on the wgmma kernel, bf16
    cross-term operands. bf16 rounds a value above 3.3961e38 to nearest as Inf, so a big part
    there (3.3995e38, exact in TF32) must not go to bf16 that way: with weights exact in TF32
    (small part 0) an Inf cross operand would give Inf * 0 = NaN where eager is finite."""
    x, w, _ = make_inputs(shape, device="cuda", bias=False)
    big = torch.tensor(0x7F7FC000, dtype=torch.int32).view(torch.float32).item()  # 3.3995e38
    x = torch.where(x >= 0, big, -big) * (torch.rand_like(x) < 0.5)  # +-3.3995e38 or 0
    w = (torch.randint(-4, 5, w.shape, device="cuda") * 2.0**-16).float()  # exact in TF32 and bf16
    y, path = _run("highest", x, w, None, 2)
    assert path == _expected_path("highest", w)
    expected = eager(x, w, None, 2)
    assert torch.isfinite(expected).all()  # (the case is meant to stay finite in float32)
    assert torch.isfinite(y).all(), "a huge finite input turned into NaN or Inf"
    torch.testing.assert_close(y, expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dist", ["randn", "rand"])
def test_3xtf32_margin_at_long_reduction(dist):
    """The mma.sync 3xTF32 kernel near the top of its range (K = 240; k_r = 6, which the
    wgmma kernel does not take) keeps half the bound over several fresh draws. Its tensor
    cores truncate each fp32 sum; with the small terms in the big-term accumulator and the
    bias in it, the worst of 40 seeds at K = 250 was 8.9e-6 and the median ~6e-6 (H200,
    2026-11-30); apart: 2.7e-6 and <= 2e-6 (BENCHMARKS.md, v22)."""
    shape = (1, 2, 29, 8, 7, 35, 6, 4, 5)
    worst = 0.0
    for _ in range(8):
        x, w, b = make_inputs(shape, dist=dist, device="cuda")
        y, path = _run("highest", x, w, b, 2)
        assert path == "cuda-fused-3xtf32"
        worst = max(worst, rel_err(y, reference(x, w, b, 2)))
    assert worst <= 5e-6, f"rel err {worst:.3e} over 8 draws, K = 240"


# "highest" at 256 < K <= 512 on the wgmma kernel (K in chunks; k_r = 5 and 3), one with
# two channel groups at B = 2, where the R split's merge area would not fit (no split);
# worst of 40 seeds at K = 375 / 432 / 500: 7.3e-6 / 6.9e-6 / 7.2e-6 (H200, 2026-11-30).
LONG_K_SHAPES = [
    ((2, 3, 24, 9, 13, 17, 5, 5, 5), 2),
    ((2, 16, 24, 9, 13, 17, 3, 3, 3), 3),
    ((2, 4, 24, 9, 13, 17, 5, 5, 5), 4),
    ((2, 16, 64, 9, 13, 17, 3, 3, 3), 2),
]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("dist", ["randn", "rand"])
@pytest.mark.parametrize("shape,dim", LONG_K_SHAPES, ids=["x".join(map(str, s)) + f"-d{d}" for s, d in LONG_K_SHAPES])
def test_3xtf32_long_reduction_on_wgmma(shape, dim, dist):
    x, w, b = make_inputs(shape, dist=dist, device="cuda")
    _check("highest", x, w, b, dim, expect_path="cuda-wgmma-3xtf32")


# The chunked "highest" kernels split x in the gather (bf16_pairs_truncated): an Inf or NaN
# there must reach the output through the TF32 part alone, as in the one-chunk kernels.
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("shape,dim", LONG_K_SHAPES[:2], ids=["k375-kr5", "k432"])
def test_nan_and_inf_in_long_reductions(shape, dim):
    x, w, b = make_inputs(shape, device="cuda")
    _check_nan_and_inf("highest", x, w, b, dim, expect_path="cuda-wgmma-3xtf32")


@pytest.mark.parametrize(
    "shape",
    [(1, 3, 29, 8, 7, 35, 6, 4, 5), (2, 5, 24, 9, 13, 17, 5, 5, 5)],
    ids=["k360-mma-sync-range", "k625"],
)
def test_3xtf32_leaves_long_reductions_to_the_composite(shape):
    """K = 360 with k_r = 6 (the mma.sync kernel's; its 3xTF32 stops at K = 256, where the
    composite was faster) and K = 625 (above the wgmma kernel's 512) run the fp32 composite."""
    x, w, b = make_inputs(shape, device="cuda")
    _check("highest", x, w, b, 2, expect_path="cuda-composite")


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", list(MODES))
def test_reference_workload_runs_wgmma(mode):
    """The reference workload's shape (smaller batch) takes the sm_90a kernel in every mode."""
    x, w, b = make_inputs((3, 3, 24, 24, 32, 32, 3, 3, 3), dtype=MODES[mode][0], device="cuda")
    assert _run(mode, x, w, b, 2)[1] == MODES[mode][1].replace("cuda-fused-", "cuda-wgmma-")
    _check(mode, x, w, b, 2)


# Grids that take fewer waves at 4 CTAs per SM than at 3 (CTAs = batch x tiles x channel
# groups): TF32 there runs the one-chunk kernels that retire each plane in its step (4 CTAs
# per SM, k_r = 5: 3 instead of 2; cpp/cuda/hopper/wgmma_launch.cuh, retire_pays).
# k_r = 3 / 2 / 1 / 5, N = 24 and 32, one and two channel groups.
LARGE_GRID_SHAPES = [
    (64, 3, 24, 6, 34, 34, 3, 3, 3),
    (64, 3, 20, 6, 33, 35, 2, 3, 3),
    (64, 2, 30, 5, 30, 37, 1, 3, 5),
    (32, 3, 56, 5, 34, 34, 3, 3, 3),
    (48, 2, 24, 9, 34, 34, 5, 3, 3),
]


def _takes_retiring_kernel(shape, dim=2):
    """Whether the wgmma grid (batch x 4 x 16 tiles x channel groups CTAs) takes fewer waves
    at the retiring kernel's CTAs per SM (4; k_r = 5: 3) than at the other's (3; 2)."""
    b, _, c_out, *spatial = shape
    out = [spatial[i] - spatial[i + 3] + 1 for i in range(3)]
    del out[dim - 2]
    ctas = b * -(-out[0] // 4) * -(-out[1] // 16) * ((c_out + 31) // 32)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    retire, keep = (3, 2) if spatial[dim - 2 + 3] == 5 else (4, 3)
    return -(-ctas // (retire * sms)) < -(-ctas // (keep * sms))


def _assert_grad_x_matches_rows_alone(precision, x, w, b, rows):
    """grad_x at batch indices `rows` (a slice) of the whole batch against the same rows run
    alone (another grid): it depends on the argmin of each column only."""
    with float32_precision(precision):
        xs = x.clone().requires_grad_()
        y = torch.ops.fusedconv.forward(xs, w, b, 2)
        g = torch.randn_like(y)
        (grad,) = torch.autograd.grad(y, xs, g)
        xs_rows = x[rows].clone().requires_grad_()
        (grad_rows,) = torch.autograd.grad(torch.ops.fusedconv.forward(xs_rows, w, b, 2), xs_rows, g[rows])
    torch.testing.assert_close(grad[rows], grad_rows, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
@pytest.mark.parametrize("tiles_per_sm", [1.0, 1.5])
def test_two_ctas_per_tile_when_tiles_fill_the_gpu(mode, tiles_per_sm):
    """A batch whose 4 x 16 output tiles fill more than half the SMs splits R in two where the
    doubled grid fits one wave (cpp/cuda/hopper/wgmma_launch.cuh, plan_config): 16 tiles per
    batch index, about 1 or 1.5 tiles per SM (at 1.5 TF32 and bf16 split, 3xTF32 does not).
    Against float64, and bitwise against two single batch indices, which split R four ways
    (the min is exact and every output plane's wgmma order is the same), their argmin too."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shape = (int(sms * tiles_per_sm) // 16, 3, 24, 12, 32, 32, 3, 3, 3)
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda")
    y = _check(mode, x, w, b, 2)
    for i in (0, shape[0] - 1):
        assert torch.equal(y[i:i + 1], _run(mode, x[i:i + 1], w, b, 2)[0])
    if mode != "bf16":
        _assert_grad_x_matches_rows_alone(mode, x, w, b, slice(0, 1))


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("shape", LARGE_GRID_SHAPES, ids=["x".join(map(str, s)) for s in LARGE_GRID_SHAPES])
def test_large_grid_tf32(shape):
    """The large-grid TF32 kernels against float64, and bitwise against the small-grid kernels
    on two batch indices (same wgmma order, exact min); their argmin through the backward."""
    assert _takes_retiring_kernel(shape)
    x, w, b = make_inputs(shape, device="cuda")
    y = _check("high", x, w, b, 2)
    y_small, _ = _run("high", x[-2:], w, b, 2)
    assert not _takes_retiring_kernel((2,) + shape[1:])
    assert torch.equal(y[-2:], y_small)
    _assert_grad_x_matches_rows_alone("high", x, w, b, slice(-2, None))


@pytest.mark.parametrize("mode", ["highest", "bf16"])
def test_no_bias_and_negative_dim(mode):
    x, w, _ = make_inputs((3, 3, 24, 8, 11, 9, 3, 3, 3), dtype=MODES[mode][0], device="cuda")
    _check(mode, x, w, None, -2)


@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
@pytest.mark.parametrize("layout", ["channels_last_3d", "sliced", "permuted"])
def test_strided_inputs_without_copies(layout, mode):
    dtype = MODES[mode][0]
    x, w, b = make_inputs((2, 3, 24, 9, 12, 10, 3, 2, 3), dtype=dtype, device="cuda")
    if layout == "channels_last_3d":
        x = x.contiguous(memory_format=torch.channels_last_3d)
        w = w.contiguous(memory_format=torch.channels_last_3d)
    elif layout == "sliced":  # every other W column of a wider tensor, and a strided bias
        wide = torch.randn(2, 3, 9, 12, 20, device="cuda", dtype=dtype)
        x = wide[..., ::2]
        b = torch.randn(48, device="cuda", dtype=dtype)[::2]
    else:  # a (B, C, W, H, D) tensor viewed as (B, C, D, H, W)
        x = torch.randn(2, 3, 10, 12, 9, device="cuda", dtype=dtype).permute(0, 1, 4, 3, 2)
    assert not x.is_contiguous()
    for dim in (2, 3, 4):
        _check(mode, x, w, b, dim)


# Inputs the wgmma kernels load by TMA (unit stride along Q, rows and base 16-byte aligned:
# W a multiple of 8 covers bfloat16 too; k_r != 5): odd sizes otherwise, extent-1 batch and
# channel axes, an R split, a channel split (C_out = 40, 64), K in chunks (K = 45, 144).
# "highest" loads by TMA only past one wave of tiles (WidthKernels::tma_candidate): the last
# shape has 420 tiles (2 channel groups of N = 24; an H200 holds 396 such 3xTF32 CTAs at once,
# 3 per SM since v41).
TMA_SHAPES = [
    (3, 3, 24, 11, 13, 24, 3, 3, 3),
    (1, 1, 7, 5, 9, 8, 2, 3, 3),
    (2, 5, 40, 7, 10, 16, 3, 3, 3),
    (1, 16, 64, 6, 20, 24, 3, 3, 3),
    (210, 3, 40, 5, 6, 16, 3, 3, 3),
]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("shape", TMA_SHAPES, ids=["x".join(map(str, s)) for s in TMA_SHAPES])
def test_tma_and_cp_async_rings_agree(shape, dim, mode):
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda")
    _check_rings_agree(mode, x, w, b, dim)


# (B, 3, 20, 9, 30, 32) with k = 3 along dim 2: 28 x 30 outputs per plane, 7 x 2 tiles of 4 x 16.
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16", "fp16"])
@pytest.mark.parametrize("waves", [1.3, 1.9, 2.2])
def test_persistent_ctas_take_several_items(waves, mode):
    shape = (persistent_batch(waves, 14), 3, 20, 9, 30, 32, 3, 3, 3)
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda", dist="rand" if waves > 1.5 else "randn")
    _check_rings_agree(mode, x, w, b, 2)


# Over enough rounds of items persistent CTAs claim them from a counter that each call
# allocates and its launch zeroes (claim_rule.h; 6.5 waves: 6 rounds of the lean kernels at 5
# per SM, 7 of 3xTF32's at 4): calls on two streams at once, and one graph replayed twice, must
# each still run every item once.
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
def test_item_claims_are_per_call(mode):
    shape = (persistent_batch(6.5, 14), 3, 20, 9, 30, 32, 3, 3, 3)
    inputs = [make_inputs(shape, dtype=MODES[mode][0], device="cuda", dist=d) for d in ("randn", "rand")]
    alone = [_check(mode, x, w, b, 2) for x, w, b in inputs]
    streams = [torch.cuda.Stream() for _ in inputs]
    torch.cuda.synchronize()
    with float32_precision(_precision(mode)):
        together = []
        for stream, (x, w, b) in zip(streams, inputs):
            with torch.cuda.stream(stream):
                together.append(torch.ops.fusedconv.forward(x, w, b, 2))
        torch.cuda.synchronize()
        assert all(torch.equal(a, t) for a, t in zip(alone, together))

        (x, w, b), (fresh, _, _) = inputs
        static_x = x.clone()
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        with torch.cuda.stream(stream):
            torch.ops.fusedconv.forward(static_x, w, b, 2)
            with torch.cuda.graph(graph, stream=stream):
                captured = torch.ops.fusedconv.forward(static_x, w, b, 2)
        for source in (fresh, x):
            static_x.copy_(source)
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(captured, torch.ops.fusedconv.forward(source, w, b, 2))


# Only the grids that claim run the claiming instantiation (wgmma_conv_min_softmax_kernel<Cfg,
# true>): its code cost the fixed-share launches registers and TF32 1 µs at B = 1 (v61). One
# batch index (an R split) and 0.9 waves (one round) take fixed shares; 6.5 waves claim.
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
def test_only_claiming_grids_run_the_claiming_kernel(mode):
    for batch, claims in ((1, False), (persistent_batch(0.9, 14), False), (persistent_batch(6.5, 14), True)):
        x, w, b = make_inputs((batch, 3, 20, 9, 30, 32, 3, 3, 3), dtype=MODES[mode][0], device="cuda")
        _, names = _launched_kernels(lambda: _check(mode, x, w, b, 2))
        kinds = {m.group(1) for n in names if "wgmma_conv_min_softmax_kernel" in n
                 for m in [re.search(r"WgmmaConfig<[^<>]*>\s*,\s*(true|false)\s*>", n)] if m}
        assert kinds == {"true" if claims else "false"}, f"B = {batch}: launched {names}"


# C_out = 29 (N = 32): at 1.9 waves the lean 4-per-SM kernels take two rounds of items where
# 16-bit's 3-per-SM kernel takes three, and they replace TF32's retiring kernel (the same 4 per
# SM; the ctest RetireRule.LeanAtN32MatchesTheLab). 3xTF32's lean kernel (3 per SM) takes three
# rounds where its kept one (2 per SM) takes four (RetireRule.HighestLeanAtN32).
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16", "fp16"])
@pytest.mark.parametrize("dim", [2, 3])
def test_lean_kernels_at_width_32(mode, dim):
    shape = (persistent_batch(1.9, 14), 3, 29, 9, 30, 32, 3, 3, 3)
    if dim == 3:  # the same 14 tiles per batch index along (D, W); W stays contiguous for TMA
        shape = shape[:3] + (30, 9, 32) + shape[6:]
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda", dist="rand")
    _check_rings_agree(mode, x, w, b, dim)


# A 29 x 30 output plane (H = 31, W = 32): 16 tiles of 4 x 16, or 15 of 2 x 32 whose last row
# is half empty. Past one wave the lean kernels (C_out = 20: N = 24 at 2.2 waves; 29: N = 32 at
# 1.9) take 2 x 32 tiles, and so does 3xTF32's kept kernel at N = 24 where that saves a round of
# items (1.55 waves: two rounds instead of three at 3 per SM) (tile_rule.h; the ctest TileRule
# checks the choices); the cp.async ring's 4 x 16 tiles must give the same bits.
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16", "fp16"])
@pytest.mark.parametrize("c_out", [20, 29])
@pytest.mark.parametrize("dim", [2, 3])
def test_wide_tiles_on_persistent_grids(mode, c_out, dim):
    waves = 1.55 if mode == "highest" else 2.2 if c_out == 20 else 1.9
    shape = (persistent_batch(waves, 16), 3, c_out, 9, 31, 32, 3, 3, 3)
    if dim == 3:  # the same plane along (D, W)
        shape = shape[:3] + (31, 9, 32) + shape[6:]
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda", dist="rand" if c_out == 29 else "randn")
    _check_rings_agree(mode, x, w, b, dim)


# Channel groups (C_out > 32: a cluster of CTAs per tile; past one wave persistent since v43):
# C_out = 40 (two groups at N = 24) at B = 20 is 560 CTAs, C_out = 56 (N = 32) at B = 18 504:
# two waves of the kept kernels, one of the lean ones (the lean rule, ctest RetireRule).
# "highest" at C_out = 56, B = 26: 728 CTAs, three waves of its kept kernel (2 per SM), two of
# its lean one (3 per SM).
LEAN_GROUP_CASES = [(m, 40, 20) for m in ("high", "bf16", "fp16")] + [
    (m, 56, 18) for m in ("high", "bf16", "fp16")] + [("highest", 56, 26)]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode, c_out, batch", LEAN_GROUP_CASES)
def test_lean_kernels_with_channel_groups(mode, c_out, batch):
    x, w, b = make_inputs((batch, 3, c_out, 9, 30, 32, 3, 3, 3), dtype=MODES[mode][0], device="cuda", dist="rand")
    _check_rings_agree(mode, x, w, b, 2)


# The same clusters on the 29 x 30 plane (H = 31): the lean kernels there run 2 x 32 tiles
# (C_out = 40 at B = 20: 600 CTAs, one wave of 5 per SM; 64 at B = 16: 480, one wave of 4), and
# 3xTF32's kept kernel keeps 4 x 16 on clusters (wgmma_launch.cuh, kept_takes_wide).
@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode, c_out, batch", [("high", 40, 20), ("bf16", 40, 20), ("fp16", 40, 20),
                                                ("high", 64, 16), ("bf16", 64, 16), ("highest", 40, 40)])
def test_wide_tiles_with_channel_groups(mode, c_out, batch):
    x, w, b = make_inputs((batch, 3, c_out, 9, 31, 32, 3, 3, 3), dtype=MODES[mode][0], device="cuda", dist="rand")
    _check_rings_agree(mode, x, w, b, 2)


# Channel clusters over several rounds of items (v43: persistent clusters, each CTA keeping its
# channel group): C_out = 64 (two groups of N = 32) and 100 (four of 25 in N = 32) at 2.5 waves
# of 4 per SM on the 28 x 30 plane (14 tiles per group); C_in = 16, C_out = 80 (three groups of
# 27 in N = 32; K = 144 in chunks: 16-bit gathers 3 k-steps per chunk there, TF32 9) at 1.5
# waves on a 19 x 22 plane (10 tiles per group). (C_out 49..64 at that K takes one group of
# N = 64 since v45 (16-bit) and v46 (TF32): test_channel_groups_of_64.) The cp.async ring (one
# cluster per tile) must give the same bits.
PERSISTENT_CLUSTER_SHAPES = [
    (persistent_batch(2.5, 28), 3, 64, 9, 30, 32, 3, 3, 3),
    (persistent_batch(2.5, 56), 3, 100, 9, 30, 32, 3, 3, 3),
    (persistent_batch(1.5, 30), 16, 80, 7, 21, 24, 3, 3, 3),
] if WGMMA_DEVICE else []


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16", "fp16"])
@pytest.mark.parametrize("shape", PERSISTENT_CLUSTER_SHAPES,
                         ids=["x".join(map(str, s[1:3])) for s in PERSISTENT_CLUSTER_SHAPES])
def test_persistent_channel_clusters(shape, mode):
    x, w, b = make_inputs(shape, dtype=MODES[mode][0], device="cuda", dist="rand")
    _check_rings_agree(mode, x, w, b, 2)


# K in longer chunks by TMA (v44): TF32 at N = 32 gathers 9 k-steps per chunk where K fills
# two or more with no more padding than 3-step chunks (K = 144 at C_in = 16, and at C_in = 9
# with 4 x 4 taps; K = 216 in two channel groups), and at N = 24 since v45 (K = 144 in one
# group of 20 and in two of 24); 16-bit at N = 24 gathers 3 (K = 144 in one group of 20 and
# in two of 24, K = 36 in two of 20), as at N = 32 since v43; 3xTF32 at N = 32 gathers 3 where that
# fits more CTAs per SM (K = 72: 2 instead of 1; "highest" loads by TMA past one wave of 2 per
# SM only). At one wave (B = 2) and past it (persistent, 1.5 waves of 4 per SM on 10 tiles
# per group). The cp.async ring (3-step chunks for TF32, 2-step for 3xTF32, 1-step for 16-bit)
# must give the same bits: each accumulator sums the same k-steps in the same order (and
# 3xTF32's 2-step chunks at K = 72 one zero k-step more). K = 216 in two groups of 24 (TF32's
# one group of N = 64 does not fit there, 16-bit's 3-step chunks pad more).
LONG_CHUNK_SHAPES = [  # (C_in, C_out, k_p = k_q)
    (16, 30, 3), (9, 30, 4), (24, 50, 3), (16, 20, 3), (16, 48, 3), (4, 40, 3), (8, 30, 3), (24, 48, 3)]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16", "fp16"])
@pytest.mark.parametrize("waves", [0, 1.5])
@pytest.mark.parametrize("c_in, c_out, k", LONG_CHUNK_SHAPES, ids=["x".join(map(str, s)) for s in LONG_CHUNK_SHAPES])
def test_long_chunks_by_tma(c_in, c_out, k, waves, mode):
    tiles = 10 * ((c_out + 31) // 32)
    batch = persistent_batch(waves, tiles) if waves else 2
    x, w, b = make_inputs((batch, c_in, c_out, 7, 21, 24, 3, k, k), dtype=MODES[mode][0], device="cuda", dist="rand")
    # Past one wave one group of N = 64 takes C_out = 48 at K = 144 in TF32 (v46), and C_out
    # 33..48 where 3-step chunks pad no more in 16-bit (v48): test_channel_groups_of_64. Its
    # softmax sums in another order than the cp.async ring's two groups of 24.
    sixteen_bit = {(16, 48), (4, 40)}
    groups_of_64 = {"high": {(16, 48)}, "bf16": sixteen_bit, "fp16": sixteen_bit}.get(mode, set())
    if waves and (c_in, c_out) in groups_of_64:
        for x_in in (x, misaligned_copy(x)):
            _check(mode, x_in, w, b, 2)
    else:
        _check_rings_agree(mode, x, w, b, 2)


# Channel groups of N = 64 (cpp/cuda/hopper/width_rule.h, the ctest WidthRule): 16-bit
# operands since v45 (one warpgroup), TF32 since v46 (two warpgroups sharing a CTA): C_out
# 49..64 at k_r = 3 with K in chunks (K = 144, 36, 45, 288 here; TF32's weights at K = 288 do
# not fit, so the groups of 32 run there), and C_out = 40 at K = 144 (24 of the 64 channels
# masked; 16-bit since v48); since v47 C_out 97..128 in clusters of two such groups (100 at
# K = 144: 28 channels of the second group masked; 128 at K = 36), since v48 of three (170)
# and four (240), by TMA where R stays whole: B = 14 (140 items on 10 tiles of 4 x 16 per
# batch index, one wave; TF32's clusters 84 on 6 tiles of 8 x 16 per group, its one group at
# C_out <= 64 140 shared by 70 CTAs: test_own_items_per_warpgroup)
# and 80 (persistent: several rounds). The cp.async ring runs groups of 32 (or 24), whose
# softmax sums in another order: both within the bound of float64. Their per-channel sums
# are the same, so the argmin the backward recomputes from each gives the same gradients.
GROUP64_SHAPES = [  # (C_in, C_out), k = 3
    (16, 64), (4, 50), (5, 57), (32, 49), (16, 40), (16, 100), (4, 128), (16, 170), (4, 240)]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("mode", ["high", "bf16", "fp16"])
@pytest.mark.parametrize("batch", [14, 80])
@pytest.mark.parametrize("c_in, c_out", GROUP64_SHAPES, ids=["x".join(map(str, s)) for s in GROUP64_SHAPES])
def test_channel_groups_of_64(c_in, c_out, batch, mode):
    x, w, b = make_inputs((batch, c_in, c_out, 7, 21, 24, 3, 3, 3), dtype=MODES[mode][0], device="cuda",
                          dist="rand" if batch == 80 else "randn")
    y = _check(mode, x, w, b, 2)
    _check(mode, misaligned_copy(x), w, b, 2)
    assert torch.equal(y, _run(mode, x, w, b, 2)[0])  # run to run
    if hasattr(torch.ops.fusedconv, "backward"):
        grad_y = torch.randn(y.shape, device="cuda", generator=torch.Generator("cuda").manual_seed(3))
        with float32_precision(_precision(mode)):
            one, groups = (torch.ops.fusedconv.backward(grad_y, y, x_in, w, b, 2, [True, True, True])
                           for x_in in (x, misaligned_copy(x)))
            for got, want in zip(one, groups):
                assert torch.equal(got, want)


def _launched_kernels(fn):
    """fn()'s result and the names of the CUDA kernels it launched (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    return out, [e.key for e in prof.key_averages()]


# TF32's one group of N = 64 (C_out <= 64, no cluster) since v49: each of the CTA's two
# warpgroups walks its own 4 x 16 tiles (own ring, TMA barriers and named barrier; the
# weights shared), its kernel WgmmaConfig<..., 4, 2, true>. On the 19 x 34 plane (15 tiles
# per batch index, an odd item count: the last CTA's second warpgroup has none) at one wave
# (B = 9: 135 items on 68 CTAs) and persistent (B = 37: 555 items on one wave of 132 CTAs at
# one per SM, two or three items per warpgroup; B = 89: 1335 items, 6 rounds, which the
# warpgroups claim, claim_rule.h). The cp.async ring (two groups of 32) must agree within the
# bound, and the result must not change run to run.
OWN_ITEMS_CASES = [(16, 64, 9), (16, 64, 37), (4, 50, 37), (16, 40, 9), (5, 57, 37), (16, 64, 89)]


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.parametrize("c_in, c_out, batch", OWN_ITEMS_CASES, ids=["x".join(map(str, s)) for s in OWN_ITEMS_CASES])
def test_own_items_per_warpgroup(c_in, c_out, batch):
    x, w, b = make_inputs((batch, c_in, c_out, 7, 21, 36, 3, 3, 3), dtype=torch.float32, device="cuda",
                          dist="rand" if batch == 37 else "randn")
    y, names = _launched_kernels(lambda: _check("high", x, w, b, 2))
    own = [n for n in names if "wgmma_conv_min_softmax_kernel" in n and re.search(r",\s*2,\s*true\s*>", n)]
    assert own, f"the own-items kernel did not run; launched: {names}"
    _check("high", misaligned_copy(x), w, b, 2)
    assert torch.equal(y, _run("high", x, w, b, 2)[0])  # run to run


@pytest.mark.skipif(not WGMMA_DEVICE, reason="needs a compute capability 9.0 GPU")
@pytest.mark.skipif(not hasattr(torch.ops.fusedconv, "backward"), reason="no backward op")
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
@pytest.mark.parametrize("waves, c_out, h",
                         [(1.9, 20, 30), (2.2, 20, 30), (1.9, 29, 30), (1.55, 20, 31), (2.5, 64, 30),
                          (6.5, 20, 30)])
def test_persistent_ctas_track_the_argmin(waves, c_out, h, mode):
    """The backward recomputes each column's argmin with the fused forward: persistent CTAs
    (several items each) must find the same argmins as one CTA per item. At 2.2 waves (C_out
    = 20) and 1.9 (C_out = 29) the forward alone takes the lean kernels, which have no argmin;
    the recompute must not. At H = 31 and 1.55 waves "highest" recomputes on 2 x 32 tiles
    (3xTF32's kept kernel; test_wide_tiles_on_persistent_grids). At C_out = 64 it recomputes
    on persistent channel clusters (two groups of N = 32). At 6.5 waves (6 rounds or more) the
    CTAs claim their items (claim_rule.h).
    (Too many columns for a float64 comparison without near-ties; test_argmin_through_backward
    does that.)"""
    dtype = MODES[mode][0]
    tiles = 14 if h == 30 else 16
    x, w, b = make_inputs((persistent_batch(waves, tiles), 3, c_out, 9, h, 32, 3, 3, 3), dtype=dtype, device="cuda")
    grads = []
    for x_in in (x, misaligned_copy(x)):
        with float32_precision(_precision(mode)):
            y = torch.ops.fusedconv.forward(x_in, w, b, 2)
            grad_y = torch.randn(y.shape, device="cuda", generator=torch.Generator("cuda").manual_seed(5))
            grads.append(torch.ops.fusedconv.backward(grad_y, y, x_in, w, b, 2, [True, True, True]))
    for tma, cp_async in zip(*grads):
        assert torch.equal(tma, cp_async) or (tma - cp_async).abs().max() <= 1e-5 * tma.abs().max()


# C_out = 56: two channel groups on the wgmma kernel, whose softmax max and sum combine
# across CTAs (a NaN or +inf in one group must reach the other's outputs).
@pytest.mark.parametrize("c_out", [24, 56])
@pytest.mark.parametrize("mode", ["highest", "high"])
@pytest.mark.parametrize("dim", [2, 4])
def test_nan_and_inf_follow_eager(mode, dim, c_out):
    x, w, b = make_inputs((2, 3, c_out, 9, 10, 11, 3, 3, 3), device="cuda")
    _check_nan_and_inf(mode, x, w, b, dim)


@pytest.mark.parametrize("c_out", [24, 56])
@pytest.mark.parametrize("mode", ["highest", "high", "bf16"])
def test_infinite_bias_follows_eager(mode, c_out):
    # The inference fold adds a finite bias once after the min; an infinite one must still
    # meet every plane's conv value (a +inf conv plus a -inf bias is NaN in that plane, and
    # the min is then NaN, as in eager; adding it after the min would give -inf).
    dtype = MODES[mode][0]
    x, w, b = make_inputs((2, 3, c_out, 9, 10, 11, 3, 3, 3), device="cuda", dtype=dtype)
    x[0, 1, 4, 5, 6] = float("inf")
    x[1, 0, 2, 3, 3] = float("-inf")
    b[0], b[17] = float("-inf"), float("-inf")  # (+inf would make every softmax NaN)
    y, path = _run(mode, x, w, b, 2)
    assert path == _expected_path(mode, w, 2)
    expected = reference(x.cpu(), w.cpu(), b.cpu(), 2)
    assert torch.isnan(expected).any() and not torch.isnan(expected).all()
    err = assert_nonfinite_match(y, expected)
    assert err <= MODES[mode][2] * 10


@pytest.mark.parametrize("c_out", [24, 64])  # 64: the softmax sum combines two CTAs' parts
def test_deterministic_and_graph_safe(c_out):
    x, w, b = make_inputs((4, 3, c_out, 10, 17, 15, 3, 3, 3), device="cuda")
    first, _ = _run("highest", x, w, b, 2)
    again, _ = _run("highest", x, w, b, 2)
    assert torch.equal(first, again)  # bitwise: fixed reduction order (item claims pick only the CTA)

    fresh, _, _ = make_inputs((4, 3, c_out, 10, 17, 15, 3, 3, 3), device="cuda")
    assert torch.equal(graph_replay(x, w, b, 2, fresh), torch.ops.fusedconv.forward(fresh, w, b, 2))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_second_device():
    x, w, b = make_inputs((2, 3, 24, 7, 9, 8, 3, 3, 3), device="cuda:1")
    y, _ = _run("highest", x, w, b, 2)
    assert y.device == x.device
    assert rel_err(y, reference(x, w, b, 2)) <= 1e-5


@pytest.mark.parametrize(
    "case",
    ["float64", "c_out_257", "weight_too_big_for_smem"],
)
def test_composite_fallback(case):
    shape = {
        "float64": (2, 3, 24, 6, 7, 8, 3, 3, 3),
        "c_out_257": (1, 3, 257, 5, 6, 7, 3, 3, 3),
        "weight_too_big_for_smem": (1, 64, 128, 6, 7, 8, 5, 5, 5),
    }[case]
    dtype = torch.float64 if case == "float64" else torch.float32
    x, w, b = make_inputs(shape, dtype=dtype, device="cuda")
    with float32_precision("highest"):
        assert torch.ops.fusedconv.kernel_path(x, w, b, 2) == "cuda-composite"
        y = torch.ops.fusedconv.forward(x, w, b, 2)
    expected = reference(x, w, b, 2)
    if dtype == torch.float64:
        assert rel_err(y, expected) <= 1e-12
    else:
        # "highest" must hold on the composite too: it runs cuDNN with TF32 off.
        fp32_eager = eager(x, w, b, 2)
        assert rel_err(y, expected) <= max(1e-5, 2 * rel_err(fp32_eager, expected))


def test_empty_batch():
    x, w, b = make_inputs((0, 3, 4, 5, 6, 7, 3, 3, 3), device="cuda")
    assert torch.ops.fusedconv.forward(x, w, b, 3).shape == (0, 4, 3, 5)


@pytest.mark.skipif(not hasattr(torch.ops.fusedconv, "backward"), reason="no backward op")
@pytest.mark.parametrize(
    "shape", [(2, 3, 24, 9, 10, 11, 3, 3, 3), (1, 3, 70, 9, 10, 11, 3, 3, 3), (2, 3, 24, 9, 10, 12, 3, 3, 3)]
)
def test_argmin_through_backward(shape):
    """The backward pass reads the fused kernel's argmin: its gradients must match eager.
    (C_out = 70: three channel groups, each with an R split, on the wgmma kernel; W = 12: the
    planes by TMA along dims 2 and 3.) Float32
    against float64: inputs without near-ties, which float32 error could flip."""
    x, w, b = make_inputs_without_near_ties(shape, (2, 3, 4), gap=1e-5, device="cuda")
    for dim in (2, 3, 4):
        with float32_precision("highest"):
            assert torch.ops.fusedconv.kernel_path(x, w, b, dim) == _expected_path("highest", w, dim)
            xs = [t.clone().requires_grad_() for t in (x, w, b)]
            y = torch.ops.fusedconv.forward(*xs, dim)
            g = torch.randn_like(y)
            grads = torch.autograd.grad(y, xs, g)
        xr = [t.double().clone().requires_grad_() for t in (x, w, b)]
        expected = torch.autograd.grad(reference(*xr, dim), xr, g.double())
        for got, want in zip(grads, expected):
            assert rel_err(got, want) <= 1e-4


@pytest.mark.skipif(
    not torch.cuda.is_available()
    or torch.cuda.get_device_properties(0).total_memory < 40 * 2**30,
    reason="needs a GPU with 40 GB",
)
def test_input_over_2_pow_31_elements():
    """64-bit offsets: x has 2^32 elements; check the last output rows of the last batch."""
    x = torch.randn(2, 1, 4, 2**14, 2**15, device="cuda", dtype=torch.float16)
    assert x.numel() > 2**31
    w = torch.randn(2, 1, 3, 3, 3, device="cuda", dtype=torch.float16) / 5
    y, path = _run("fp16", x, w, None, 2)
    assert path == _expected_path("fp16", w, 2)
    corner = reference(x[1:, :, :, -6:, -9:], w, None, 2)  # (1, 2, 4, 7)
    assert rel_err(y[1:, :, -4:, -7:], corner) <= 1e-2
    del x, y
    torch.cuda.empty_cache()
