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


def _grouped(ax, rows: list, values, labels: list[str]) -> None:
    """One group of bars per row, one bar per implementation measured in the run."""
    width = 0.2
    present = [impl for impl in IMPLS if any(impl in r["results"] for r in rows)]
    for k, impl in enumerate(present):
        xs = [i + (k - (len(present) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [values(r, impl) for r in rows], width, label=impl, color=COLORS[impl])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7, rotation=35, ha="right")


def main(src: str, dst: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    doc = json.loads(Path(src).read_text())
    rows = [r for r in doc["rows"] if r["results"]]
    bw = [r for r in rows if r["unit"] == "TB/s"]
    ops = [r for r in rows if r["unit"] == "us/op"]
    # Throughput rows in other units, shown against the best implementation of each row.
    rel = [r for r in rows if r["unit"] in ("TFLOP/s", "Gkeys/s", "GB/s", "Gsamples/s")
           and len(r["results"]) > 1]
    # Top row: bandwidth rows and the per-op cost; bottom row: the relative rows.
    top = [p for p in (bw, ops) if p]
    fig = plt.figure(figsize=(max(9.0, 0.55 * max(len(bw) + len(ops), len(rel)) + 3),
                              9.5 if rel else 5.2))
    grid = fig.add_gridspec(2 if rel else 1, max(len(top), 1),
                            width_ratios=[max(len(p), 2) for p in top] or [1])
    ax = {id(p): fig.add_subplot(grid[0, i]) for i, p in enumerate(top)}
    if rel:
        ax[id(rel)] = fig.add_subplot(grid[1, :])
    if bw:
        a = ax[id(bw)]
        _grouped(a, bw, lambda r, i: r["results"].get(i, 0.0), [r["workload"] for r in bw])
        a.axhline(doc["copy_tbs"], color="black", linestyle="--", linewidth=1,
                  label=f"cuMemcpyDtoD {doc['copy_tbs']:.2f} TB/s")
        a.set_ylabel("TB/s (bytes read + written)")
        a.set_title("Bandwidth-bound ops (higher is better)")
        a.legend(fontsize=7)
    if rel:
        a = ax[id(rel)]
        _grouped(a, rel, lambda r, i: r["results"].get(i, 0.0) / max(r["results"].values()),
                 [r["workload"] for r in rel])
        a.axhline(1.0, color="black", linewidth=0.5)
        a.set_ylabel("fraction of the fastest implementation")
        a.set_title("TFLOP/s, Gkeys/s, GB/s rows\n(1 = fastest of the run)")
    if ops:
        a = ax[id(ops)]
        _grouped(a, ops, lambda r, i: r["results"].get(i, 0.0),
                 ["sync every op", "one sync / 10,000"][:len(ops)])
        a.set_ylabel("microseconds per op")
        a.set_title("Cost per op\n(x = x + b; lower is better)", fontsize=10)
    v = doc["versions"]
    fig.suptitle(f"{v.get('gpu')} · driver CUDA {v.get('driver CUDA')} · {doc['date']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/plot.py RESULTS.json OUT.png")
    main(sys.argv[1], sys.argv[2])
