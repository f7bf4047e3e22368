#!/usr/bin/env bash
# The execution engine's GPU figures (issue 15) in one call, every peer in the same run:
#   1. MLX's CUDA build installed from carried wheel parts when MLX_PARTS names their folder
#      (scripts/install-mlx-cuda.sh), so MLX-CUDA is measured beside torch and CuPy;
#   2. benchmarks/bench.py's engine rows (per-op cost with a sync every op and one sync after
#      10,000, fused and unfused; the 16-op chain small and large) and the add row with the
#      copy bandwidth;
#   3. benchmarks/model.py: the llama-shaped model, pycudamlx and MLX from the same script
#      (--compare: MLX-CUDA where installed), 1B bf16 and 4-bit prefill, decode (eager, and
#      compiled over a fixed-size KV buffer) and the 150M
#      training step (WORKLOADS="decode" for a part).
# Raw JSON and logs go to $OUT (or /tmp/gpu-engine); the tables are printed last.
#
#   MLX_PARTS=/tmp/mlxparts bash scripts/gpu-engine.sh
#   SKIP_MODEL=1 bash scripts/gpu-engine.sh          # the op rows only
#   SKIP_BENCH=1 TOKENS=32 bash scripts/gpu-engine.sh # the model only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-engine}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
started=$(date +%s)
stamp() { echo "   ($(( $(date +%s) - started )) s) $*"; }

if [ -n "${MLX_PARTS:-}" ]; then
    echo "== MLX-CUDA from $MLX_PARTS"
    bash scripts/install-mlx-cuda.sh "$MLX_PARTS" /tmp/mlxsite >"$OUT/mlx-install.log" 2>&1 \
        && export PYTHONPATH=/tmp/mlxsite${PYTHONPATH:+:$PYTHONPATH}
    tail -n 1 "$OUT/mlx-install.log"
    stamp "MLX-CUDA installed"
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
cache=$(mktemp -d)
chmod 700 "$cache"
export PYCUDAMLX_CACHE_DIR=$cache

if [ -z "${SKIP_BENCH:-}" ]; then
    echo "== engine rows (bench.py)"
    timeout 420 $PY benchmarks/bench.py --reps "${REPS:-10}" --json "$OUT/bench.json" \
        --only add_f32 --only op_sync --only op_batched --only op_batched_unfused \
        --only chain16_small --only chain16_large >"$OUT/bench.log" 2>&1
    stamp "bench done (rc $?)"
fi

if [ -z "${SKIP_MODEL:-}" ]; then
    echo "== model (model.py --compare)"
    workloads=()
    for w in ${WORKLOADS:-prefill decode decode-compiled train}; do workloads+=(--workload "$w"); done
    timeout "${MODEL_TIMEOUT:-480}" $PY benchmarks/model.py --compare --shape 1b \
        --tokens "${TOKENS:-64}" --reps "${MODEL_REPS:-2}" "${workloads[@]}" \
        --json "$OUT/model.json" >"$OUT/model.log" 2>&1
    stamp "model done (rc $?)"
fi

echo
echo "================ summary ($(( $(date +%s) - started )) s) ================"
[ -f "$OUT/bench.log" ] && sed -n '/^copy (cuMemcpyDtoD/,$p' "$OUT/bench.log"
[ -f "$OUT/model.log" ] && tail -n 25 "$OUT/model.log"
