"""Forward + backward benchmark: eager autograd of the composite vs fusedconv.

``run_backward_bench(shape, dtype, device, repeats)`` returns rows
``(name, median_us, peak_MB)``:
- median_us: median over ``repeats`` timed steps (after warm-up) of one forward plus the
  backward for x, weight and bias, rotating over 4 input sets so that L2 does not keep
  them. CUDA: CUDA events around each step; CPU: time.perf_counter.
- peak_MB: on CUDA, torch.cuda.max_memory_allocated during one step minus what was
  allocated before it (the inputs and the incoming gradient), i.e. the step's own working
  memory; NaN on the CPU.
Used by ``python -m fusedconv.bench --backward``.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

import fusedconv  # noqa: F401  (registers torch.ops.fusedconv and its autograd)
from fusedconv._reference import eager_forward

_BUFFERS = 4


def _fused(x, w, b, dim):
    return torch.ops.fusedconv.forward(x, w, b, dim)


def _inputs(shape, dtype, device, dim, seed):
    batch, c_in, c_out, d, h, w, k = shape
    gen = torch.Generator(device="cpu").manual_seed(seed)
    fan_in = c_in * k**3
    x = torch.randn(batch, c_in, d, h, w, generator=gen)
    weight = torch.randn(c_out, c_in, k, k, k, generator=gen) / math.sqrt(fan_in)
    bias = torch.randn(c_out, generator=gen)
    to = dict(device=device, dtype=dtype)
    leaves = [t.to(**to).requires_grad_(True) for t in (x, weight, bias)]
    y_shape = [batch, c_out, d - k + 1, h - k + 1, w - k + 1]
    del y_shape[dim]
    grad_y = torch.randn(y_shape, generator=gen).to(**to)
    return leaves, grad_y


def _step(fn, leaves, grad_y, dim):
    y = fn(*leaves, dim)
    return torch.autograd.grad(y, leaves, grad_y)


def _time_cuda(fn, sets, dim, repeats):
    times = []
    for i in range(repeats):
        leaves, grad_y = sets[i % len(sets)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        _step(fn, leaves, grad_y, dim)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def _peak_cuda_mb(fn, leaves, grad_y, dim):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    grads = _step(fn, leaves, grad_y, dim)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del grads
    return peak / 2**20


def _time_cpu(fn, sets, dim, repeats):
    times = []
    for i in range(repeats):
        leaves, grad_y = sets[i % len(sets)]
        start = time.perf_counter()
        _step(fn, leaves, grad_y, dim)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def run_backward_bench(shape, dtype=torch.float32, device="cuda", repeats=50, dim=2, warmup=5):
    """Times forward+backward of eager autograd of the composite and of fusedconv.

    Args:
        shape: (B, C_in, C_out, D, H, W, k) with a cubic kernel k (as ``python -m fusedconv.bench``).
        dtype: input dtype. device: "cuda" or "cpu". repeats: timed steps per row.
        dim: the reduced axis (2, 3 or 4). warmup: untimed steps per row first.

    Returns:
        [(name, median_us, peak_MB)] for "eager autograd fwd+bwd" and "fusedconv fwd+bwd".
    """
    device = torch.device(device)
    sets = [_inputs(shape, dtype, device, dim, seed) for seed in range(_BUFFERS)]
    rows = []
    for name, fn in (("eager autograd fwd+bwd", eager_forward), ("fusedconv fwd+bwd", _fused)):
        for i in range(warmup):
            _step(fn, *sets[i % _BUFFERS], dim)
        if device.type == "cuda":
            torch.cuda.synchronize()
            median = _time_cuda(fn, sets, dim, repeats)
            peak = _peak_cuda_mb(fn, *sets[0], dim)
        else:
            median = _time_cpu(fn, sets, dim, repeats)
            peak = float("nan")
        rows.append((name, median, peak))
    return rows


def check_backward_against_eager(shape, dtype=torch.float32, device="cuda", dim=2):
    """Relative errors of fusedconv's (dx, dW, db) vs eager autograd in float64:
    [(max-abs error / max-abs value, 2-norm of the error / 2-norm of the value)] per gradient.
    With millions of min columns a few near-ties resolve differently in float32 than in
    float64 (eager float32 shows the same), which moves single dx entries: the max-abs figure
    then reflects those flips, the norm figure the overall accuracy."""
    (leaves, grad_y) = _inputs(shape, dtype, torch.device(device), dim, seed=123)
    ours = _step(_fused, leaves, grad_y, dim)
    exact_leaves = [t.detach().double().requires_grad_(True) for t in leaves]
    exact = _step(eager_forward, exact_leaves, grad_y.double(), dim)
    out = []
    for o, e in zip(ours, exact):
        diff = o.double() - e
        out.append(((diff.abs().max() / e.abs().max()).item(), (diff.norm() / e.norm()).item()))
    return out


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="fusedconv forward+backward benchmark")
    parser.add_argument("--shape", default="128,3,24,24,32,32,3")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--dim", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--profile", action="store_true", help="print fusedconv's kernel times")
    args = parser.parse_args()
    shape = tuple(int(v) for v in args.shape.split(","))
    dtype = getattr(torch, args.dtype)
    print("rel err (dx, dW, db) vs float64:", check_backward_against_eager(shape, dtype, args.device, args.dim))
    rows = run_backward_bench(shape, dtype, args.device, args.repeats, args.dim)
    base = rows[0][1]
    for name, us, mb in rows:
        print(f"{name:28s} {us:10.1f} us  {base / us:6.2f}x  peak {mb:9.1f} MB")
    if args.profile:
        sets = [_inputs(shape, dtype, torch.device(args.device), args.dim, seed) for seed in range(2)]
        with torch.profiler.profile() as prof:
            for i in range(10):
                _step(_fused, *sets[i % 2], args.dim)
            torch.cuda.synchronize() if args.device == "cuda" else None
        sort = "self_cuda_time_total" if args.device == "cuda" else "self_cpu_time_total"
        print(prof.key_averages().table(sort_by=sort, row_limit=15, max_name_column_width=60))
