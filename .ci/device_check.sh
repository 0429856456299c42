#!/usr/bin/env bash
# The one script the lent GPU runs: build (sm_90a), all tests, compute-sanitizer, bench.
# Full logs go to $OUT (8 files at most come back); a short summary is printed last.
# QUICK=1 skips the batch sweep (SWEEP=1 keeps it) and the torch.compile rows; NO_BENCH=1 skips every benchmark;
# FAST=1 runs only the CUDA kernel's tests of the pytest suite; ALL_TESTS=1 every test file in
# either stage; SAN_PARTS / SAN_TOOLS narrow the sanitizer (below); PROFILE=1 adds an
# Nsight Compute pass over the wgmma kernel (ncu.txt).
# The whole check outgrew one 600 s device call (the build alone takes ~380 s), so it runs in
# two stages on one build:
#   STAGE=1: build, the CUDA kernel's tests (memcheck beside them), main job; the installed
#            package comes back as $OUT/pkg.tgz.part* (logs in $OUT/logs.tgz);
#   STAGE=2 PKG=dir: installs the package from dir's parts (copy them into the repo, e.g.
#            out/pkg, and carry it), then the other tests (racecheck beside them), benchmarks.
# Without STAGE it runs everything in one call: after the build every test file and both
# sanitizers run side by side, which with NO_BENCH=1 fits one call (build ~385 s, 2026-12-02).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fusedconv-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
SUMMARY=$OUT/summary.txt; : > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - T0 )); }

note "== device_check $(date -u '+%Y-%m-%d %H:%M UTC') on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl 2>&1 | tail -2

STAGE=${STAGE:-}
stage() { [ -z "$STAGE" ] || [ "$STAGE" = "$1" ]; }  # does this call run stage $1's steps?
SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
FAILED_STEPS=""
if [ "$STAGE" = 2 ]; then
  cat "${PKG:?STAGE=2 needs PKG}"/pkg.tgz.part* | tar -C "$SITE" -xzf - || { note "package unpack failed"; exit 1; }
  note "package from $PKG installed into $SITE"
else
# ---- build -------------------------------------------------------------------------------
build() {
  python3 -m pip install --no-build-isolation --no-deps -v . \
    -C cmake.define.FUSEDCONV_CUDA_ARCHS=90a -C cmake.define.FUSEDCONV_PTXAS_VERBOSE=ON \
    > "$OUT/build.log" 2>&1
}
if ! build; then
  note "BUILD FAILED after $(elapsed) s; errors:"
  grep -E "error|FAILED" "$OUT/build.log" | head -12 | cut -c1-250 | tee -a "$SUMMARY"
  # Other helpers' half-finished files travel too: set aside the backward sources that fail
  # (never the forward kernel's) and build once more, so the forward can still be checked.
  broken=$(grep -oE "FAILED: \[code=[0-9]+\] cpp/CMakeFiles/fusedconv_ops.dir/[^ ]+\.o" "$OUT/build.log" \
           | sed -E 's|.*fusedconv_ops.dir/||; s|\.o$||' | grep -E "backward" | sort -u)
  [ -n "$broken" ] || exit 1
  mkdir -p /tmp/set_aside
  for f in $broken; do note "setting aside cpp/$f for this run"; mv "cpp/$f" /tmp/set_aside/; done
  # backward_cuda.cpp alone references the CUDA backward kernels: drop their unit too.
  if echo "$broken" | grep -q "cuda/backward_cuda.cpp"; then
    for f in cpp/cuda/backward_*.cu; do [ -e "$f" ] && mv "$f" /tmp/set_aside/ && note "setting aside $f"; done
  fi
  cp "$OUT/build.log" /tmp/build_first.log
  build || { note "BUILD FAILED again"; grep -E "error|FAILED" "$OUT/build.log" | head -20; exit 1; }
fi
note "build ok in $(elapsed) s"
# ptxas of the fused forward kernels (config = element, atom, 3x?, warps M/N, tiles M/N).
note "ptxas (fused forward kernels):"
cat /tmp/build_first.log "$OUT/build.log" 2>/dev/null \
  | grep -A3 "Compiling entry function '.*conv_min_softmax" \
  | grep -E "Compiling entry|registers|spill" \
  | sed -E "s/.*(Kernel|Wgmma)ConfigI/\\1:/; s/EEEEv.*for '(sm_[0-9a]+)'.*/ \\1/; s/^ *//; s/ptxas info *: //" \
  | paste - - - | tee -a "$SUMMARY"
fi
if [ "$STAGE" = 1 ]; then  # the installed package, for STAGE=2
  (cd "$SITE" && tar -czf - fusedconv fusedconv-*.dist-info) | split -b 15M - "$OUT/pkg.tgz.part"
  note "package packed: $(ls "$OUT" | grep -c pkg.tgz.part) part(s)"
fi

# ---- sanitizer (in the background, beside the tests: both stages outgrew 600 s in turn) ----
# This stage's tool (1: memcheck, 2: racecheck; both without STAGE) over sanitize_case.py's
# two runs, the default and the clusters, side by side (racecheck of each took ~120-145 s on
# the H200, 2026-12-02; of the clusters alone 350 s since v49, 2026-12-03: a sanitizer run may
# take up to 540 s). Each writes its log and, on a failure, a flag file.
# SAN_TOOLS and SAN_PARTS (tiny, clusters) narrow it; every timeout ends by DEADLINE_S (585 s
# after the start: one device call's limit is 600 s). left [cap]: seconds a step may take.
left() { local cap=${1:-300} l=$(( ${DEADLINE_S:-585} - $(elapsed) )); echo $(( l < cap ? (l < 1 ? 1 : l) : cap )); }
sanitize() {
  local tool=$1 parts=${SAN_PARTS:-tiny clusters} part rc=0
  for part in $parts; do
    ( timeout "$(left 540)" compute-sanitizer --tool "$tool" python3 .ci/sanitize_case.py ${part/tiny/} > "/tmp/san_${tool}_$part.log" 2>&1
      echo $? > "/tmp/san_${tool}_$part.rc" ) &
  done
  wait
  : > "/tmp/san_$tool.log"
  for part in $parts; do
    cat "/tmp/san_${tool}_$part.log" >> "/tmp/san_$tool.log"
    [ "$(cat "/tmp/san_${tool}_$part.rc")" -eq 0 ] || rc=1
  done
  [ "$rc" -eq 0 ] || touch "/tmp/san_$tool.failed"
  local found
  found=$(for part in $parts; do
    echo "$part: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "/tmp/san_${tool}_$part.log" | tail -1 | sed 's/=* *//')"
  done | paste -sd ';')
  echo "compute-sanitizer $tool: $found (rc $rc) after $(elapsed) s" > "/tmp/san_$tool.note"
}
if [ -z "${SAN_TOOLS+x}" ]; then
  SAN_TOOLS=""
  for tool in memcheck racecheck; do
    case "$STAGE$tool" in 1racecheck|2memcheck) continue ;; esac
    SAN_TOOLS="$SAN_TOOLS $tool"
  done
fi
( for tool in $SAN_TOOLS; do sanitize "$tool"; done ) &
SAN_PID=$!

# ---- tests: one pytest process per file, side by side ---------------------------------------
# (16 cores, and the GPU's memory holds them all: the suite takes as long as its slowest file.
# Stage 1 runs the CUDA kernel's own file, stage 2 the others.)
run_pytest() {  # log file, test files...
  local log=$1 f name pids=()
  shift
  for f in "$@"; do
    name=$(basename "$f" .py)
    ( timeout "$(left)" python3 -m pytest -q -p no:cacheprovider "$f" > "/tmp/pt_$name.log" 2>&1
      echo $? > "/tmp/pt_$name.rc" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  : > "$log"
  local rc=0
  for f in "$@"; do
    name=$(basename "$f" .py)
    cat "/tmp/pt_$name.log" >> "$log"
    [ "$(cat "/tmp/pt_$name.rc")" -eq 0 ] || rc=1
    note "  $f: rc $(cat "/tmp/pt_$name.rc"): $(tail -1 "/tmp/pt_$name.log" | cut -c1-150)"
  done
  # The files' "N passed, M skipped ..." lines, summed.
  local total
  total=$(for f in "$@"; do tail -1 "/tmp/pt_$(basename "$f" .py).log"; done \
    | grep -oE "[0-9]+ (passed|failed|skipped|errors?|xfailed|xpassed)" \
    | awk '{n[$2] += $1} END {for (k in n) printf "%d %s, ", n[k], k}')
  note "pytest $(echo "$@" | wc -w) file(s): ${total%, } (rc $rc) after $(elapsed) s"
  grep -E "^(FAILED|ERROR)" "$log" | head -20 | cut -c1-300 | tee -a "$SUMMARY"
  return $rc
}
TEST_FILES=""
! stage 1 || TEST_FILES="tests/test_cuda_forward.py"
! stage 2 || [ -n "${FAST:-}" ] || TEST_FILES="$TEST_FILES $(ls tests/test_*.py | grep -v test_cuda_forward.py)"
[ -z "${ALL_TESTS:-}" ] || TEST_FILES=$(ls tests/test_*.py)  # e.g. STAGE=2 on a package built elsewhere
run_pytest "$OUT/pytest.log" $TEST_FILES || FAILED_STEPS="$FAILED_STEPS pytest"

wait "$SAN_PID"
: > "$OUT/sanitizer.log"
for tool in $SAN_TOOLS; do
  cat "/tmp/san_$tool.log" >> "$OUT/sanitizer.log"
  [ ! -e "/tmp/san_$tool.failed" ] || FAILED_STEPS="$FAILED_STEPS $tool"
  note "$(cat "/tmp/san_$tool.note")"
done

if stage 1; then
# ---- SASS: matrix instructions and local memory of the fused kernels ----------------------
SO=$(python3 -c "import fusedconv._library as l; print(l.LIBRARY_PATH)")
if command -v cuobjdump > /dev/null; then
  note "SASS op counts (per fused kernel):"
  cuobjdump --dump-sass "$SO" 2>/dev/null \
    | awk '/Function : .*conv_min_softmax/{f=$3; sub(/.*ConfigI/, "", f); sub(/EEEEv.*/, "", f)} /Function : /&&!/conv_min_softmax/{f=""} f{print f, $0}' \
    | grep -oE "^[^ ]+ .*(HMMA|HGMMA|LDL|STL|LDGSTS)[.A-Z0-9]*" | awk '{print $1, $NF}' \
    | sort | uniq -c | tee -a "$SUMMARY" > /dev/null
fi

# ---- Nsight Compute: stall reasons and throughput of the wgmma kernel --------------------
if [ -n "${PROFILE:-}" ] && command -v ncu > /dev/null; then
  # The tensor-pipe metric names differ between ncu versions: record what this one offers.
  ncu --query-metrics 2>/dev/null | grep -iE "tensor|gmma" | cut -c1-160 | sed 's/^/metric: /' > "$OUT/ncu.txt"
  for shape in 128,3,24,24,32,32,3 1,3,24,24,32,32,3; do
    timeout 120 ncu --kernel-name regex:conv_min_softmax --launch-skip 1 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      --metrics sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
      python3 .ci/profile_case.py "$shape" high,highest,bf16 >> "$OUT/ncu.txt" 2>&1
  done
  note "ncu: rc $? after $(elapsed) s"
  grep -E "^  [a-z_]+.*conv_min_softmax|gmma|pipe_tensor|ops_path_tensor|inst_executed|warps_active|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Stall|Issue Slots Busy|Warp Cycles Per Issued|Theoretical Occupancy|Block Limit" "$OUT/ncu.txt" | grep -v "^metric: " | cut -c1-150 | head -80 >> "$SUMMARY"
elif [ -n "${PROFILE:-}" ]; then note "ncu: not found"; fi

timeout 60 python3 -m fusedconv > "$OUT/main_job.log" 2>&1
main_rc=$?
note "python -m fusedconv: rc $main_rc after $(elapsed) s"
[ "$main_rc" -eq 0 ] || FAILED_STEPS="$FAILED_STEPS main-job"
fi

# ---- benchmarks (stage 2: the build and stage 1's tests leave too little of a call) -------
BENCH=$OUT/bench.log; : > "$BENCH"
if stage 2 && [ -z "${NO_BENCH:-}" ]; then
{
  timeout 90 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --graph
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 1,3,24,24,32,32,3 --graph
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 16,16,64,16,64,64,3
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 16,16,48,16,64,64,3
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 16,16,128,16,64,64,3
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 128,3,64,24,32,32,3 --graph
  timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --shape 128,3,32,24,32,32,3 --graph
  [ -z "${FAST:-}" ] || timeout 45 python3 -m fusedconv.bench --compile "" --dtype float32 --shape 128,3,24,3,32,32,3 --graph
  timeout 60 python3 -m fusedconv.bench --backward --dtype float32 --iters 20
  timeout 60 python3 .ci/host_overhead.py
  [ -n "${QUICK:-}" ] && [ -z "${SWEEP:-}" ] || timeout 120 python3 -m fusedconv.bench --compile "" --dtype float32,bfloat16 --sweep batch --batches 8,64,256,1024 --graph --plot "$OUT/batch.png" --iters 50
} > "$BENCH" 2>&1
note "bench (no compile) done after $(elapsed) s"
LEFT=$(( ${BUDGET_S:-560} - $(elapsed) ))
if [ "$LEFT" -gt 60 ] && [ -z "${QUICK:-}" ]; then
  timeout "$LEFT" python3 -m fusedconv.bench --compile "${COMPILE_MODES:-default,max-autotune}" --dtype float32,bfloat16 >> "$BENCH" 2>&1
  note "bench with torch.compile: rc $? after $(elapsed) s"
fi
fi
echo; echo "==== summary"; cat "$SUMMARY"
[ ! -s "$BENCH" ] || { echo; echo "==== bench"; grep -E "^\||^NVIDIA|^CPU|^#|^forward" "$BENCH" | grep -v "^|--"; }
[ ! -e "$OUT/main_job.log" ] || { echo; echo "==== python -m fusedconv"; tail -15 "$OUT/main_job.log"; }
if [ -n "$STAGE" ]; then  # $OUT brings back 8 files at most: the logs in one
  (cd "$OUT" && tar -czf logs.tgz ./*.log && rm -f ./*.log)
fi
# Non-zero when a test, the sanitizer or the main job failed (benchmarks never fail it).
if [ -n "$FAILED_STEPS" ]; then echo; echo "==== FAILED:$FAILED_STEPS"; exit 1; fi
