"""Where the host time of one small op goes, on a GPU machine: ``x = x + b`` on 1,024 float32.

Prints microseconds per op (one eval after many ops, and an eval plus a sync every op), the
driver calls each op makes (every cuda.bindings.driver function is wrapped with a counter), and
the functions that take the most time under cProfile. This is what bench.py's per-op rows
measure, taken apart.

    python scripts/profile_op.py [--ops 10000]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import logging
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

log = logging.getLogger("profile_op")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import driver

    host = np.random.default_rng(1).standard_normal(1024, dtype=np.float32)
    x, b = mx.array(host), mx.array(host)
    stream = mx.default_stream(mx.gpu).cuda_stream()

    def batched(n: int) -> None:
        nonlocal x
        for _ in range(n):
            x = mx.add(x, b)
        mx.eval(x)
        stream.synchronize()

    def synced(n: int) -> None:
        nonlocal x
        for _ in range(n):
            x = mx.add(x, b)
            mx.eval(x)
            stream.synchronize()

    batched(200)
    synced(200)
    for fn in (batched, synced):
        t0 = time.perf_counter()
        fn(args.ops)
        log.info("%-8s %.2f us/op", fn.__name__, (time.perf_counter() - t0) / args.ops * 1e6)

    # driver calls per op: wrap every driver function with a counter
    cu = driver.init()
    counts: collections.Counter = collections.Counter()
    originals = {}
    for name in dir(cu):
        f = getattr(cu, name)
        if name.startswith("cu") and callable(f):
            originals[name] = f

            def counted(*a, _f=f, _n=name, **k):
                counts[_n] += 1
                return _f(*a, **k)

            try:
                setattr(cu, name, counted)
            except (AttributeError, TypeError):  # a module that refuses: count nothing there
                originals.pop(name)
    for fn in (batched, synced):
        counts.clear()
        fn(1000)
        log.info("%-8s driver calls per op: %s", fn.__name__,
                 {k: v / 1000 for k, v in counts.most_common(8)})
    for name, f in originals.items():
        setattr(cu, name, f)

    for fn in (batched, synced):
        prof = cProfile.Profile()
        prof.enable()
        fn(args.ops)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        log.info("---- %s: top functions by own time (%d ops)\n%s", fn.__name__, args.ops,
                 buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
