"""Issue 15's CPU-backend row: a lazy chain of 20,000 ``y = y + b`` (1,024 float32) on the CPU,
evaluated once; best of 9 chains in one process, split into building the graph and evaluating it.

    python benchmarks/cpu_chain.py pycudamlx.core     # or mlx.core (real MLX's CPU build)

Run the two alternately, several times: the figures of both move with the machine's load.
"""

from __future__ import annotations

import importlib
import sys
import time

N = 20_000


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "pycudamlx.core"
    mx = importlib.import_module(name)
    mx.set_default_device(mx.cpu)
    b = mx.full((1024,), 0.001)
    mx.eval(b)
    best = None
    for _ in range(9):
        y = mx.ones((1024,))
        mx.eval(y)
        t0 = time.perf_counter()
        for _ in range(N):
            y = y + b
        t1 = time.perf_counter()
        mx.eval(y)
        t2 = time.perf_counter()
        if best is None or t2 - t0 < best[0] + best[1]:
            best = (t1 - t0, t2 - t1)
    build, ev = best
    print(f"{name} {(build + ev) / N * 1e6:.2f} us/op (build {build / N * 1e6:.2f}, eval "
          f"{ev / N * 1e6:.2f}) {y[0].item()}")


if __name__ == "__main__":
    main()
