#!/usr/bin/env bash
# Install MLX's CUDA build (the benchmark peer) on an offline GPU machine from wheel parts that
# were carried over in pieces (the wheel is ~90 MB): join, install into $MLX_SITE, and link the
# image's NVIDIA libraries (cuBLAS, cuDNN, NCCL, ...) next to it so libmlx finds them.
#   scripts/install-mlx-cuda.sh PARTS_DIR [MLX_SITE]   (then: export PYTHONPATH=$MLX_SITE:...)
set -euo pipefail
parts=${1:?usage: install-mlx-cuda.sh PARTS_DIR [MLX_SITE]}
site=${2:-/tmp/mlxsite}
py=${PYTHON:-python3}
whl="$parts/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl"
if [ ! -f "$whl" ]; then
    cat "$parts"/mlxcuda.part.* > "$whl"
fi
mkdir -p "$site"
$py -m pip install -q --no-index --no-deps --target "$site" "$whl" "$parts"/mlx-0.32.4-*.whl
nvidia=$($py -c 'import os, nvidia; print(os.path.dirname(list(nvidia.__path__)[0]) + "/nvidia")' 2>/dev/null \
         || $py -c 'import site; print(site.getsitepackages()[0] + "/nvidia")')
for d in "$nvidia"/*; do
    [ -e "$site/nvidia/$(basename "$d")" ] || { mkdir -p "$site/nvidia"; ln -s "$d" "$site/nvidia/"; }
done
PYTHONPATH=$site $py -c 'import mlx.core as mx; print("mlx", mx.__version__, "gpu:", mx.is_available(mx.gpu))'
