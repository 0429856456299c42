"""Persistent channel clusters (v43) for compute-sanitizer, beside sanitize_case.py (whose
racecheck nears its 200 s limit alone): C_out = 56 on 1600 items, three rounds of the lean
kernels' 4 per SM; C_in = 16, C_out = 50 (K = 144: 16-bit chunks of 3 k-steps) on 520 items,
two rounds of 3 per SM. Every mode, autocast in TF32's run."""
import torch

import fusedconv  # noqa: F401

torch.manual_seed(0)
for x_shape, w_shape in (((800, 2, 4, 6, 8), (56, 2, 3, 3, 3)), ((260, 16, 4, 6, 8), (50, 16, 3, 3, 3))):
    for dtype, prec in ((torch.float32, "highest"), (torch.float32, "high"), (torch.bfloat16, "highest")):
        torch.set_float32_matmul_precision(prec)
        x = torch.randn(x_shape, device="cuda", dtype=dtype)
        wt = torch.randn(w_shape, device="cuda", dtype=dtype)
        b = torch.randn(w_shape[0], device="cuda", dtype=dtype)
        y = torch.ops.fusedconv.forward(x, wt, b, 2)
        path = torch.ops.fusedconv.kernel_path(x, wt, b, 2)
        if prec == "high":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                torch.ops.fusedconv.forward(x, wt, b, 2)
                path += " | autocast " + torch.ops.fusedconv.kernel_path(x, wt, b, 2)
        torch.cuda.synchronize()
        print(x_shape, dtype, prec, path, tuple(y.shape), flush=True)
print("sanitize_clusters: done")
