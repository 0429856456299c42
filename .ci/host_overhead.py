"""Host time per call of the op on the GPU machine (device experiment, not shipped).

Each row: mean wall µs per call over many back-to-back calls on a tiny problem whose GPU
time is a few µs, so the host side (Python, dispatcher, autograd wrapper, planning, launch)
is what is measured; then the event time of one call as the bench takes it.
    python .ci/host_overhead.py
"""
from __future__ import annotations

import time

import torch

import fusedconv  # noqa: F401  (loads the op library)


def per_call_us(fn, n=3000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def event_us(fn, n=200):
    times = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return sorted(times)[n // 2]


def main():
    op = torch.ops.fusedconv.forward
    for shape in [(1, 3, 24, 6, 8, 8, 3), (1, 3, 24, 24, 32, 32, 3)]:
        b, ci, co, d, h, w, k = shape
        x = torch.randn(b, ci, d, h, w, device="cuda")
        wt = torch.randn(co, ci, k, k, k, device="cuda")
        bias = torch.randn(co, device="cuda")
        y_shape = (b, co, h - k + 1, w - k + 1)
        print(f"shape {shape}: path {torch.ops.fusedconv.kernel_path(x, wt, bias, 2)}")
        rows = {
            "op": lambda: op(x, wt, bias, 2),
            "op.default": lambda: op.default(x, wt, bias, 2),
            "kernel_path (plan only)": lambda: torch.ops.fusedconv.kernel_path(x, wt, bias, 2),
            "torch.empty(y) (allocation)": lambda: torch.empty(y_shape, device="cuda"),
            "torch.neg(x) (one aten launch)": lambda: torch.neg(x),
        }
        for name, fn in rows.items():
            print(f"  {name:<34} {per_call_us(fn):7.2f} µs/call")
        with torch.inference_mode():
            print(f"  {'op in inference_mode':<34} {per_call_us(rows['op']):7.2f} µs/call")
            print(f"  {'event time, inference_mode':<34} {event_us(rows['op']):7.2f} µs")
        print(f"  {'event time (as the bench)':<34} {event_us(rows['op']):7.2f} µs")
        # Autocast: the op inside one region (as in a model's forward), and a region per call
        # (what the bench's autocast rows timed until session 24).
        def region_per_call():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return op(x, wt, bias, 2)
        print(f"  {'autocast region per call':<34} {per_call_us(region_per_call):7.2f} µs/call")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            print(f"  {'op in one autocast region':<34} {per_call_us(rows['op']):7.2f} µs/call")
            print(f"  {'event time, one autocast region':<34} {event_us(rows['op']):7.2f} µs")
        print(f"  {'event time, region per call':<34} {event_us(region_per_call):7.2f} µs")
        print(f"  {'event time torch.neg':<34} {event_us(rows['torch.neg(x) (one aten launch)']):7.2f} µs")


if __name__ == "__main__":
    main()
