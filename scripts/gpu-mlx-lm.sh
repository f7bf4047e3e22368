#!/usr/bin/env bash
# mlx-lm on the GPU machine (no network): install the wheels carried in .carry/gpu/wheels into
# a private site, then run mlx-lm's own test suite (from its sdist, .carry/gpu/mlxlm/tests)
# through pycudamlx.mlx_alias on the GPU, with a tiny random model standing in for the hub
# model those tests load (.carry/gpu/hfhub). Prints the summary and the failing tests.
#   SITE=/tmp/lmsite OUT=/tmp/out bash scripts/gpu-mlx-lm.sh [pytest args]
#
# Making .carry/gpu (gitignored; ~29 MB, carried with the device tool's `carry`), on a machine
# with the package index:
#   pip download --python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64 \
#       --platform manylinux2014_x86_64 --platform any -d .carry/gpu/wheels mlx-lm==0.32.2 \
#       transformers sentencepiece protobuf pyyaml jinja2 requests   # then drop numpy, click
#   pip download --no-deps --no-binary :all: mlx-lm==0.32.2  # the sdist: copy its tests/ to
#                                                            # .carry/gpu/mlxlm/tests
#   python tests/mlx_lm_cases.py /tmp/w hub && cp -r /tmp/w/hub .carry/gpu/hfhub  # a tiny
#   random 4-bit qwen2 standing in for the hub model mlx-lm's tests load by name
set -uo pipefail
cd "$(dirname "$0")/.."
SITE=${SITE:-/tmp/lmsite} OUT=${OUT:-/tmp/gpu-mlx-lm}
mkdir -p "$OUT"
if [ ! -d "$SITE/mlx_lm" ]; then
    python3 -m pip install -q --no-index --no-deps --target "$SITE" .carry/gpu/wheels/*.whl \
        > "$OUT/pip.log" 2>&1 || { tail -5 "$OUT/pip.log"; exit 1; }
fi
repo=$PWD
cd .carry/gpu/mlxlm
HF_HUB_CACHE=$repo/.carry/gpu/hfhub HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
PYTHONPATH=$SITE:$repo timeout "${LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider \
    -p pycudamlx.mlx_alias tests --ignore tests/test_evaluate.py --ignore tests/test_datsets.py \
    -rfE "$@" > "$OUT/mlx-lm-tests.log" 2>&1
echo "mlx-lm's tests on the GPU: $(tail -n 1 "$OUT/mlx-lm-tests.log")"
grep -E "^(FAILED|ERROR)" "$OUT/mlx-lm-tests.log" | sed 's/ - .*//' | sort > "$OUT/failed.txt"
cat "$OUT/failed.txt"
