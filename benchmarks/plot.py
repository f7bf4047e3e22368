"""Draw docs/benchmarks.png from one raw results file of benchmarks/bench.py.

    python benchmarks/plot.py benchmarks/results/2026-11-30-h200.json docs/benchmarks.png

Needs matplotlib (a tool for the docs only; not a dependency of the package).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

IMPLS = ["pycudamlx", "torch", "cupy", "mlx-cuda"]
COLORS = {"pycudamlx": "#76b900", "torch": "#ee4c2c", "cupy": "#1f77b4", "mlx-cuda": "#7f7f7f"}


def main(src: str, dst: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    doc = json.loads(Path(src).read_text())
    bw = [r for r in doc["rows"] if r["unit"] == "TB/s"]
    ops = [r for r in doc["rows"] if r["unit"] == "us/op"]
    if ops:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8),
                                       gridspec_kw={"width_ratios": [len(bw), len(ops)]})
    else:  # a run without the per-op rows: one panel
        fig, ax1 = plt.subplots(1, 1, figsize=(2.2 * len(bw) + 2, 4.8))
        ax2 = None
    width = 0.2
    for k, impl in enumerate(IMPLS):
        if not any(impl in r["results"] for r in doc["rows"]):
            continue  # not measured in this run: no legend entry
        xs = [i + (k - 1.5) * width for i in range(len(bw))]
        ys = [r["results"].get(impl, 0.0) for r in bw]
        ax1.bar(xs, ys, width, label=impl, color=COLORS[impl])
    ax1.axhline(doc["copy_tbs"], color="black", linestyle="--", linewidth=1,
                label=f"cuMemcpyDtoD {doc['copy_tbs']:.2f} TB/s")
    ax1.set_xticks(range(len(bw)))
    ax1.set_xticklabels([r["title"].replace(", ", "\n", 1) for r in bw], fontsize=7)
    ax1.set_ylabel("TB/s (bytes read + written)")
    ax1.set_title("Bandwidth-bound ops (higher is better)")
    ax1.legend(fontsize=7)
    for k, impl in enumerate(IMPLS if ax2 is not None else ()):
        xs = [i + (k - 1.5) * width for i in range(len(ops))]
        ys = [r["results"].get(impl, 0.0) for r in ops]
        ax2.bar(xs, ys, width, color=COLORS[impl])
    if ax2 is not None:
        ax2.set_xticks(range(len(ops)))
        ax2.set_xticklabels(["sync every op", "one sync / 10,000 ops"][:len(ops)], fontsize=8)
        ax2.set_ylabel("microseconds per op")
        ax2.set_title("Cost per op, x = x + b\n(lower is better)")
    v = doc["versions"]
    fig.suptitle(f"{v.get('gpu')} · driver CUDA {v.get('driver CUDA')} · {doc['date']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
