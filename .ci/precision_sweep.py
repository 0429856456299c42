"""The "highest" (3xTF32) error against the reduction length K, over many fresh seeds.

Why: the bound is rel err <= 1e-5 vs float64, and one GPU test at K = 250 measured 1.010e-5
(BENCHMARKS.md, v21). This prints, per shape and distribution, the kernel path, the largest
and median error of the op and of float32 eager (cuDNN TF32 off), and how many seeds
broke the bound, so that a change to the 3xTF32 accumulation or to kMax3xTF32Reduction*
(cpp/cuda/forward_cuda.cpp) can be judged on numbers.

    python .ci/precision_sweep.py [--seeds 40] [--device cuda]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import eager, float32_precision, make_inputs, reference, rel_err  # noqa: E402

import fusedconv  # noqa: E402,F401

# (B, C_in, C_out, D, H, W, kD, kH, kW, dim): K = C_in*kD*kH*kW from 27 to 500, on the wgmma
# kernel (k = 3 along dim: K in one chunk where it fits; k = 5: in chunks; "highest" takes
# K <= 512 there) and on the mma.sync kernel (k = 6 along dim; K <= 256).
SHAPES = [
    (2, 1, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 3, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 5, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 7, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 9, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 9, 64, 9, 13, 17, 3, 3, 3, 2),
    (2, 12, 24, 9, 13, 17, 3, 3, 3, 2),
    (2, 3, 24, 9, 13, 17, 5, 5, 5, 2),
    (2, 16, 24, 9, 13, 17, 3, 3, 3, 3),
    (2, 4, 24, 9, 13, 17, 5, 5, 5, 2),
    (2, 16, 64, 9, 13, 17, 3, 3, 3, 2),
    (1, 1, 29, 6, 7, 35, 5, 5, 5, 3),
    (1, 2, 29, 6, 7, 35, 5, 5, 5, 3),
    (1, 2, 29, 6, 7, 35, 5, 5, 5, 2),
    (1, 2, 29, 8, 7, 35, 6, 4, 5, 2),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--bound", type=float, default=1e-5)
    args = parser.parse_args()
    print(f"device {args.device}, {args.seeds} seeds per row, bound {args.bound:.0e}")
    print(f"| {'shape':28} | {'dist':5} | {'K':>3} | {'path':22} | {'max':>9} | {'median':>9} | "
          f"{'over':>4} | {'eager max':>9} |")
    for *shape, dim in SHAPES:
        k = shape[1] * shape[6] * shape[7] * shape[8]
        for dist in ("randn", "rand"):
            errs, eager_errs, path = [], [], ""
            for seed in range(args.seeds):
                x, w, b = make_inputs(tuple(shape), dist=dist, device=args.device, seed=seed)
                with float32_precision("highest"):
                    path = torch.ops.fusedconv.kernel_path(x, w, b, dim)
                    y = torch.ops.fusedconv.forward(x, w, b, dim)
                expected = reference(x, w, b, dim)
                errs.append(rel_err(y, expected))
                eager_errs.append(rel_err(eager(x, w, b, dim), expected))
            errs.sort()
            median = errs[len(errs) // 2]
            over = sum(e > args.bound for e in errs)
            name = "x".join(map(str, shape)) + f" d{dim}"
            print(f"| {name:28} | {dist:5} | {k:3} | {path:22} | {errs[-1]:9.3e} | {median:9.3e} | "
                  f"{over:4} | {max(eager_errs):9.3e} |", flush=True)


if __name__ == "__main__":
    main()
