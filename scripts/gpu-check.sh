#!/usr/bin/env bash
# The GPU run, in one go on a machine with an NVIDIA GPU (from a checkout, no install needed):
#   1. the GPU tests with NVRTC (fresh kernel cache, strict: ops must run as kernels),
#   2. the GPU tests again with NVRTC disabled: common dtypes come from kernels_ptx/, the others
#      from a cache filled beforehand by `cache warm` (as an offline box would get them), and
#      again in device-memory mode (PYCUDAMLX_MEMORY=device),
#   3. `pycudamlx smoke`,
#   4. the benchmarks (peers measured in the same run),
# then prints a short summary. Logs and raw results go to $OUT (or /tmp/gpu-check).
#
#   bash scripts/gpu-check.sh            # everything
#   SKIP_BENCH=1 bash scripts/gpu-check.sh
#   BENCH_ARGS="--only add_f32 --reps 5" bash scripts/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
started=$(date +%s)
cache1=$(mktemp -d) cache2=$(mktemp -d)
chmod 700 "$cache1" "$cache2"

echo "== 1/4 GPU tests with NVRTC"
PYCUDAMLX_CACHE_DIR=$cache1 PYCUDAMLX_STRICT_GPU=1 timeout 900 $PY -m pytest -m gpu -q -rs \
    -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest-gpu.log"

echo "   ($(( $(date +%s) - started )) s)"
echo "== 2/4 GPU tests with NVRTC disabled (kernels_ptx + a warmed cache for the other dtypes)"
PYCUDAMLX_CACHE_DIR=$cache2 timeout 300 $PY cli.py cache warm --dtypes uncommon \
    2>&1 | tail -n 3 | tee "$OUT/warm.log"
PYCUDAMLX_CACHE_DIR=$cache2 PYCUDAMLX_DISABLE_NVRTC=1 PYCUDAMLX_STRICT_GPU=1 timeout 900 \
    $PY -m pytest -m gpu -q -rs -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest-gpu-nonvrtc.log"

echo "   ($(( $(date +%s) - started )) s)"
echo "== 2b/4 GPU tests in device-memory mode (no managed memory: WSL, Windows, Jetson)"
PYCUDAMLX_CACHE_DIR=$cache1 PYCUDAMLX_MEMORY=device PYCUDAMLX_STRICT_GPU=1 timeout 900 \
    $PY -m pytest -m "gpu and not managed" -q -rs -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest-gpu-device-mode.log"

echo "   ($(( $(date +%s) - started )) s)"
echo "== 3/4 smoke"
PYCUDAMLX_CACHE_DIR=$cache1 timeout 300 $PY cli.py smoke 2>&1 | tee "$OUT/smoke.log"
smoke_rc=${PIPESTATUS[0]}

if [ -z "${SKIP_BENCH:-}" ]; then
    echo "== 4/4 benchmarks"
    PYCUDAMLX_CACHE_DIR=$cache1 timeout 900 $PY benchmarks/bench.py --json "$OUT/bench.json" ${BENCH_ARGS:-} \
        2>&1 | tee "$OUT/bench.log"
fi

echo
echo "================ summary ($(( $(date +%s) - started )) s) ================"
echo "GPU tests, NVRTC:          $(grep -E '(passed|failed|error)' "$OUT/pytest-gpu.log" | tail -n 1)"
echo "GPU tests, NVRTC disabled: $(grep -E '(passed|failed|error)' "$OUT/pytest-gpu-nonvrtc.log" | tail -n 1)"
echo "GPU tests, device memory:  $(grep -E '(passed|failed|error)' "$OUT/pytest-gpu-device-mode.log" | tail -n 1)"
echo "smoke exit code:           $smoke_rc"
if [ -f "$OUT/bench.log" ]; then
    sed -n '/^copy (cuMemcpyDtoD/,$p' "$OUT/bench.log"
fi
