"""Where a decode token's host time goes: benchmarks/model.py's llama model on the null driver.

Runs mlx-lm's generate loop (benchmarks/model.py) for ``--tokens`` tokens on the null CUDA
driver (backend/cuda/null_driver.py: the whole GPU code path, no kernel runs), so the figures
are pycudamlx's host cost alone, on any machine. Prints microseconds per token spent building
the graph (the model call) and evaluating it (``async_eval``), launches and driver calls per
token, then the functions with the most own time under cProfile.

    python scripts/profile_decode.py [--shape 150m] [--tokens 32] [--q4] [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import logging
import os
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

log = logging.getLogger("profile_decode")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="150m")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--q4", action="store_true", help="nn.quantize the model (4-bit, g64)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--callers", metavar="REGEX", help="also print who calls these functions")
    parser.add_argument("--dump", type=Path, help="write the cProfile stats here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.environ["PYCUDAMLX_NULL_DRIVER"] = "1"

    import numpy as np

    import model as bench_model
    from pycudamlx.backend.cuda import driver

    runner = bench_model.Runner("pycudamlx", "gpu")
    mx = runner.mx
    margs = bench_model.model_args(args.shape, False)
    net = runner.build(margs, "bfloat16", 0, 4 if args.q4 else None)
    prompt = mx.array(np.arange(16, dtype=np.uint32) % margs.vocab_size)
    cache = net.make_cache()
    stream = runner._generation_stream()
    cu = driver.null_driver()

    def step(y):
        with mx.stream(stream):
            logits = net(y[None], cache=cache)[:, -1, :]
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            return mx.argmax(logprobs, axis=-1)

    y = step(prompt)
    mx.eval(y)
    for _ in range(4):  # warm: every kernel loaded, every plan made
        y = step(y)
        mx.eval(y)
        y.item()
    build = evaluate = 0.0
    before = collections.Counter(dict(cu.calls))
    for _ in range(args.tokens):
        t0 = time.perf_counter()
        nxt = step(y)
        t1 = time.perf_counter()
        mx.async_eval(nxt)
        t2 = time.perf_counter()
        nxt.item()
        build += t1 - t0
        evaluate += t2 - t1
        y = nxt
    calls = collections.Counter(dict(cu.calls)) - before
    n = args.tokens
    log.info("%s%s: %.0f us/token building, %.0f us evaluating; %.0f launches/token",
             args.shape, " q4" if args.q4 else "", build / n * 1e6, evaluate / n * 1e6,
             calls["cuLaunchKernel"] / n)
    log.info("driver calls per token: %s", ", ".join(
        f"{k} {v / n:.1f}" for k, v in calls.most_common(12)))

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.tokens):
        y = step(y)
        mx.async_eval(y)
        y.item()
    prof.disable()
    if args.dump:
        prof.dump_stats(args.dump)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("tottime")
    stats.print_stats(args.top)
    if args.callers:
        stats.print_callers(args.callers)
    log.info("%s", out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
