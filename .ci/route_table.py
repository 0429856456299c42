"""The fused op against the composite's math, shape by shape, in one precision mode (device
experiment).

Why: the fused route is chosen by fit and accuracy alone. On one C_out = 128, k = 5 shape the
mma.sync 3xTF32 kernel ("highest") took 2363 µs where the composite's math took 1853
(BENCHMARKS.md, v22). This prints, per shape, the kernel path, the op's median µs, the
composite's (eager conv3d + min + softmax in the same precision: cuDNN with TF32 off for
"highest", on for "high"; bf16 tensors for bf16) and their ratio: the table a cost rule
between the two is fitted to.

    python .ci/route_table.py [--mode highest|high|bf16] [--dim 2] [--iters 30]
"""
from __future__ import annotations

import argparse

import torch

import fusedconv  # noqa: F401  (loads the op library)
from fusedconv.bench import make_buffers, time_gpu

# (B, C_in, C_out, D, H, W, k), cubic kernels of 1, 3 and 5 (the wgmma kernel where it fits;
# until v23, k = 5 took the mma.sync kernel); K = C_in * k^3 from 16 to 648 (3xTF32 takes
# K <= 512 on the wgmma kernel, <= 256 on the mma.sync one).
SHAPES = [
    (64, 1, 24, 24, 32, 32, 5),
    (64, 1, 64, 24, 32, 32, 5),
    (64, 1, 128, 24, 32, 32, 5),
    (32, 2, 24, 20, 32, 32, 5),
    (32, 2, 64, 20, 32, 32, 5),
    (32, 2, 128, 20, 32, 32, 5),
    (8, 2, 128, 20, 32, 32, 5),
    (16, 4, 128, 20, 32, 32, 5),
    (128, 3, 24, 24, 32, 32, 3),
    (128, 3, 64, 24, 32, 32, 3),
    (128, 3, 128, 24, 32, 32, 3),
    (64, 9, 24, 24, 32, 32, 3),
    (64, 9, 64, 24, 32, 32, 3),
    (64, 9, 128, 24, 32, 32, 3),
    (16, 16, 64, 16, 64, 64, 3),
    (64, 16, 16, 16, 32, 32, 1),
    (64, 12, 24, 24, 32, 32, 3),
    (64, 3, 24, 24, 32, 32, 5),
    (16, 16, 32, 16, 64, 64, 3),
    (32, 4, 24, 20, 32, 32, 5),
    (32, 24, 24, 16, 32, 32, 3),
]
MODES = {"highest": (torch.float32, "highest"), "high": (torch.float32, "high"),
         "bf16": (torch.bfloat16, "highest")}


def composite_math(x, w, b, dim):
    return torch.softmax(torch.nn.functional.conv3d(x, w, b).min(dim=dim).values, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--dim", type=int, default=2, choices=[2, 3, 4])
    parser.add_argument("--mode", default="highest", choices=sorted(MODES))
    args = parser.parse_args()
    dtype, precision = MODES[args.mode]
    print(f"{torch.cuda.get_device_name()}, mode {args.mode}, dim {args.dim}, "
          f"median of {args.iters} over 4 inputs")
    print(f"| {'shape':24} | {'path':24} | {'op µs':>9} | {'composite µs':>12} | {'op / comp':>9} |")
    allow_tf32 = torch.backends.cudnn.allow_tf32
    old_precision = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision(precision)
        torch.backends.cudnn.allow_tf32 = args.mode != "highest"
        for shape in SHAPES:
            inputs = [(x, w, b, args.dim) for x, w, b in make_buffers(shape, dtype, "cuda", 4)]
            path = torch.ops.fusedconv.kernel_path(*inputs[0])
            op_us = time_gpu(torch.ops.fusedconv.forward, inputs, args.iters)
            comp_us = time_gpu(composite_math, inputs, args.iters)
            name = ",".join(map(str, shape))
            print(f"| {name:24} | {path:24} | {op_us:9.1f} | {comp_us:12.1f} | {op_us / comp_us:9.2f} |",
                  flush=True)
            del inputs
    finally:
        torch.backends.cudnn.allow_tf32 = allow_tf32
        torch.set_float32_matmul_precision(old_precision)


if __name__ == "__main__":
    main()
