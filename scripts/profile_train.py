"""Where a training step's GPU time goes: benchmarks/model.py's llama model, value_and_grad +
AdamW as mlx-lm's trainer, on the real GPU, for pycudamlx or MLX-CUDA (``--backend mlx``).

Prints the step's wall time (evaluated and synchronized, median of ``--steps``), then GPU
microseconds per step by kernel (scripts/kernel_table.py): the wall time against the GPU's busy
time says whether the host or the kernels bound the step, and the table which kernels.

    python scripts/profile_train.py [--shape 150m] [--compile] [--backend mlx] [--top 30]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "scripts"))

log = logging.getLogger("profile_train")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("pycudamlx", "mlx"), default="pycudamlx")
    parser.add_argument("--shape", default="150m")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--compile", action="store_true", help="mx.compile the step")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="pycudamlx's debug log (why a compiled step is not a CUDA graph)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.verbose:
        logging.getLogger("pycudamlx").setLevel(logging.DEBUG)

    import numpy as np

    import model as bench_model
    from kernel_table import kernel_table

    runner = bench_model.Runner(args.backend, "gpu")
    mx = runner.mx
    margs = bench_model.model_args(args.shape, False)
    net = runner.build(margs, "bfloat16", 0, None)
    step, state = runner.make_train_step(net, args.compile)
    batch = np.random.default_rng(0).integers(0, margs.vocab_size, (args.batch, args.seq + 1))
    data = mx.array(batch.astype(np.int32))
    inputs, targets = data[:, :-1], data[:, 1:]
    mx.eval(inputs, targets)

    def one_step() -> None:
        loss = step(inputs, targets)
        mx.eval(state, loss)
        loss.item()

    for _ in range(3):  # warm: kernels loaded, the compiled trace (and its graph) made
        one_step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        one_step()
        times.append(time.perf_counter() - t0)
    wall = statistics.median(times)
    if args.backend == "pycudamlx" and args.compile:
        from pycudamlx.graph.primitives import compiled_graph

        log.info("CUDA graphs alive after the warm-up: %d", len(compiled_graph._live))
    tokens = args.batch * args.seq
    log.info("%s %s%s: %.1f ms/step wall, %.0f tok/s", args.backend, args.shape,
             " compiled" if args.compile else "", wall * 1e3, tokens / wall)
    kernel_table(one_step, args.steps, args.top, "step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
