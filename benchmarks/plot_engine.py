"""Draw the engine figure (docs/engine-*.png) from one run of scripts/gpu-engine.sh: the per-op
host cost rows of benchmarks/bench.py (lower is better) beside the model-level tokens/s of
benchmarks/model.py --compare (pycudamlx and MLX-CUDA, same script, same run).

    python benchmarks/plot_engine.py bench.json model.json docs/engine-h200.png

Needs matplotlib (for the docs only; not a dependency of the package).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

IMPLS = ["pycudamlx", "torch", "cupy", "mlx-cuda"]
COLORS = {"pycudamlx": "#76b900", "torch": "#ee4c2c", "cupy": "#1f77b4", "mlx-cuda": "#7f7f7f",
          "mlx": "#7f7f7f"}
OP_ROWS = {"op_sync": "sync every op", "op_batched": "one sync / 10,000",
           "op_batched_unfused": "one sync / 10,000\n(fusion off)",
           "chain16_small": "16-op chain,\none eval"}


def main(bench_path: str, model_path: str, dst: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bench = json.loads(Path(bench_path).read_text())
    model = json.loads(Path(model_path).read_text())
    rows = [r for r in bench["rows"] if r["workload"] in OP_ROWS and r["results"]]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [4, 5]})
    width = 0.2
    present = [i for i in IMPLS if any(i in r["results"] for r in rows)]
    for k, impl in enumerate(present):
        xs = [j + (k - (len(present) - 1) / 2) * width for j in range(len(rows))]
        a.bar(xs, [r["results"].get(impl, 0.0) for r in rows], width, label=impl,
              color=COLORS[impl])
    a.set_xticks(range(len(rows)))
    a.set_xticklabels([OP_ROWS[r["workload"]] for r in rows], fontsize=8)
    a.set_ylabel("host microseconds per op")
    a.set_title("x = x + b on 1,024 float32 (lower is better)", fontsize=10)
    a.legend(fontsize=8)

    cmp_rows = [r for r in model.get("compare", []) if r.get("ours") is not None]
    labels = [f"{r['workload']} {r['variant']}\n[{r['shape']}]" for r in cmp_rows]
    for k, (key, impl) in enumerate((("ours", "pycudamlx"), ("mlx", "mlx"))):
        xs = [j + (k - 0.5) * 0.35 for j in range(len(cmp_rows))]
        vals = [r[key] or 0.0 for r in cmp_rows]
        ref = [max(r["ours"] or 0.0, r["mlx"] or 0.0) or 1.0 for r in cmp_rows]
        b.bar(xs, [v / m for v, m in zip(vals, ref)], 0.35,
              label=impl if impl == "pycudamlx" else "MLX-CUDA", color=COLORS[impl])
    for j, r in enumerate(cmp_rows):
        if r.get("ratio") is not None:
            b.annotate(f"{r['ratio']:.2f}x", (j, 1.02), ha="center", fontsize=8)
    b.set_xticks(range(len(cmp_rows)))
    b.set_xticklabels(labels, fontsize=8)
    b.set_ylim(0, 1.32)
    b.set_ylabel("tokens/s, fraction of the faster backend")
    b.set_title("llama-shaped model, same script (labels: ours / MLX-CUDA)", fontsize=10)
    b.legend(fontsize=8, loc="upper center", ncol=2)
    v = bench["versions"]
    fig.suptitle(f"{v.get('gpu')} · {bench['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python benchmarks/plot_engine.py BENCH.json MODEL.json OUT.png")
    main(*sys.argv[1:])
