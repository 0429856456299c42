#!/usr/bin/env bash
# Nsight Compute's per-instruction view of lab binaries: warp stall samples and executed
# instructions for every SASS line of one launch (after 5 warm-up launches), as CSV, plus the
# stall reasons summed over the kernel. .ci/lab/sass_regions.py sums the CSV by kernel region.
#   LAB_BIN=.lab-bin NCU_VARIANTS="tl bl" [NCU_SHAPE="128 3 24 24 32 32 3 3 3"] bash .ci/lab/ncu_source.sh
# Writes $OUT/src_<variant>.csv (for sass_regions.py) and $OUT/stalls_<variant>.txt.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lab-out}; mkdir -p "$OUT"
BIN=${LAB_BIN:-.lab-bin}
SHAPE=${NCU_SHAPE:-128 3 24 24 32 32 3 3 3}
REP=/tmp/ncu-src; mkdir -p "$REP"
for v in ${NCU_VARIANTS:?name the lab binaries}; do
  echo "== $v $SHAPE"
  timeout "${NCU_TIMEOUT:-120}" ncu --launch-skip 5 --launch-count 1 --section SourceCounters \
    --section WarpStateStats -f -o "$REP/$v" "$BIN/$v" $SHAPE > "$OUT/ncu_src_$v.log" 2>&1
  echo "rc $?"
  ncu -i "$REP/$v.ncu-rep" --page source --csv --print-source sass > "$OUT/src_$v.csv" 2>&1
  ncu -i "$REP/$v.ncu-rep" --page details --section WarpStateStats > "$OUT/stalls_$v.txt" 2>&1
  grep -E "Stall|Warp Cycles|Duration" "$OUT/stalls_$v.txt" | sed 's/  */ /g' | cut -c1-150 | head -20
  wc -c "$OUT/src_$v.csv"
done
