"""Plot pycudamlx's tokens/s as a fraction of MLX-CUDA's, per workload, from one or more
benchmarks/model.py --compare JSON files. Each ratio comes from one run (both backends measured
by the same call), so runs on different machine sessions can stand side by side.

    python benchmarks/plot_model.py OUT.png LABEL=RUN.json [LABEL=RUN.json ...]

Needs matplotlib (a tool for the docs only; not a dependency of the package).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _ratios(path: Path) -> dict[str, float]:
    """{"decode dense [1b]": ours / mlx, ...} from a compare JSON."""
    rows = json.loads(path.read_text())["compare"]
    return {f"{r['workload']} {r['variant']} [{r['shape']}]": r["ratio"] for r in rows}


def main(argv: list[str]) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(argv[0])
    runs = {}
    for arg in argv[1:]:
        label, _, path = arg.partition("=")
        runs[label] = _ratios(Path(path))
    workloads: list[str] = []
    for ratios in runs.values():
        workloads += [w for w in ratios if w not in workloads]
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(workloads) + 1.5))
    height = 0.8 / max(len(runs), 1)
    for i, (label, ratios) in enumerate(runs.items()):
        ys = [j + i * height for j in range(len(workloads))]
        bars = ax.barh(ys, [ratios.get(w, 0.0) for w in workloads], height, label=label)
        ax.bar_label(bars, labels=[f"{ratios[w]:.2f}" if w in ratios else "not run"
                                   for w in workloads], padding=3)
    ax.axvline(1.0, color="black", linewidth=1, linestyle="--")
    ax.set_yticks([j + height * (len(runs) - 1) / 2 for j in range(len(workloads))], workloads)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("pycudamlx tokens/s / MLX-CUDA 0.32.4 tokens/s (same run; 1.0 = parity)")
    ax.legend(loc="lower right")
    ax.set_title("mlx-lm llama-shaped model on an H200 (benchmarks/model.py --compare)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
