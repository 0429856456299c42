"""``python -m fusedconv``: run the reference workload, check it against eager PyTorch, time both.

Prints the problem, the implementation that ran, the check (max abs error and allclose vs
eager, relative error vs a float64 reference), the median time of eager PyTorch and of the
fused op, and the speedup. Exits 1 when the check fails, 2 on a usage error.
Progress goes to stderr, results to stdout. For tables over modes and batch sizes use
``python -m fusedconv.bench``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

import fusedconv
from fusedconv._reference import eager_forward, float64_reference, rel_err

REFERENCE_SHAPE = (128, 3, 24, 24, 32, 32, 3)  # B, C_in, C_out, D, H, W, k
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def _tolerance(dtype: torch.dtype, precision: str) -> tuple:
    """(allclose atol/rtol vs eager, max relative error vs float64), per DESIGN.md section 2."""
    if dtype == torch.float64:
        return 1e-10, 1e-10
    if dtype == torch.float32:
        return (1e-4, 1e-5) if precision == "highest" else (2e-3, 2e-3)
    return 1e-2, 1e-2


def _parse_shape(text: str) -> tuple:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (7, 9) or min(values) < 0:
        raise argparse.ArgumentTypeError(
            f"--shape wants B,C_in,C_out,D,H,W,k or B,C_in,C_out,D,H,W,kD,kH,kW "
            f"(non-negative integers), got {text!r}"
        )
    return values


def _parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fusedconv",
        description="Run softmax(min(conv3d(x), dim), dim=1) fused and in eager PyTorch; "
        "check the result and compare the times.",
    )
    parser.add_argument(
        "--shape",
        type=_parse_shape,
        default=REFERENCE_SHAPE,
        metavar="B,Cin,Cout,D,H,W,k",
        help="problem size; k may also be kD,kH,kW (default: 128,3,24,24,32,32,3)",
    )
    parser.add_argument("--dim", type=int, default=2, help="min axis of the conv output: 2, 3 or 4 (default 2)")
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when present, else cpu)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument(
        "--precision",
        choices=("highest", "high", "medium"),
        default="highest",
        help="torch.set_float32_matmul_precision for float32 (default highest: fp32-accurate)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed runs (default: 50 on CUDA, 5 on CPU)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed runs first (default: 10 on CUDA, 1 on CPU)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-fp64-check", action="store_true", help="skip the relative-error check against float64"
    )
    return parser.parse_args(argv)


class _Progress:
    """One stderr line per phase, and at most one per second inside a long phase."""

    def __init__(self) -> None:
        self._last = 0.0

    def phase(self, text: str) -> None:
        print(f"[fusedconv] {text}", file=sys.stderr, flush=True)
        self._last = time.perf_counter()

    def step(self, name: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self._last >= 1.0 or done == total:
            print(f"[fusedconv]   {name}: {done}/{total}", file=sys.stderr, flush=True)
            self._last = now


def _time(fn, inputs, device, warmup, repeats, progress, name) -> list:
    """Seconds per call of fn(x) over rotating inputs: CUDA events on GPU, perf_counter on CPU."""
    progress.phase(f"timing {name}: {warmup} warm-up + {repeats} timed runs")
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    times = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for i, (start, end) in enumerate(events):
            start.record()
            fn(inputs[i % len(inputs)])
            end.record()
            if (i + 1) % 10 == 0 or i + 1 == repeats:
                progress.step(name, i + 1, repeats)
        torch.cuda.synchronize(device)
        times = [start.elapsed_time(end) / 1e3 for start, end in events]
    else:
        for i in range(repeats):
            start = time.perf_counter()
            fn(inputs[i % len(inputs)])
            times.append(time.perf_counter() - start)
            progress.step(name, i + 1, repeats)
    return times


def _fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _pick_device(name):
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("python -m fusedconv: --device cuda was asked for but no CUDA GPU is available")
    return device


def main(argv=None) -> int:
    """Entry point of ``python -m fusedconv`` and the ``fusedconv`` console script."""
    args = _parse_args(argv)
    device = _pick_device(args.device)
    dtype = DTYPES[args.dtype]
    if device.type == "cuda" and not fusedconv.cuda_kernels_built():
        print(
            "python -m fusedconv: this fusedconv build has no CUDA kernels (built without nvcc); "
            "reinstall with nvcc on PATH or use --device cpu",
            file=sys.stderr,
        )
        return 2
    torch.set_float32_matmul_precision(args.precision)
    # Eager runs in the same precision regime as the fused op: cuDNN convolutions use TF32
    # only when float32 matmul precision allows it.
    torch.backends.cudnn.allow_tf32 = args.precision != "highest"
    repeats = args.repeats if args.repeats is not None else (50 if device.type == "cuda" else 5)
    warmup = args.warmup if args.warmup is not None else (10 if device.type == "cuda" else 1)
    if repeats < 1 or warmup < 0:
        print("python -m fusedconv: --repeats must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2

    shape = args.shape
    batch, c_in, c_out, depth, height, width = shape[:6]
    kernel = shape[6:] if len(shape) == 9 else (shape[6],) * 3
    progress = _Progress()
    progress.phase("preparing inputs")
    torch.manual_seed(args.seed)
    conv = torch.nn.Conv3d(c_in, c_out, kernel)  # the weights a KernelBench Model would get
    weight = conv.weight.detach().to(device, dtype)
    bias = conv.bias.detach().to(device, dtype)
    # Rotating input buffers on the GPU so that timings do not all hit a warm L2.
    n_inputs = 4 if device.type == "cuda" else 1
    inputs = [torch.rand(batch, c_in, depth, height, width, device=device, dtype=dtype) for _ in range(n_inputs)]
    x = inputs[0]

    def fused(t):
        return fusedconv.conv3d_min_softmax(t, weight, bias, args.dim)

    def eager(t):
        return eager_forward(t, weight, bias, args.dim)

    try:
        path = fusedconv.kernel_path(x, weight, bias, args.dim)
    except RuntimeError as err:
        print(f"python -m fusedconv: {err}".splitlines()[0], file=sys.stderr)
        return 2

    if device.type == "cuda":
        device_name = torch.cuda.get_device_name(device)
    else:
        device_name = f"cpu, {torch.get_num_threads()} threads"
    print(f"fusedconv {fusedconv.__version__} | torch {torch.__version__} | device {device} ({device_name})")
    print(
        f"problem: B={batch} C_in={c_in} C_out={c_out} D={depth} H={height} W={width} "
        f"k={'x'.join(map(str, kernel))} dim={args.dim} dtype={args.dtype} precision={args.precision}"
    )
    print(f"fused implementation: {path}")

    atol, rel_limit = _tolerance(dtype, args.precision)
    with torch.no_grad():
        progress.phase("checking the fused result against eager")
        actual = fused(x)
        expected = eager(x)
        if actual.shape != expected.shape or actual.dtype != expected.dtype:
            print(f"check: FAIL: fused gave {tuple(actual.shape)} {actual.dtype}, eager "
                  f"{tuple(expected.shape)} {expected.dtype}")
            return 1
        diff = (actual.double() - expected.double()).abs()
        max_err = diff.max().item() if diff.numel() else 0.0
        close = torch.allclose(actual, expected, atol=atol, rtol=atol, equal_nan=True)
        print(f"check vs eager: max abs err {max_err:.3e}, allclose(atol={atol:g}, rtol={atol:g}) "
              f"{'PASS' if close else 'FAIL'}")
        ok = close
        if not args.no_fp64_check:
            progress.phase("computing the float64 reference")
            reference = float64_reference(x, weight, bias, args.dim)
            rel = rel_err(actual, reference)
            rel_ok = rel <= rel_limit
            print(f"check vs float64: rel err {rel:.3e} (limit {rel_limit:g}) {'PASS' if rel_ok else 'FAIL'}")
            ok = ok and rel_ok
            del reference
        del actual, expected, diff

        eager_times = _time(eager, inputs, device, warmup, repeats, progress, "eager")
        fused_times = _time(fused, inputs, device, warmup, repeats, progress, "fused")

    eager_median = statistics.median(eager_times)
    fused_median = statistics.median(fused_times)
    clock = "CUDA events" if device.type == "cuda" else "perf_counter"
    print(f"eager PyTorch: median {_fmt_time(eager_median)} over {repeats} runs ({clock})")
    print(f"fusedconv:     median {_fmt_time(fused_median)} over {repeats} runs ({clock})")
    speedup = eager_median / fused_median if fused_median > 0 else float("inf")
    print(f"speedup: {speedup:.2f}x | max abs err {max_err:.3e}")
    print(f"result: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
