"""Tiny odd-shaped runs of every fused path, for compute-sanitizer (memcheck, racecheck).
    python .ci/sanitize_case.py            # the tiny cases and the large grids
    python .ci/sanitize_case.py clusters   # the persistent channel clusters and K = 144 alone
                                           # (v43: their own run, as the default's racecheck
                                           # nears 200 s)
    python .ci/sanitize_case.py shifted    # the shifted-plane kernel alone (also in the default)
"""
import sys

import torch

import fusedconv  # noqa: F401

torch.manual_seed(0)
modes = ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "highest"))
cases = [  # (B, C_in, C_out, D, H, W, kD, kH, kW)
    (2, 3, 5, 5, 7, 9, 3, 2, 3),
    (1, 2, 37, 4, 5, 19, 2, 3, 1),  # wgmma: two channel groups, R split
    (1, 9, 40, 5, 6, 18, 3, 3, 3),  # wgmma: K = 81 in pairs of chunks, two channel groups
    (1, 2, 30, 11, 6, 19, 5, 4, 3),  # wgmma k_r = 5 (dim 2), R split; mma.sync k_r = 4 (dim 3)
    (1, 16, 50, 5, 6, 9, 3, 3, 3),  # "highest" K = 432: wgmma without the R split that would not fit
    (2, 3, 24, 6, 34, 130, 3, 3, 3),  # dim 2: 128 tiles (an H200 has 132 SMs): R split in two, two per SM
    (2, 3, 24, 6, 11, 24, 3, 3, 3),  # dim 2: the TMA kernels (W = 24: 16-byte rows)
]


def autocast_path(x, wt, b, dim):
    """Runs the autocast kernel (float32 data, bfloat16 operands); returns its path."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        torch.ops.fusedconv.forward(x, wt, b, dim)
        return torch.ops.fusedconv.kernel_path(x, wt, b, dim)



def run_tiny_cases():
    for shape in cases:
        bsz, cin, cout, d, h, w, kd, kh, kw = shape
        for dtype, prec in modes:
            torch.set_float32_matmul_precision(prec)
            x = torch.randn(bsz, cin, d, h, w, device="cuda", dtype=dtype)
            wt = torch.randn(cout, cin, kd, kh, kw, device="cuda", dtype=dtype)
            b = torch.randn(cout, device="cuda", dtype=dtype)
            for dim in (2, 3, 4):
                path = torch.ops.fusedconv.kernel_path(x, wt, b, dim)
                y = torch.ops.fusedconv.forward(x, wt, b, dim)
                if hasattr(torch.ops.fusedconv, "backward") and dtype == torch.float32:
                    xs = [t.clone().requires_grad_() for t in (x, wt, b)]
                    torch.ops.fusedconv.forward(*xs, dim).sum().backward()
                if dtype == torch.float32 and prec == "high":
                    path += " | autocast " + autocast_path(x, wt, b, dim)
                torch.cuda.synchronize()
                print(shape, dtype, prec, dim, path, tuple(y.shape), flush=True)


# Large grids, with the argmin (backward) too: TF32 where the retiring kernel takes fewer
# waves than the other at their CTAs per SM (an H200: 421 CTAs, 3 vs 4 per SM; k_r = 5: 300
# CTAs, 2 vs 3); 600 TMA work items (W = 8: 16-byte rows), more than one wave, so persistent
# CTAs that take several items each, in every mode (the forward, autocast too, on the lean
# kernels at 5 per SM; the backward's recompute on the argmin ones). The lean kernels at
# N = 32 (4 per SM): 450 items, persistent (C_out = 29), and 500 CTAs in clusters of two
# channel groups (C_out = 56), one wave where the kept kernels need two. 3xTF32's lean kernel
# (N = 32, 3 per SM): 800 items, three rounds where its kept kernel takes four. 2 x 32 tiles
# (a 5 x 22 plane: 3 of them against 4 of 4 x 16; tile_rule.h): the lean kernels at N = 24 and
# 32 and 3xTF32's kept one (with its argmin, in the backward) on 1200 items.
# (The last column: also under autocast, in TF32's run.)
large_grids = (
        ((421, 2, 4, 6, 7), (21, 2, 3, 3, 3), (2, 4), modes[1:2], False),
        ((300, 2, 6, 6, 7), (21, 2, 5, 3, 3), (2,), modes[1:2], False),
        ((600, 2, 4, 6, 8), (21, 2, 3, 3, 3), (2,), modes, True),
        ((450, 2, 4, 6, 8), (29, 2, 3, 3, 3), (2,), modes[1:], True),
        ((250, 2, 4, 6, 8), (56, 2, 3, 3, 3), (2,), modes[1:], True),
        ((800, 2, 4, 6, 8), (29, 2, 3, 3, 3), (2,), modes[:1], False),
        ((400, 2, 4, 7, 24), (20, 2, 3, 3, 3), (2,), modes, True),
        ((400, 2, 4, 7, 24), (29, 2, 3, 3, 3), (2,), modes[1:], True))
# Persistent channel clusters (v43): C_out = 56 on 1600 items, three rounds of the lean
# kernels' 4 per SM; C_in = 16, C_out = 50 (K = 144: 16-bit chunks of 3 k-steps, TF32's of 9
# since v44) on 522 items, two rounds of 3 per SM (TF32: 2). K = 144 at N = 24 (C_out = 20,
# 16-bit chunks of 3 k-steps since v44) on 600 items, two rounds of 4 per SM. K = 72 in
# "highest" (3xTF32 by TMA, chunks of 3 k-steps since v44: 2 CTAs per SM) on 600 items.
# C_out 49..64 with K in chunks takes one channel group of N = 64 (16-bit operands since v45,
# TF32 in two warpgroups since v46): C_out = 50 at K = 144 in TF32, bfloat16 and under
# autocast, and C_out = 64 at K = 36 in TF32 and bfloat16 with the backward (its recompute
# writes the argmin) on 300 items. TF32 there (C_out <= 64) runs each warpgroup on its own
# items since v49: 261 items on 131 CTAs (the last one's second warpgroup has none), and 300
# on a persistent wave of 132 (some warpgroups take two).
# C_out 97..128 takes clusters of two such groups (v47), 161..192 of three (v48): C_out = 100
# and 170 at K = 144 in TF32 and bfloat16 with the backward, 280 and 240 CTAs (TF32:
# persistent clusters at one CTA per SM).
# (A sixth column, True: 16-bit inputs run the backward too.)
cluster_grids = (
        ((800, 2, 4, 6, 8), (56, 2, 3, 3, 3), (2,), modes, True),
        ((261, 16, 4, 6, 8), (50, 16, 3, 3, 3), (2,), modes, True),
        ((600, 16, 4, 6, 8), (20, 16, 3, 3, 3), (2,), modes, True),
        ((600, 8, 4, 6, 8), (30, 8, 3, 3, 3), (2,), modes[:1], False),
        ((300, 4, 4, 6, 8), (64, 4, 3, 3, 3), (2,), modes[1:], False, True),
        ((140, 16, 4, 6, 8), (100, 16, 3, 3, 3), (2,), modes[1:], False, True),
        ((80, 16, 4, 6, 8), (170, 16, 3, 3, 3), (2,), modes[1:], False, True))


def run_grids(grids):
    for x_shape, w_shape, dims, grid_modes, autocast, *grad16 in grids:
        for dtype, prec in grid_modes:
            torch.set_float32_matmul_precision(prec)
            x = torch.randn(x_shape, device="cuda", dtype=dtype)
            wt = torch.randn(w_shape, device="cuda", dtype=dtype)
            b = torch.randn(w_shape[0], device="cuda", dtype=dtype)
            backward = dtype == torch.float32 or grad16 == [True]
            for dim in dims:
                xs = [t.clone().requires_grad_(backward) for t in (x, wt, b)]
                y = torch.ops.fusedconv.forward(*xs, dim)
                if backward:
                    y.sum().backward()
                path = torch.ops.fusedconv.kernel_path(x, wt, b, dim)
                if autocast and dtype == torch.float32 and prec == "high":
                    path += " | autocast " + autocast_path(x, wt, b, dim)
                torch.cuda.synchronize()
                print("large grid", x_shape, dtype, prec, dim, path, flush=True)


# The shifted-plane kernel (16-bit operands and TF32, C_in = 16, C_out 1 / 17 / 33..64, W 49..64,
# an item per warpgroup; clusters of 2 share the weights' prologue): one output plane at W = 49 on
# 280 items (persistent: up to 2 per warpgroup, the last pair of each plane one row), C_out =
# 49 at W = 64 (the ring's whole pitch) over two planes, C_out = 33 on 299 items (a CTA whose
# warpgroups take 2 and 1 items: ping-pong past the other's last plane), C_out = 17 (16-bit
# only) on 135 items (68 CTAs: a cluster's second CTA with one item), and C_out = 5 (autocast
# only: a cluster's second CTA copies no weights, it writes zeros) on 135 items; bf16 data,
# float32 data under autocast (its prologue converts the weights) and TF32.
def run_shifted():
    for bsz, cout, d, h, w in ((70, 64, 3, 9, 49), (9, 49, 4, 61, 64), (23, 33, 4, 27, 57), (15, 17, 3, 19, 50),
                               (27, 5, 3, 11, 52)):
        x = torch.randn(bsz, 16, d, h, w, device="cuda")
        wt = torch.randn(cout, 16, 3, 3, 3, device="cuda")
        b = torch.randn(cout, device="cuda")
        y = torch.ops.fusedconv.forward(x.bfloat16(), wt.bfloat16(), b.bfloat16(), 2)
        path = torch.ops.fusedconv.kernel_path(x.bfloat16(), wt.bfloat16(), b.bfloat16(), 2)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y_autocast = torch.ops.fusedconv.forward(x, wt, b, 2)
            path_autocast = torch.ops.fusedconv.kernel_path(x, wt, b, 2)
        torch.set_float32_matmul_precision("high")  # TF32
        y_tf32 = torch.ops.fusedconv.forward(x, wt, b, 2)
        path_tf32 = torch.ops.fusedconv.kernel_path(x, wt, b, 2)
        torch.set_float32_matmul_precision("highest")
        torch.cuda.synchronize()
        print("shifted", tuple(x.shape), cout, path, tuple(y.shape), path_autocast, y_autocast.dtype, path_tf32,
              tuple(y_tf32.shape), flush=True)

if sys.argv[1:] == ["clusters"]:
    run_grids(cluster_grids)
elif sys.argv[1:] == ["shifted"]:
    run_shifted()
else:
    run_tiny_cases()
    run_shifted()
    run_grids(large_grids)
print("sanitize_case: done")
