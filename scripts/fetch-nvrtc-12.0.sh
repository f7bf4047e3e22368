#!/usr/bin/env bash
# Fetch NVRTC 12.0 (the nvidia-cuda-nvrtc-cu12==12.0.140 wheel) into DIR, unpacked, for
#
#     pycudamlx ptx build --nvrtc-dir DIR        (or: python cli.py ptx build --nvrtc-dir DIR)
#
# kernels_ptx/ must be emitted by NVRTC 12.0: its PTX (ISA 8.0) loads on every CUDA 12.0+ and
# 13.x driver. The cu12/cu13 extras install a newer NVRTC, so 12.0 lives in a side directory that
# is never on the import or library path. Needs pip and network access (or a pip index mirror).
#
#     scripts/fetch-nvrtc-12.0.sh /tmp/nvrtc120
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 DIR   (DIR receives the unpacked nvidia-cuda-nvrtc-cu12==12.0.140 wheel)" >&2
    exit 2
fi
dest=$1
py=${PYTHON:-python3}
version=12.0.140

mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$py" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
    "nvidia-cuda-nvrtc-cu12==$version"
wheels=("$tmp"/nvidia_cuda_nvrtc_cu12-"$version"-*.whl)
if [ ! -f "${wheels[0]}" ]; then
    echo "error: pip downloaded no nvidia_cuda_nvrtc_cu12-$version wheel into $tmp" >&2
    exit 1
fi
"$py" -m zipfile -e "${wheels[0]}" "$dest"

lib=$(find "$dest" -name 'libnvrtc.so.12*' -not -name '*builtins*' | head -n 1)
if [ -z "$lib" ]; then
    echo "error: the wheel held no libnvrtc.so.12 (unpacked into $dest)" >&2
    exit 1
fi
echo "NVRTC $version unpacked: $lib"
echo "next: python cli.py ptx build --nvrtc-dir $dest"
