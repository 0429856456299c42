# Sums ncu_source.sh's per-instruction CSV (one kernel's SASS with warp stall samples) by
# region, so that the samples read as "where the warps wait, and on what".
#   python .ci/lab/sass_regions.py src_tl.csv
#       segments that end at a landmark (barrier, mbarrier wait, wgmma, store, back branch)
#   python .ci/lab/sass_regions.py src_tl.csv --regions 0x..a,0x..b --names prologue,loop
#       per region (from each start address to the next): samples, executed warp
#       instructions and the top stall reasons (the item loop's back branch and the plane
#       loop's give the boundaries; find them in the first form's output)
import csv
import re
import sys

LANDMARKS = ("BAR.SYNC", "SYNCS", "WARPGROUP", "HGMMA", "STG", "EXIT", "MUFU.EX2")


def num(v):
    return float(v.replace(",", "")) if re.match(r"^[\d,.]+$", v or "") else 0.0


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def load(path):
    rows = list(csv.reader(open(path)))
    start = next(i for i, r in enumerate(rows) if "Address" in r)
    header = rows[start]
    body = [r for r in rows[start + 1:] if len(r) == len(header)]
    return header, body


def segments(header, body, total, min_pct):
    a_col, s_col = header.index("Address"), header.index("Source")
    w_col = header.index("Warp Stall Sampling (All Samples)")
    e_col = header.index("Instructions Executed")
    print(f"{'from':>14} {'to':>14} {'samples %':>9} {'warp instr':>10}  ends at")
    seg_s = seg_e = 0.0
    first = None
    for r in body:
        first = first or r[a_col]
        seg_s += num(r[w_col])
        seg_e += num(r[e_col])
        op = re.sub(r"^@!?U?P\w+\s+", "", r[s_col].strip())
        try:
            back = op.startswith("BRA") and int(op.split("0x")[1].split()[0].rstrip(";"), 16) < int(r[a_col], 16)
        except (IndexError, ValueError):
            back = False
        if op.startswith(LANDMARKS) or back:
            if 100 * seg_s / total >= min_pct:
                print(f"{first:>14} {r[a_col]:>14} {100 * seg_s / total:9.1f} {seg_e:10.0f}  {op[:60]}")
            seg_s = seg_e = 0.0
            first = None


def regions(header, body, total, starts, names):
    a_col = header.index("Address")
    w_col = header.index("Warp Stall Sampling (All Samples)")
    e_col = header.index("Instructions Executed")
    stalls = [i for i, h in enumerate(header) if h.startswith("stall_")]
    agg = {n: [0.0, 0.0, {}] for n in names}
    for r in body:
        k = max(0, sum(1 for b in starts if int(r[a_col], 16) >= b) - 1)
        a = agg[names[k]]
        a[0] += num(r[w_col])
        a[1] += num(r[e_col])
        for i in stalls:
            a[2][header[i][6:]] = a[2].get(header[i][6:], 0.0) + num(r[i])
    for n in names:
        s, e, d = agg[n]
        top = sorted(d.items(), key=lambda x: -x[1])[:6]
        print(f"{n:12s} {100 * s / total:5.1f}% of samples, {e:11.0f} warp instr; " +
              " ".join(f"{k}:{100 * v / total:.1f}" for k, v in top))


def main():
    header, body = load(sys.argv[1])
    total = sum(num(r[header.index("Warp Stall Sampling (All Samples)")]) for r in body) or 1.0
    print(f"{sys.argv[1]}: {len(body)} instructions, {total:.0f} stall samples")
    if "--regions" in sys.argv:
        starts = [int(x, 16) for x in arg("--regions").split(",")]
        names = arg("--names", ",".join(f"r{i}" for i in range(len(starts)))).split(",")
        regions(header, body, total, starts, names)
    else:
        segments(header, body, total, float(arg("--min-pct", "0.5")))


if __name__ == "__main__":
    main()
