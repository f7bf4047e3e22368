"""Where a decode token's time goes: benchmarks/model.py's llama model, token by token.

By default it runs on the null CUDA driver (backend/cuda/null_driver.py: the whole GPU code
path, no kernel runs), so the figures are pycudamlx's host cost alone, on any machine. It
prints microseconds per token spent building the graph (the model call) and evaluating it
(``async_eval``), launches and driver calls per token, then the functions with the most own
time under cProfile.

With ``--gpu`` it runs on the real GPU instead and also reports how long ``.item()`` waits for
the GPU, so a token's wall time splits into host work and waiting. ``--kernels`` then records
the GPU's kernels with torch's profiler (CUPTI sees every kernel of the process, ours too) and
prints GPU microseconds per token by kernel: whether decode is host- or GPU-bound, and where.

    python scripts/profile_decode.py [--shape 150m] [--tokens 32] [--q4] [--top 30]
    python scripts/profile_decode.py --gpu --kernels --shape 1b
    python scripts/profile_decode.py --gpu --kernels --shape 1b --compiled   # graph replay
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
sys.path.insert(0, str(REPO / "scripts"))

log = logging.getLogger("profile_decode")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="150m")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--q4", action="store_true", help="nn.quantize the model (4-bit, g64)")
    parser.add_argument("--compiled", action="store_true",
                        help="the compiled step over a fixed-size KV buffer (model.py's "
                             "decode-compiled workload) instead of mlx-lm's eager step")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--callers", metavar="REGEX", help="also print who calls these functions")
    parser.add_argument("--dump", type=Path, help="write the cProfile stats here")
    parser.add_argument("--gpu", action="store_true", help="run on the real GPU, not the null driver")
    parser.add_argument("--kernels", action="store_true",
                        help="with --gpu: GPU time per token by kernel (needs torch)")
    parser.add_argument("--backend", choices=("pycudamlx", "mlx"), default="pycudamlx",
                        help="mlx: MLX's CUDA build, the same model and loop (implies --gpu)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.gpu = args.gpu or args.backend == "mlx"
    if not args.gpu:
        os.environ["PYCUDAMLX_NULL_DRIVER"] = "1"

    import numpy as np

    import model as bench_model

    runner = bench_model.Runner(args.backend, "gpu")
    mx = runner.mx
    margs = bench_model.model_args(args.shape, False)
    net = runner.build(margs, "bfloat16", 0, 4 if args.q4 else None)
    prompt = mx.array(np.arange(16, dtype=np.uint32) % margs.vocab_size)
    stream = runner._generation_stream()
    if args.gpu:
        cu = None
    else:
        from pycudamlx.backend.cuda import driver
        cu = driver.null_driver()

    if args.compiled:
        compiled_step, _ = runner.make_static_step(net, 1024)

        def step(y):
            with mx.stream(stream):
                return compiled_step(y)
    else:
        cache = net.make_cache()

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
    build = evaluate = wait = 0.0
    before = collections.Counter(dict(cu.calls)) if cu else None
    start = time.perf_counter()
    for _ in range(args.tokens):
        t0 = time.perf_counter()
        nxt = step(y)
        t1 = time.perf_counter()
        mx.async_eval(nxt)
        t2 = time.perf_counter()
        nxt.item()
        build += t1 - t0
        evaluate += t2 - t1
        wait += time.perf_counter() - t2
        y = nxt
    n = args.tokens
    wall = time.perf_counter() - start
    label = (f"{args.backend} {args.shape}" + (" q4" if args.q4 else "")
             + (" compiled" if args.compiled else ""))
    log.info("%s: %.0f us/token building, %.0f us evaluating, %.0f us waiting on .item(); "
             "wall %.0f us/token (%.1f tok/s, one token in flight at a time)", label,
             build / n * 1e6, evaluate / n * 1e6, wait / n * 1e6, wall / n * 1e6, n / wall)
    if cu is not None:
        calls = collections.Counter(dict(cu.calls)) - before
        log.info("%s: %.0f launches/token; driver calls per token: %s", label,
                 calls["cuLaunchKernel"] / n,
                 ", ".join(f"{k} {v / n:.1f}" for k, v in calls.most_common(12)))
    if args.kernels:
        from kernel_table import kernel_table

        box = [y]

        def one_token() -> None:
            box[0] = step(box[0])
            box[0].item()

        kernel_table(one_token, n, args.top, "token")
        y = box[0]

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
