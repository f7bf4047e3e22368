"""Stage and variant timings for the onesweep sort of 2^24 float32 on a GPU.

Times the shipped mx.sort and CuPy's sort, then each variant (sort.cu defines over the shipped
ones, VARIANTS below: keys per thread, blocks per SM, tiles per upsweep block, look-back window,
matching) with the launch sequence cut after each stage (zeroing, upsweep, the four passes, the
fix-up): a stage's cost is the difference between two cuts. bench.py's timing method (launches
back to back, one queued ahead, median of 3); every variant's full result is checked against
numpy first (ablation variants report WRONG on purpose).

    python scripts/tune_sort.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycudamlx import dtypes as dt  # noqa: E402
from pycudamlx.backend.cuda import array as ga, compiler, driver, elementwise  # noqa: E402
from pycudamlx.backend.cuda import registry, sorting, stream as st  # noqa: E402
from pycudamlx.backend.cuda.elementwise import _ptr  # noqa: E402

log = logging.getLogger("tune")

#: Each variant: sort.cu defines over the shipped ones. ONESWEEP_ABLATE variants give wrong
#: results on purpose (no look-back 1, no digit groups 2, writes in tile order 4): their time
#: differences place a pass's cost.
BASE = {"ONESWEEP_ITEMS": 16, "ONESWEEP_MIN_BLOCKS": 4, "ONESWEEP_UP_TILES": 4,
        "ONESWEEP_LOOKBACK": 2, "ONESWEEP_SLEEP": 0, "ONESWEEP_UP_MATCH": 0, "SORT_HW_MATCH": 2,
        "ONESWEEP_FEW_DIGITS": 8, "ONESWEEP_ABLATE": 0}
VARIANTS = [{}, {"SORT_HW_MATCH": 0}, {"SORT_HW_MATCH": 1}, {"ONESWEEP_LOOKBACK": 4},
            {"ONESWEEP_LOOKBACK": 1}, {"ONESWEEP_SLEEP": 32}, {"ONESWEEP_ITEMS": 20,
                                                               "ONESWEEP_MIN_BLOCKS": 3},
            {"ONESWEEP_UP_MATCH": 8}, {"ONESWEEP_ABLATE": 1}, {"ONESWEEP_ABLATE": 2}]
STAGES = ["zero", "upsweep", "pass 0", "pass 1", "pass 2", "pass 3", "fix"]


def main() -> int:
    import bench

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = driver.get_device(0)
    s = st.default_stream(dev)
    n = 1 << 24
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    want = np.sort(host)

    def timed(fn, reps: int = 20) -> float:
        return bench._pipelined_ms(fn, lambda e: e.record(s),
                                   lambda: (st.TimingEvent(dev), st.TimingEvent(dev)), reps)

    import pycudamlx.core as mx
    xm = mx.array(host)
    mx.eval(xm)
    log.info("base: %s", BASE)
    log.info("%-50s %8.2f Gkeys/s", "mx.sort (shipped)", n / timed(lambda: mx.eval(mx.sort(xm)))
             / 1e6)
    peers = bench.load_impls(["cupy"])
    if "cupy" in peers:
        cp = peers["cupy"].cp
        c = cp.asarray(host)
        log.info("%-50s %8.2f Gkeys/s", "cupy.sort", n / peers["cupy"].time_gpu(
            lambda: cp.sort(c), 10) / 1e6)
        del c

    x = ga.from_numpy(host, dt.float32, s)
    out = ga.empty((n,), dt.float32, s)
    base = registry.sort_module("float32")
    for variant in VARIANTS:
        defs = {**BASE, **variant}
        defines = "".join(f"#define {k} {v}\n" for k, v in defs.items())
        label = " ".join(f"{k.split('_', 1)[1].lower()}={v}" for k, v in variant.items()) or "base"
        spec = registry.ModuleSpec("tune.sort." + "_".join(str(v) for v in defs.values()), "tune",
                                   defines + base.source, base.kernels, ("float32",))
        mod = compiler.load(spec, dev)
        tile = 256 * defs["ONESWEEP_ITEMS"]
        tiles = -(-n // tile)
        status_words = tiles * 256
        zeroed = sorting._scratch((1024 + 4 + 4 + 4 * status_words,), dt.uint32, s)
        zp = _ptr(zeroed)
        hist, counters, stats = zp, zp + 4096, zp + 4096 + 16
        status = stats + 16
        tile_counts = sorting._scratch((tiles,), dt.uint32, s)
        keys = [sorting._scratch((n,), dt.uint32, s) for _ in range(2)]
        chunks = -(-tiles // defs["ONESWEEP_UP_TILES"])

        def run(stages: int) -> None:
            elementwise.fill(zeroed, b"\0\0\0\0", s)
            if stages > 1:
                mod["onesweep_upsweep<float>"](chunks, 256, s, _ptr(x), hist, _ptr(tile_counts),
                                               stats, n, tiles)
            src = _ptr(x)
            for p, variant in enumerate(("true, false", "false, false", "false, false",
                                         "false, true")):
                if stages <= 2 + p:
                    return
                kout = _ptr(keys[p % 2]) if p < 3 else 0
                mod[f"onesweep_pass<float, {variant}>"](
                    tiles, 256, s, src, kout, _ptr(out) if p == 3 else 0, hist,
                    status + 4 * p * status_words, counters + 4 * p, n, p, tiles, 0)
                src = kout
            if stages > 6:
                mod["onesweep_fix<float>"](tiles, 256, s, _ptr(x), _ptr(out), _ptr(tile_counts),
                                           stats, n, tiles, 0)

        run(len(STAGES))
        s.synchronize()
        ok = np.array_equal(out.to_numpy(), want)
        cuts = [timed(lambda k=k: run(k)) for k in range(1, len(STAGES) + 1)]
        parts = [cuts[0]] + [b - a for a, b in zip(cuts, cuts[1:])]
        log.info("%-50s %8.2f Gkeys/s%s  | %s", f"onesweep {label}", n / cuts[-1] / 1e6,
                 "" if ok else " WRONG",
                 "  ".join(f"{name} {ms * 1e3:.0f}us" for name, ms in zip(STAGES, parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
