"""Benchmark: ``python -m fusedconv.bench`` (eager vs torch.compile vs fusedconv).

GPU (default): rows are eager PyTorch, torch.compile (default and max-autotune) and
fusedconv in each precision mode: float32 "highest" (split operands: 3xTF32, or on sm_90a
TF32 plus bf16 cross terms), "high" (TF32), eager and
fusedconv on float32 tensors under torch.autocast(bfloat16) (an AMP model, casts included;
the whole timed loop runs in one autocast region, as a model's forward does, so the region's
entry and exit are not charged to each call), and bfloat16 rows when --dtype includes it.
Columns: median µs (CUDA events, median of --iters runs after warm-up, rotating over
--buffers input sets so L2 does not hold the input), speedup vs the eager row of the same
dtype, achieved TFLOP/s (useful conv FLOPs), fraction of the floor (floor = max(bytes /
bandwidth, FLOPs / rate of the row's arithmetic), rates measured on an H200, see
BENCHMARKS.md), and max-abs relative error vs a float64 reference.

CPU (--device cpu): eager vs fusedconv time and peak extra resident memory (VmHWM after
resetting it through /proc/self/clear_refs, minus the RSS before the call).

Examples:
  python -m fusedconv.bench
  python -m fusedconv.bench --shape 128,3,24,24,32,32,3 --dtype float32,bfloat16 --dim 2
  python -m fusedconv.bench --sweep batch --plot batch.png
  python -m fusedconv.bench --device cpu --shape 8,3,24,24,32,32,3
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import statistics
import sys
import time

import torch

import fusedconv  # noqa: F401  (registers torch.ops.fusedconv)
from fusedconv._precision import float32_matmul_precision
from fusedconv._reference import eager_forward as composite
from fusedconv._reference import float64_reference as reference
from fusedconv._reference import rel_err

# Ceilings measured on the lent H200 (../shared/BUILD-NOTES.md, KINDS.md).
BANDWIDTH = 4.24e12  # B/s, device copy
RATES = {  # FLOP/s of the arithmetic each row uses
    "fp32": 51e12,  # SGEMM
    "tf32": 406e12,
    "3xtf32": 406e12 / 2,  # "highest" on sm_90a: TF32 big x big + one bf16 wgmma of cross terms
    "bf16": 790e12,
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def problem_numbers(shape, dim, elem_bytes):
    """(useful FLOPs, fewest bytes) of one forward."""
    batch, c_in, c_out, d, h, w, k = shape
    out = [d - k + 1, h - k + 1, w - k + 1]
    flops = 2.0 * batch * out[0] * out[1] * out[2] * c_out * c_in * k**3
    kept = out[:dim - 2] + out[dim - 1:]
    y_elems = batch * c_out * kept[0] * kept[1]
    return flops, (batch * c_in * d * h * w + y_elems) * elem_bytes


def time_gpu(fn, inputs, iters, warmup=10):
    """Median µs of fn(*inputs[i % len]) over `iters` CUDA-event-timed calls."""
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        args = inputs[i % len(inputs)]
        starts[i].record()
        fn(*args)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def time_graph(fn, inputs, iters):
    """Median µs per call when the calls over all input sets replay as one CUDA graph
    (launch overhead removed: what the GPU itself spends)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for args in inputs:
            fn(*args)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for args in inputs:
            fn(*args)
    return time_gpu(lambda: graph.replay(), [()], max(10, iters // len(inputs))) / len(inputs)


def make_buffers(shape, dtype, device, count, seed=0):
    batch, c_in, c_out, d, h, w, k = shape
    gen = torch.Generator().manual_seed(seed)
    fan_in = c_in * k**3
    wt = (torch.randn(c_out, c_in, k, k, k, generator=gen) / fan_in**0.5).to(device, dtype)
    bias = torch.randn(c_out, generator=gen).to(device, dtype)
    xs = [torch.randn(batch, c_in, d, h, w, generator=gen).to(device, dtype) for _ in range(count)]
    return [(x, wt, bias) for x in xs]


def autocast_region(dtype):
    """torch.autocast("cuda", dtype), or no region for dtype None."""
    return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()


def gpu_rows(shape, dim, dtypes, iters, buffers, compile_modes, graph=False):
    rows = []
    for dname in dtypes:
        dtype = DTYPES[dname]
        bufs = make_buffers(shape, dtype, "cuda", buffers)
        flops, nbytes = problem_numbers(shape, dim, bufs[0][0].element_size())
        ref = reference(*bufs[0], dim)
        eager_rate = "fp32" if dtype == torch.float32 else "bf16"
        # (row, float32 precision, callable, rate of its arithmetic, autocast dtype or None)
        variants = [("eager", "highest", composite, eager_rate, None)]
        for mode in compile_modes:
            compiled = torch.compile(composite, mode=mode, dynamic=False)
            variants.append((f"torch.compile {mode}", "highest", compiled, eager_rate, None))
        if dtype == torch.float32:
            variants.append(("fusedconv highest", "highest", torch.ops.fusedconv.forward, "3xtf32", None))
            variants.append(("fusedconv high", "high", torch.ops.fusedconv.forward, "tf32", None))
            # An AMP model: float32 tensors under torch.autocast(bfloat16), casts included.
            amp = torch.bfloat16
            variants.append(("eager autocast-bf16", "highest", composite, "bf16", amp))
            variants.append(("fusedconv autocast-bf16", "highest", torch.ops.fusedconv.forward, "bf16", amp))
        else:
            variants.append((f"fusedconv {dname}", "highest", torch.ops.fusedconv.forward, "bf16", None))
        eager_us = None
        for name, precision, fn, rate, amp in variants:
            with float32_matmul_precision(precision), autocast_region(amp):
                call = (lambda x, w, b, fn=fn: fn(x, w, b, dim))
                try:
                    out = fn(*bufs[0], dim)
                    err = rel_err(out, ref)
                    path = (torch.ops.fusedconv.kernel_path(*bufs[0], dim)
                            if fn is torch.ops.fusedconv.forward else "")
                    us = time_gpu(call, bufs, iters)
                    graph_us = float("nan")
                    if graph:
                        try:
                            graph_us = time_graph(call, bufs, iters)
                        except Exception:  # torch.compile'd callables may refuse capture
                            pass
                except Exception as exc:  # e.g. torch.compile failing on this machine
                    print(f"# {name} {dname}: failed: {type(exc).__name__}: {exc}"[:300],
                          file=sys.stderr)
                    continue
            if name == "eager":
                eager_us = us
            floor_us = max(nbytes / BANDWIDTH, flops / RATES[rate]) * 1e6
            rows.append({
                "row": f"{name} [{dname}]" + (f" ({path})" if path else ""),
                "batch": shape[0],
                "us": us,
                "graph_us": graph_us,
                "speedup": eager_us / us if eager_us else float("nan"),
                "tflops": flops / (us * 1e-6) / 1e12,
                "floor_frac": floor_us / us,
                "rel_err": err,
            })
    return rows


def backward_rows(shape, dim, dtypes, iters, device):
    """Forward + backward (dx, dW, db): eager autograd of the composite vs fusedconv."""
    from fusedconv._bench_backward import run_backward_bench

    print(f"\nforward + backward, shape {shape}, dim {dim}, median of {iters} over 4 rotating inputs")
    print(f"| {'row':<40} | {'median µs':>10} | {'x eager':>7} | {'peak MB':>9} | {'x lower':>7} |")
    print("|" + "|".join("-" * n for n in (42, 12, 9, 11, 9)) + "|")
    rows = []
    for dname in dtypes:
        results = run_backward_bench(shape, DTYPES[dname], device, iters, dim)
        (_, eager_us, eager_mb) = results[0]
        for name, us, mb in results:
            print(f"| {name + ' [' + dname + ']':<40} | {us:>10.1f} | {eager_us / us:>7.2f} "
                  f"| {mb:>9.1f} | {eager_mb / mb:>7.2f} |")
            rows.append({"row": f"{name} [{dname}]", "us": us, "speedup": eager_us / us,
                         "peak_mb": mb, "mem_ratio": eager_mb / mb})
    return rows


def print_table(rows, title):
    print(f"\n{title}")
    print(f"| {'row':<52} | {'B':>5} | {'median µs':>10} | {'x eager':>7} | {'TFLOP/s':>7} "
          f"| {'of floor':>8} | {'rel err':>8} | {'graph µs':>8} |")
    print("|" + "|".join("-" * n for n in (54, 7, 12, 9, 9, 10, 10, 10)) + "|")
    for r in rows:
        print(f"| {r['row']:<52} | {r['batch']:>5} | {r['us']:>10.1f} | {r['speedup']:>7.2f} "
              f"| {r['tflops']:>7.2f} | {r['floor_frac']:>8.3f} | {r['rel_err']:>8.1e} "
              f"| {r['graph_us']:>8.1f} |")


def _rss_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def peak_extra_mb(fn):
    """Peak resident memory above the level before fn(), in MB (Linux), or NaN."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        return float("nan")
    before = _rss_kb("VmRSS")
    fn()
    return (_rss_kb("VmHWM") - before) / 1024


def cpu_rows(shape, dim, iters):
    rows = []
    x, w, b = make_buffers(shape, torch.float32, "cpu", 1)[0]
    ref = reference(x, w, b, dim)
    for name, fn in (("eager", composite), ("fusedconv", torch.ops.fusedconv.forward)):
        out = fn(x, w, b, dim)
        err = rel_err(out, ref)
        del out
        mem = peak_extra_mb(lambda: fn(x, w, b, dim))
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn(x, w, b, dim)
            times.append((time.perf_counter() - t0) * 1e6)
        rows.append({"row": name, "us": statistics.median(times), "mem": mem, "rel_err": err,
                     "path": torch.ops.fusedconv.kernel_path(x, w, b, dim) if name != "eager" else ""})
    print(f"\nCPU, shape {shape}, dim {dim}, float32, {torch.get_num_threads()} threads, "
          f"median of {iters}")
    print(f"| {'row':<12} | {'median ms':>10} | {'x eager':>7} | {'peak extra MB':>13} | {'rel err':>8} | path |")
    print("|--------------|------------|---------|---------------|----------|------|")
    for r in rows:
        print(f"| {r['row']:<12} | {r['us'] / 1e3:>10.2f} | {rows[0]['us'] / r['us']:>7.2f} "
              f"| {r['mem']:>13.1f} | {r['rel_err']:>8.1e} | {r['path']} |")
    return rows


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        csv_path = path.rsplit(".", 1)[0] + ".csv"
        write_csv(rows, csv_path)
        print(f"# matplotlib is not installed: wrote {csv_path} instead of {path}")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(r["row"] for r in rows):
        pts = [(r["batch"], r["us"]) for r in rows if r["row"] == name]
        ax.loglog(*zip(*pts), marker="o", label=name)
    ax.set_xlabel("batch size")
    ax.set_ylabel("median µs")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    write_csv(rows, path.rsplit(".", 1)[0] + ".csv")
    print(f"# wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fusedconv.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="128,3,24,24,32,32,3", help="B,C_in,C_out,D,H,W,k")
    ap.add_argument("--dtype", default="float32,bfloat16",
                    help="comma list of float32, bfloat16, float16")
    ap.add_argument("--dim", type=int, default=2, choices=[2, 3, 4])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--buffers", type=int, default=4, help="rotating input sets (>= 4)")
    ap.add_argument("--compile", default="default,max-autotune",
                    help="torch.compile modes to time ('' for none)")
    ap.add_argument("--sweep", choices=["batch"], help="sweep the batch size")
    ap.add_argument("--batches", default="1,8,32,128,512,1024")
    ap.add_argument("--plot", help="write the sweep to this PNG (CSV if matplotlib is absent)")
    ap.add_argument("--csv", help="also write the rows to this CSV")
    ap.add_argument("--backward", action="store_true",
                    help="time forward + backward and peak memory instead of the forward table")
    ap.add_argument("--graph", action="store_true",
                    help="also time each row replayed from a CUDA graph (no launch overhead)")
    args = ap.parse_args(argv)

    shape = tuple(int(v) for v in args.shape.split(","))
    if len(shape) != 7:
        ap.error("--shape wants B,C_in,C_out,D,H,W,k")
    dtypes = [d for d in args.dtype.split(",") if d]
    if args.backward:
        if args.device == "cuda" and not torch.cuda.is_available():
            print("no CUDA device: use --device cpu", file=sys.stderr)
            return 1
        rows = backward_rows(shape, args.dim, dtypes, args.iters, args.device)
        if args.csv:
            write_csv(rows, args.csv)
        return 0
    if args.device == "cpu":
        rows = cpu_rows(shape, args.dim, max(3, args.iters // 20))
        if args.csv:
            write_csv(rows, args.csv)
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: use --device cpu", file=sys.stderr)
        return 1
    compile_modes = [m for m in args.compile.split(",") if m]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    device = torch.cuda.get_device_name()
    if args.sweep == "batch":
        rows = []
        for batch in (int(v) for v in args.batches.split(",")):
            rows += gpu_rows((batch,) + shape[1:], args.dim, dtypes, args.iters, args.buffers,
                             compile_modes, args.graph)
        print_table(rows, f"{device}, {stamp}, batch sweep, shape {shape[1:]}, dim {args.dim}")
        if args.plot:
            plot(rows, args.plot)
    else:
        flops, nbytes = problem_numbers(shape, args.dim, 4)
        rows = gpu_rows(shape, args.dim, dtypes, args.iters, args.buffers, compile_modes,
                        args.graph)
        print_table(rows, f"{device}, {stamp}, shape {shape}, dim {args.dim}, "
                          f"forward, {flops / 1e9:.2f} GFLOP, "
                          f"{nbytes / 1e6:.1f} MB (fp32), median of {args.iters} over "
                          f"{args.buffers} rotating inputs")
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
