""""highest" (3xTF32 kernel) against the composite's math, shape by shape (device experiment).

Why: the route for "highest" is chosen by accuracy alone (K <= 256 takes 3xTF32). On one
C_out = 128, k = 5 shape the mma.sync 3xTF32 kernel took 2363 µs where the composite's math
took 1853 (BENCHMARKS.md, v22). This prints, per shape, the kernel path, the op's median µs,
the composite's (eager conv3d with cuDNN's TF32 off, min, softmax: what the composite runs)
and their ratio, as the table a cost rule between the two would be fitted to.

    python .ci/highest_route_table.py [--iters 30]
"""
from __future__ import annotations

import argparse

import torch

import fusedconv  # noqa: F401  (loads the op library)
from fusedconv.bench import make_buffers, time_gpu

# (B, C_in, C_out, D, H, W, k): cubic kernels; k = 5 takes the mma.sync kernel, k = 3 the
# wgmma one where it fits. K = C_in * k^3 stays <= 256 (3xTF32's limit).
SHAPES = [
    (64, 1, 24, 24, 32, 32, 5),
    (64, 1, 64, 24, 32, 32, 5),
    (64, 1, 128, 24, 32, 32, 5),
    (32, 2, 24, 20, 32, 32, 5),
    (32, 2, 64, 20, 32, 32, 5),
    (32, 2, 128, 20, 32, 32, 5),
    (8, 2, 128, 20, 32, 32, 5),
    (128, 3, 24, 24, 32, 32, 3),
    (128, 3, 64, 24, 32, 32, 3),
    (64, 9, 24, 24, 32, 32, 3),
    (64, 9, 64, 24, 32, 32, 3),
    (64, 9, 128, 24, 32, 32, 3),
]


def composite_math(x, w, b, dim):
    return torch.softmax(torch.nn.functional.conv3d(x, w, b).min(dim=dim).values, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--dim", type=int, default=2, choices=[2, 3, 4])
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, dim {args.dim}, median of {args.iters} over 4 inputs")
    print(f"| {'shape':24} | {'path':22} | {'op µs':>9} | {'composite µs':>12} | {'op / comp':>9} |")
    allow_tf32 = torch.backends.cudnn.allow_tf32
    try:
        for shape in SHAPES:
            inputs = [(x, w, b, args.dim) for x, w, b in make_buffers(shape, torch.float32, "cuda", 4)]
            torch.set_float32_matmul_precision("highest")
            path = torch.ops.fusedconv.kernel_path(*inputs[0])
            op_us = time_gpu(torch.ops.fusedconv.forward, inputs, args.iters)
            torch.backends.cudnn.allow_tf32 = False
            comp_us = time_gpu(composite_math, inputs, args.iters)
            torch.backends.cudnn.allow_tf32 = allow_tf32
            name = ",".join(map(str, shape))
            print(f"| {name:24} | {path:22} | {op_us:9.1f} | {comp_us:12.1f} | {op_us / comp_us:9.2f} |",
                  flush=True)
    finally:
        torch.backends.cudnn.allow_tf32 = allow_tf32


if __name__ == "__main__":
    main()
