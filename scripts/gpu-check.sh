#!/usr/bin/env bash
# The GPU run, in one go on a machine with an NVIDIA GPU (from a checkout, no install needed):
#   1. the GPU tests with NVRTC (fresh kernel cache, strict: ops must run as kernels),
#   2. the GPU tests again with NVRTC disabled: common dtypes come from kernels_ptx/, the others
#      from a cache filled beforehand by `cache warm` (as an offline box would get them),
#   3. the GPU tests in device-memory mode (PYCUDAMLX_MEMORY=device; managed-only tests
#      deselected by their marker),
#   4. `pycudamlx smoke`,
#   5. the benchmarks (peers measured in the same run),
# then prints a short summary. Logs and raw results go to $OUT (or /tmp/gpu-check).
#
#   bash scripts/gpu-check.sh                               # everything
#   SKIP_BENCH=1 bash scripts/gpu-check.sh
#   BENCH_ARGS="--only add_f32 --reps 5" bash scripts/gpu-check.sh
#   PASSES="nvrtc" TESTS="tests/test_gpu_reduce.py" bash scripts/gpu-check.sh   # a part
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
PASSES=${PASSES:-nvrtc offline device}
TESTS=${TESTS:-tests}
started=$(date +%s)
cache1=$(mktemp -d) cache2=$(mktemp -d)
chmod 700 "$cache1" "$cache2"
stamp() { echo "   ($(( $(date +%s) - started )) s)"; }
summary=()

for pass in $PASSES; do
    log="$OUT/pytest-gpu-$pass.log"
    case $pass in
        nvrtc)
            echo "== GPU tests with NVRTC (the empty cache first filled by NVRTC on every core)"
            # One module at a time, on demand, took 236 s of a 535 s run on the H200 (one
            # core); `cache warm` compiles the whole built-in set for this GPU in parallel.
            PYCUDAMLX_CACHE_DIR=$cache1 timeout 600 $PY cli.py cache warm --dtypes all \
                2>&1 | tail -n 1
            PYCUDAMLX_CACHE_DIR=$cache1 PYCUDAMLX_STRICT_GPU=1 timeout 900 \
                $PY -m pytest -m gpu -q -rs -p no:cacheprovider $TESTS 2>&1 | tee "$log" ;;
        offline)
            echo "== GPU tests with NVRTC disabled (kernels_ptx + a warmed cache for the rest)"
            PYCUDAMLX_CACHE_DIR=$cache2 timeout 300 $PY cli.py cache warm --dtypes uncommon \
                2>&1 | tail -n 3 | tee "$OUT/warm.log"
            PYCUDAMLX_CACHE_DIR=$cache2 PYCUDAMLX_DISABLE_NVRTC=1 PYCUDAMLX_STRICT_GPU=1 \
                timeout 900 $PY -m pytest -m gpu -q -rs -p no:cacheprovider $TESTS 2>&1 \
                | tee "$log" ;;
        device)
            echo "== GPU tests in device-memory mode (no managed memory: WSL, Windows, Jetson)"
            PYCUDAMLX_CACHE_DIR=$cache1 PYCUDAMLX_MEMORY=device PYCUDAMLX_STRICT_GPU=1 \
                timeout 900 $PY -m pytest -m "gpu and not managed" -q -rs -p no:cacheprovider \
                $TESTS 2>&1 | tee "$log" ;;
        *) echo "unknown pass $pass"; continue ;;
    esac
    stamp
    summary+=("$(printf 'GPU tests, %-8s %s' "$pass:" "$(grep -E '(passed|failed|error)' "$log" | tail -n 1)")")
done

echo "== smoke"
PYCUDAMLX_CACHE_DIR=$cache1 timeout 300 $PY cli.py smoke 2>&1 | tee "$OUT/smoke.log"
smoke_rc=${PIPESTATUS[0]}
stamp

if [ -z "${SKIP_BENCH:-}" ]; then
    echo "== benchmarks"
    PYCUDAMLX_CACHE_DIR=$cache1 timeout 900 $PY benchmarks/bench.py --json "$OUT/bench.json" \
        ${BENCH_ARGS:---reps 10} 2>&1 | tee "$OUT/bench.log"
fi

echo
echo "================ summary ($(( $(date +%s) - started )) s) ================"
for line in "${summary[@]}"; do echo "$line"; done
echo "smoke exit code:           $smoke_rc"
if [ -f "$OUT/bench.log" ]; then
    sed -n '/^copy (cuMemcpyDtoD/,$p' "$OUT/bench.log"
fi
