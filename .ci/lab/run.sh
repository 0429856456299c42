#!/usr/bin/env bash
# Kernel lab on the GPU machine: compiles one Hopper kernel configuration per variant with
# nvcc (in parallel), then times each alone (kernel_lab.cu: CUDA events, median of 7 x 40
# launches over ~200 MB of rotating inputs). Variants are ablations (ablate.py) and
# configuration overrides; the split sweep sets LAB_RESIDENT (SMs the R split may fill).
#   bash .ci/lab/run.sh                 # ablation table + B=1 split sweep + checks
#   VARIANTS="base: x3:-DLAB_3X=1" bash .ci/lab/run.sh
#   VARIANTS="n32:-DLAB_N=32,-DLAB_ONE=0" RUNS="n32 16 16 64 16 64 64 3 3 3;n32 2 16 64 6 20 19 3 3 3 check" bash .ci/lab/run.sh
#   VARIANTS="b:-DLAB_BF16=1" RUNS="b 128 3 24 24 32 32 3 3 3;LAB_NOPAIRS=1 b 128 3 24 24 32 32 3 3 3" bash .ci/lab/run.sh
# Device time is scarcer than CPU time: LAB_STAGE=build compiles the variants on this (CPU)
# machine into LAB_BIN (a folder in the repo that git ignores, e.g. .lab-bin; carry it), and
# LAB_STAGE=run runs the binaries found there without compiling (no nvcc time on the GPU).
#   LAB_BIN=.lab-bin LAB_STAGE=build VARIANTS=... bash .ci/lab/run.sh        (here)
#   LAB_BIN=.lab-bin LAB_STAGE=run VARIANTS=... RUNS=... bash .ci/lab/run.sh  (device, carry .lab-bin)
# LAB_SRC: the lab source in .ci/lab (default kernel_lab.cu; shifted_lab.cu: the gather-free kernel).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lab-out}; mkdir -p "$OUT"
STAGE=${LAB_STAGE:-all}  # all | build | run
BIN=${LAB_BIN:-/tmp/lab/bin}; mkdir -p "$BIN"
if [ "$STAGE" != run ]; then
PY=${LAB_PYTHON:-python3}
[ -n "${LAB_PYTHON:-}" ] || python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl 2>&1 | tail -1
INC=$("$PY" -c "import importlib.util as u; print(u.find_spec('cutlass_library').submodule_search_locations[0])")/source/include
SRC=/tmp/lab/src
"$PY" .ci/lab/ablate.py "$SRC" || { echo "ablate.py failed: no binary built from stale sources"; exit 1; }
fi
ONLY="-DLAB_NOLOAD=1 -DLAB_NOGATHER=1 -DLAB_NOFOLD=1 -DLAB_NOSYNC=1"
VARIANTS=${VARIANTS:-"base: nowg:-DLAB_NOWG=1 noload:-DLAB_NOLOAD=1 nogather:-DLAB_NOGATHER=1
  nofold:-DLAB_NOFOLD=1 nosync:-DLAB_NOSYNC=1 noweights:-DLAB_NOWEIGHTS=1 onlywg:${ONLY// /,}
  nothing:${ONLY// /,},-DLAB_NOWG=1,-DLAB_NOWEIGHTS=1 minb4:-DLAB_MINB=4 x3:-DLAB_3X=1
  t2x32:-DLAB_TILEP=2 n32m3:-DLAB_N=32,-DLAB_MINB=3"}
[ "$STAGE" = run ] || for v in $VARIANTS; do
  name=${v%%:*}; flags=${v#*:}
  while [ "$(jobs -r | wc -l)" -ge "${LAB_JOBS:-64}" ]; do sleep 2; done  # LAB_JOBS: compiles at a time
  nvcc -std=c++20 -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -gencode=arch=compute_90a,code=sm_90a \
    --expt-relaxed-constexpr -O3 -Xptxas=-v ${flags//,/ } -I "$SRC" -I cpp -I "$INC" -DLAB_NAME="\"$name\"" \
    ".ci/lab/${LAB_SRC:-kernel_lab.cu}" -o "$BIN/$name" > "$BIN/$name.log" 2>&1 || echo "BUILD FAIL $name" &
done
wait
[ "$STAGE" != build ] || { grep -hE "BUILD FAIL|error" "$BIN"/*.log | head; ls "$BIN"; exit 0; }
REF="128 3 24 24 32 32 3 3 3"; B1="1 3 24 24 32 32 3 3 3"
# RUNS_FILE: one run per line (a file kept beside this script records an experiment's runs).
[ -z "${RUNS_FILE:-}" ] || RUNS=$(grep -vE '^\s*(#|$)' "$RUNS_FILE" | tr '\n' ';')
if [ -n "${RUNS:-}" ]; then  # RUNS="variant args...;variant args..." instead of the default runs
  IFS=';' read -ra runs <<< "$RUNS"
  for r in "${runs[@]}"; do  # a run may start with one VAR=value for the lab's environment
    set -- $r
    if [[ $1 == *=* ]]; then env "$1" "$BIN/$2" "${@:3}"; else "$BIN/$1" "${@:2}"; fi
  done 2>&1 | tee "$OUT/lab.txt"
  exit 0
fi
{
  for v in $VARIANTS; do "$BIN/${v%%:*}" $REF; done
  "$BIN/base" $REF check
  for r in 16 32 64 128; do LAB_RESIDENT=$r "$BIN/base" $B1; done
  "$BIN/base" $B1 check
  "$BIN/base" 128 3 24 3 32 32 3 3 3
} 2>&1 | tee "$OUT/lab.txt"
