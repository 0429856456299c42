#!/usr/bin/env bash
# One short device run (v12 in BENCHMARKS.md): builds the package for sm_90a, runs the CUDA
# kernel's tests and memcheck, benches bf16 on the C_in=16, C_out=64 shape, and times the
# bf16 N=32 lab kernel at 2 (LAB_MINB=2, before) and 3 CTAs per SM (the config's default).
#   bash .ci/lab/bf16_n32_check.sh      (device tool, carry .whl)
set -u
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-deps .whl/nvidia_cutlass-*.whl >/dev/null 2>&1
INC=$(python3 -c "import cutlass_library, os; print(os.path.dirname(cutlass_library.__file__))")/source/include
python3 .ci/lab/ablate.py /tmp/labsrc
for v in "b2:-DLAB_MINB=2" "b3:"; do n=${v%%:*}; f=${v#*:}
  nvcc -std=c++20 -DCUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -O3 -DLAB_N=32 -DLAB_BF16=1 $f -I /tmp/labsrc -I cpp -I $INC -DLAB_NAME="\"$n\"" .ci/lab/kernel_lab.cu -o /tmp/$n > /tmp/$n.log 2>&1 &
done
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -v . -C cmake.define.FUSEDCONV_CUDA_ARCHS=90a -C cmake.define.FUSEDCONV_PTXAS_VERBOSE=ON > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head; exit 1; }
echo "build $(( $(date +%s)-t0 )) s, $(date -u +%H:%M) UTC"
grep -A3 "Compiling entry function '.*bfloat16_tES5_Li32" /tmp/build.log | grep -E "registers|spill" | sort | uniq -c
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_cuda_forward.py 2>&1 | tail -1
timeout 40 compute-sanitizer --tool memcheck python3 .ci/sanitize_case.py 2>&1 | grep "ERROR SUMMARY"
timeout 40 python3 -m fusedconv.bench --compile "" --dtype bfloat16 --shape 16,16,64,16,64,64,3 2>&1 | grep "bfloat16\]"
wait; for n in b2 b3; do /tmp/$n 128 3 64 24 32 32 3 3 3; done; /tmp/b3 1 3 64 24 32 32 3 3 3 check
echo "end $(( $(date +%s)-t0 )) s"
