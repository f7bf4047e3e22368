"""Where the time of mx.sum over 2^28 float32 goes, on a GPU, against CuPy and torch.

mx.sum is the shipped pipeline (graph node, allocations, reduce_row split over blocks, then
reduce_partials). The same two kernels are then launched directly, together and the first one
alone, over block sizes and waves of blocks, so the cost of the op layer, of the second pass
and of the launch shape can be read apart. bench.py's timing method; every variant's result is
checked against numpy.

    python scripts/tune_sum.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycudamlx import dtypes as dt  # noqa: E402
from pycudamlx.backend.cuda import array as ga, compiler, driver, reduce  # noqa: E402
from pycudamlx.backend.cuda import registry, stream as st  # noqa: E402

log = logging.getLogger("tune")


def main() -> int:
    import bench

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = driver.get_device(0)
    s = st.default_stream(dev)
    sms = dev.properties.multiprocessors
    n = 1 << 28
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    want = float(host.astype(np.float64).sum())
    tol = 1e-4 * float(np.abs(host).sum())
    nbytes = n * 4

    def timed(fn, reps: int = 20) -> float:
        return bench._pipelined_ms(fn, lambda e: e.record(s),
                                   lambda: (st.TimingEvent(dev), st.TimingEvent(dev)), reps)

    def report(label: str, ms: float, ok: bool = True) -> None:
        log.info("%-55s %6.3f TB/s%s", label, nbytes / ms / 1e9, "" if ok else " WRONG")

    import pycudamlx.core as mx
    xm = mx.array(host)
    mx.eval(xm)
    report("mx.sum (shipped pipeline)", timed(lambda: mx.eval(mx.sum(xm))),
           abs(mx.sum(xm).item() - want) <= tol)
    peers = bench.load_impls(["torch", "cupy"])
    if "cupy" in peers:
        cp = peers["cupy"].cp
        c = cp.asarray(host)
        report("cupy", peers["cupy"].time_gpu(lambda: c.sum(), 20))
        del c
    if "torch" in peers:
        torch = peers["torch"].torch
        t = torch.from_numpy(host).cuda()
        report("torch", peers["torch"].time_gpu(lambda: t.sum(), 20))
        del t

    x = ga.from_numpy(host, dt.float32, s)
    out = ga.empty((1,), dt.float32, s)
    mod = compiler.module_for(registry.reduce_module, ("float32",), dev)
    row_e, _, part_e = registry.reduce_expressions("sum", "float32")
    row, fin = mod[row_e], mod[part_e]
    for block in (256, 512, 1024):
        resident = reduce._resident_blocks(row, block)
        for waves in (1, 4, 8, 16):
            splits = min(sms * resident * waves, n // (block * 16))
            part = ga.empty((splits,), dt.float32, s)
            pp, op = part.buffer.ptr + part.offset, out.buffer.ptr + out.offset
            xp = x.buffer.ptr + x.offset

            def first() -> None:
                row(splits, block, s, xp, op, pp, 0, 1, n, splits, 0, 1, 1.0)

            def both() -> None:
                first()
                fin(1, reduce.BLOCK, s, pp, op, 0, 1, splits, 1.0)

            both()
            ok = abs(float(out.to_numpy(copy=True)[0]) - want) <= tol
            report(f"block={block} waves={waves} ({resident}/SM) both kernels", timed(both), ok)
            report(f"block={block} waves={waves} reduce_row alone", timed(first))
    return 0


if __name__ == "__main__":
    sys.exit(main())
