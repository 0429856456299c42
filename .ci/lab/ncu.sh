#!/usr/bin/env bash
# Nsight Compute on lab binaries (built by run.sh with LAB_STAGE=build): one launch of each
# variant after 5 warm-up launches, its tensor-pipe activity against issue activity and stalls.
#   LAB_BIN=.lab-bin NCU_VARIANTS="hw58 hl4" [NCU_SHAPE="128 3 24 24 32 32 3 3 3"] bash .ci/lab/ncu.sh
# Writes $OUT/ncu_<variant>.txt and prints the lines that answer "tensor- or issue-bound".
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lab-out}; mkdir -p "$OUT"
BIN=${LAB_BIN:-.lab-bin}
SHAPE=${NCU_SHAPE:-128 3 24 24 32 32 3 3 3}
M=sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
M=$M,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
for v in ${NCU_VARIANTS:?name the lab binaries}; do
  echo "== $v $SHAPE"
  timeout "${NCU_TIMEOUT:-80}" ncu --launch-skip 5 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section SchedulerStats --section Occupancy --metrics "$M" \
    "$BIN/$v" $SHAPE > "$OUT/ncu_$v.txt" 2>&1
  echo "rc $?"
  grep -E "Duration|Throughput|Issue|Stall|Warp Cycles|Eligible|Occupancy|pct|inst_executed|wavefronts|bank_conflicts|Registers" \
    "$OUT/ncu_$v.txt" | sed 's/  */ /g' | cut -c1-150 | head -60
done
