"""Plot decode tokens/s from a before/after log of scripts/profile_decode.py --gpu runs (one
machine session) and a benchmarks/model.py --compare JSON (us and MLX-CUDA in one run), one panel
each, so no bar is compared with a figure from another run.

    python benchmarks/plot_decode.py BEFORE_AFTER.log MODEL.json OUT.png
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _before_after(path: Path) -> dict[str, dict[str, float]]:
    """{tree label: {"dense" | "q4": tok/s}} from lines 'LABEL 1b[ q4]: ... (N tok/s)'."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^(\S+)\s+1b( q4)?:.*\(([\d.]+) tok/s\)", line)
        if m:
            out.setdefault(m.group(1), {})["q4" if m.group(2) else "dense"] = float(m.group(3))
    return out


def main(argv: list[str]) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    log_path, model_path, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    trees = _before_after(log_path)
    runs = json.loads(model_path.read_text())["runs"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    variants = ["dense", "q4"]
    width = 0.8 / max(len(trees), 1)
    for i, (label, rates) in enumerate(trees.items()):
        xs = [j + i * width for j in range(len(variants))]
        bars = left.bar(xs, [rates.get(v, 0) for v in variants], width, label=label)
        left.bar_label(bars, fmt="%.1f")
    left.set_xticks([j + width * (len(trees) - 1) / 2 for j in range(len(variants))],
                    [f"1B {v}" for v in variants])
    left.set_ylabel("decode tokens/s")
    left.set_ylim(0, 1.25 * max([0.0] + [v for r in trees.values() for v in r.values()]))
    left.set_title("pycudamlx before / after (one machine session)")
    left.legend()
    width = 0.4
    for i, backend in enumerate(("pycudamlx", "mlx")):
        rows = {r["variant"]: r["median"] for r in runs[backend]["rows"]
                if r["workload"] == "decode"}
        xs = [j + i * width for j in range(len(variants))]
        bars = right.bar(xs, [rows.get(v, 0) for v in variants], width,
                         label="MLX-CUDA 0.32.4" if backend == "mlx" else backend)
        right.bar_label(bars, fmt="%.1f")
    right.set_xticks([j + width / 2 for j in range(len(variants))],
                     [f"1B {v}" for v in variants])
    right.set_title("model.py --compare (one run)")
    right.set_ylim(0, 1.2 * max(r["median"] for b in runs.values() for r in b["rows"]
                                if r["workload"] == "decode"))
    right.legend()
    fig.suptitle("mlx-lm llama decode on an H200, 2026-12-03")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
