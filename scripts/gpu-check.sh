#!/usr/bin/env bash
# The GPU run, in one go on a machine with an NVIDIA GPU (from a checkout, no install needed):
#   1. empty kernel caches filled by NVRTC on every core (`cache warm`), as a cold box starts;
#   2. three test passes at once, each a pytest of `-m gpu` (pytest-xdist workers where it is
#      installed), all strict (ops must run as kernels):
#        nvrtc    kernels from NVRTC through the warmed cache,
#        offline  NVRTC disabled: common dtypes from kernels_ptx/, the others from a cache warmed
#                 beforehand (as an offline box would get them),
#        device   PYCUDAMLX_MEMORY=device (no managed memory; managed-only tests deselected);
#   3. `pycudamlx smoke`;
#   4. quick benchmarks (sum and softmax against torch and CuPy, measured in the same run; the
#      rows an issue sets a bar on: BENCH_ARGS="--bars --reps 10", about 200 s more; every row:
#      BENCH_ARGS="--reps 10");
# then prints a short summary. Logs and raw results go to $OUT (or /tmp/gpu-check).
#
#   bash scripts/gpu-check.sh                               # everything
#   SKIP_BENCH=1 bash scripts/gpu-check.sh
#   BENCH_ARGS="--only add_f32 --reps 5" bash scripts/gpu-check.sh
#   PASSES="nvrtc" TESTS="tests/test_gpu_reduce.py" bash scripts/gpu-check.sh   # a part
#   WORKERS=0 bash scripts/gpu-check.sh                     # no xdist: one process per pass
#   WARM=0 ...                                              # compile on demand (a few tests)
#   CACHE_DIR=/tmp/pcm-cache ...                            # keep the NVRTC cache for later
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
PASSES=${PASSES:-nvrtc offline device}
# The test files holding GPU tests (the others would only be collected and deselected, and
# those that need real MLX, which the GPU machine lacks, would report a module-level skip).
TESTS=${TESTS:-$(grep -l "mark\.gpu" tests/test_*.py | tr '\n' ' ')}
WORKERS=${WORKERS:-3}
started=$(date +%s)
# CACHE_DIR names the first cache (to reuse it warm afterwards); it must start empty.
cache1=${CACHE_DIR:-$(mktemp -d)} cache2=$(mktemp -d)
mkdir -p "$cache1"
chmod 700 "$cache1" "$cache2"
stamp() { echo "   ($(( $(date +%s) - started )) s) $*"; }

xdist=()
if [ "$WORKERS" -gt 0 ] && $PY -c "import xdist" 2>/dev/null; then
    # tests, not files, go to workers: with whole files one worker runs all 75 MLX programs (a
    # subprocess each), the likely long pole of run I's passes (over 5 minutes; unmeasured)
    xdist=(-n "$WORKERS" --dist load)
fi

if [ "${WARM:-1}" != 0 ]; then
echo "== kernel caches: NVRTC fills two empty caches on every core"
# cache1: every built-in module for this GPU (the nvrtc and device passes); cache2: the
# uncommon dtypes only, so the offline pass takes the common ones from kernels_ptx/.
PYCUDAMLX_CACHE_DIR=$cache1 timeout 600 $PY cli.py cache warm --dtypes all \
    >"$OUT/warm-all.log" 2>&1 &
warm1=$!
if [[ " $PASSES " == *" offline "* ]]; then
    PYCUDAMLX_CACHE_DIR=$cache2 timeout 600 $PY cli.py cache warm --dtypes uncommon \
        >"$OUT/warm-uncommon.log" 2>&1
fi
wait $warm1
tail -n 1 "$OUT/warm-all.log"
stamp "caches warm"
fi

run_pass() {  # run_pass NAME: one strict pytest of the GPU tests, its log in $OUT
    local log="$OUT/pytest-gpu-$1.log" marker=gpu vars=()
    case $1 in
        nvrtc)   vars=(PYCUDAMLX_CACHE_DIR="$cache1") ;;
        offline) vars=(PYCUDAMLX_CACHE_DIR="$cache2" PYCUDAMLX_DISABLE_NVRTC=1) ;;
        device)  vars=(PYCUDAMLX_CACHE_DIR="$cache1" PYCUDAMLX_MEMORY=device)
                 marker="gpu and not managed" ;;
    esac
    env "${vars[@]}" PYCUDAMLX_STRICT_GPU=1 timeout 900 $PY -m pytest -q -rs --durations=15 \
        -p no:cacheprovider ${xdist[@]+"${xdist[@]}"} -m "$marker" $TESTS >"$log" 2>&1
}

echo "== GPU tests: passes ${PASSES} at once${xdist:+ (pytest-xdist, $WORKERS workers each)}"
pids=()
for pass in $PASSES; do
    case $pass in nvrtc|offline|device) ;; *) echo "unknown pass $pass"; continue ;; esac
    run_pass "$pass" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
stamp "tests done"
summary=()
for pass in $PASSES; do
    log="$OUT/pytest-gpu-$pass.log"
    [ -f "$log" ] || continue
    grep -E "^(FAILED|ERROR) " "$log" | head -n 20 | sed "s/^/[$pass] /"
    summary+=("$(printf 'GPU tests, %-8s %s' "$pass:" \
        "$(grep -E '(passed|failed|error)' "$log" | tail -n 1)")")
done

echo "== smoke"
PYCUDAMLX_CACHE_DIR=$cache1 timeout 300 $PY cli.py smoke >"$OUT/smoke.log" 2>&1
smoke_rc=$?
tail -n 1 "$OUT/smoke.log"
stamp "smoke done"

if [ -z "${SKIP_BENCH:-}" ]; then
    echo "== benchmarks"
    PYCUDAMLX_CACHE_DIR=$cache1 timeout 900 $PY benchmarks/bench.py --json "$OUT/bench.json" \
        ${BENCH_ARGS:---only sum_f32 --only softmax_8192 --only softmax_65536x1024 --reps 10} \
        >"$OUT/bench.log" 2>&1
    stamp "benchmarks done"
fi

echo
echo "================ summary ($(( $(date +%s) - started )) s) ================"
for line in "${summary[@]}"; do echo "$line"; done
echo "smoke exit code:           $smoke_rc"
if [ -f "$OUT/bench.log" ]; then
    sed -n '/^copy (cuMemcpyDtoD/,$p' "$OUT/bench.log"
fi
