"""Host cost of a compiled function of many small ops: eager, compiled op by op, compiled as a
CUDA graph, and torch's CUDA graph of the same chain, in one run.

    python benchmarks/compile_graphs.py [--ops 64] [--n 1024] [--calls 2000]

Each row: microseconds per call and per op, from calls per second with one sync at the end
(the GPU work of a call is a few microseconds, so this is the host path). Every result is
checked against numpy first. Prints a table; ``--json FILE`` keeps the raw figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

import numpy as np

log = logging.getLogger("compile_graphs")


def chain(mx, x, b, ops: int):
    for i in range(ops // 2):
        x = x * 0.999 + b if i % 2 else mx.tanh(x) + b
    return x


def numpy_chain(x, b, ops: int):
    for i in range(ops // 2):
        x = (x * np.float32(0.999) + b) if i % 2 else (np.tanh(x) + b)
    return x


def time_calls(fn, sync, calls: int) -> float:
    for _ in range(5):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=64)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import pycudamlx.core as mx
    from pycudamlx.core import _compile_replay

    rng = np.random.default_rng(0)
    xh = rng.standard_normal(args.n).astype(np.float32)
    bh = (rng.standard_normal(args.n) * 0.01).astype(np.float32)
    ref = numpy_chain(xh, bh, args.ops)
    x, b = mx.array(xh), mx.array(bh)
    rows = {}

    from pycudamlx.backend.cuda import driver

    def check(out, label):
        mx.eval(out)
        if driver.null_driver() is not None:  # host-cost profiling: no kernel ran
            return
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-4, atol=1e-4, err_msg=label)

    check(chain(mx, x, b, args.ops), "eager")
    rows["eager (fused at eval)"] = time_calls(
        lambda: mx.eval(chain(mx, x, b, args.ops)), lambda: mx.synchronize(), args.calls)
    for graphs, label in ((False, "compiled, op by op"), (True, "compiled, CUDA graph")):
        _compile_replay.graphs_enabled = graphs
        cf = mx.compile(lambda x, b: chain(mx, x, b, args.ops))
        for _ in range(3):
            check(cf(x, b), label)
        rows[label] = time_calls(lambda: mx.eval(cf(x, b)), lambda: mx.synchronize(),
                                 args.calls)
        log.info("%s: %.2f us per call", label, rows[label])
    try:
        import torch

        tx = torch.tensor(xh, device="cuda")
        tb = torch.tensor(bh, device="cuda")
        rows["torch eager"] = time_calls(lambda: chain(torch, tx, tb, args.ops),
                                         torch.cuda.synchronize, args.calls)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                chain(torch, tx, tb, args.ops)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        static_x = tx.clone()
        with torch.cuda.graph(g):
            static_out = chain(torch, static_x, tb, args.ops)

        def replay():
            static_x.copy_(tx)
            g.replay()
            return static_out.clone()

        replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(static_out.cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
        rows["torch CUDA graph (copy in, replay, clone out)"] = time_calls(
            replay, torch.cuda.synchronize, args.calls)
    except ImportError:
        log.info("torch is not installed: no peer rows")
    print(f"\n{args.ops} ops on {args.n} float32 elements, {args.calls} calls, one sync")
    print(f"| implementation | us per call | us per op |\n|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {v:.1f} | {v / args.ops:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ops": args.ops, "n": args.n, "calls": args.calls, "us_per_call": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
