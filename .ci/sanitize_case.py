"""Tiny odd-shaped runs of every fused path, for compute-sanitizer (memcheck, racecheck)."""
import torch

import fusedconv  # noqa: F401

torch.manual_seed(0)
cases = [  # (B, C_in, C_out, D, H, W, kD, kH, kW)
    (2, 3, 5, 5, 7, 9, 3, 2, 3),
    (1, 2, 37, 4, 5, 19, 2, 3, 1),  # wgmma: two channel groups, R split
    (1, 9, 40, 5, 6, 18, 3, 3, 3),  # wgmma: K = 81 in pairs of chunks, two channel groups
    (1, 2, 30, 11, 6, 19, 5, 4, 3),  # wgmma k_r = 5 (dim 2), R split; mma.sync k_r = 4 (dim 3)
    (1, 16, 50, 5, 6, 9, 3, 3, 3),  # "highest" K = 432: wgmma without the R split that would not fit
    (2, 3, 24, 6, 34, 130, 3, 3, 3),  # dim 2: 128 tiles (an H200 has 132 SMs): R split in two, two per SM
]
for shape in cases:
    bsz, cin, cout, d, h, w, kd, kh, kw = shape
    for dtype, prec in ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "highest")):
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
            if dtype == torch.float32 and prec == "high":  # the autocast kernel (float32 data)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    path += " | autocast " + torch.ops.fusedconv.kernel_path(x, wt, b, dim)
                    torch.ops.fusedconv.forward(x, wt, b, dim)
            torch.cuda.synchronize()
            print(shape, dtype, prec, dim, path, tuple(y.shape), flush=True)
# TF32 on grids with more waves at the other kernel's CTAs per SM than at the retiring one's
# (an H200: 421 CTAs, 3 vs 4 per SM; k_r = 5: 300 CTAs, 2 vs 3): the kernel that retires each
# plane in its step, with the argmin (backward) too.
torch.set_float32_matmul_precision("high")
for x_shape, w_shape, dims in (((421, 2, 4, 6, 7), (21, 2, 3, 3, 3), (2, 4)),
                               ((300, 2, 6, 6, 7), (21, 2, 5, 3, 3), (2,))):
    x = torch.randn(x_shape, device="cuda")
    wt = torch.randn(w_shape, device="cuda")
    b = torch.randn(w_shape[0], device="cuda")
    for dim in dims:
        xs = [t.clone().requires_grad_() for t in (x, wt, b)]
        torch.ops.fusedconv.forward(*xs, dim).sum().backward()
        torch.cuda.synchronize()
        print("large grid", x_shape, dim, torch.ops.fusedconv.kernel_path(x, wt, b, dim), flush=True)
# Inputs the TMA kernels take (W = 24 and 8: 16-byte rows), with one CTA per work item and
# (600 items, more than one wave) persistent CTAs that take several items each; the argmin too.
for x_shape, w_shape in (((2, 3, 6, 11, 24), (24, 3, 3, 3, 3)), ((600, 2, 4, 6, 8), (21, 2, 3, 3, 3))):
    for dtype, prec in ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "highest")):
        torch.set_float32_matmul_precision(prec)
        x = torch.randn(x_shape, device="cuda", dtype=dtype)
        wt = torch.randn(w_shape, device="cuda", dtype=dtype)
        b = torch.randn(w_shape[0], device="cuda", dtype=dtype)
        xs = [t.clone().requires_grad_(dtype == torch.float32) for t in (x, wt, b)]
        y = torch.ops.fusedconv.forward(*xs, 2)
        if dtype == torch.float32:
            y.sum().backward()
        torch.cuda.synchronize()
        print("tma", x_shape, dtype, prec, torch.ops.fusedconv.kernel_path(x, wt, b, 2), flush=True)
print("sanitize_case: done")
