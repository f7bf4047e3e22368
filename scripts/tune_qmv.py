"""Decode-sized quantized_matmul (qmv.cu) on a GPU: one or two output columns per warp, over
the weight shapes of 7-8B models, against the bytes the packed weights hold and the copy
bandwidth. bench.py's timing method; every result is checked against numpy.

    python scripts/tune_qmv.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

log = logging.getLogger("tune")


def main() -> int:
    import bench
    import pycudamlx.core as mx
    from pycudamlx.backend.cuda import quantized

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    ours = bench.load_impls(["pycudamlx"])["pycudamlx"]
    rng = np.random.default_rng(0)
    for n_out, k_len in ((4096, 4096), (14336, 4096), (4096, 14336)):
        for bits in (4, 8):
            w = mx.array(rng.standard_normal((n_out, k_len)).astype(np.float16))
            q = mx.quantize(w, 64, bits)
            mx.eval(q)
            deq = np.array(mx.dequantize(*q, 64, bits, dtype=mx.float32)).astype(np.float64)
            packed = q[0].nbytes + q[1].nbytes + q[2].nbytes
            for rows in (1, 8):
                x = mx.array(rng.standard_normal((rows, k_len)).astype(np.float16))
                want = np.array(x.astype(mx.float32)).astype(np.float64) @ deq.T
                for columns in (1, 2):
                    quantized._plans.clear()
                    quantized._TWO_COLUMNS_FROM = 0 if columns == 2 else 1 << 62
                    fn = lambda: mx.quantized_matmul(x, *q, group_size=64, bits=bits)  # noqa: E731
                    got = np.array(fn().astype(mx.float32))
                    ok = np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
                    ms = ours.time_gpu(fn, 50)
                    log.info("N=%6d K=%5d bits=%d rows=%d columns=%d: %7.1f us  %5.2f TB/s of "
                             "packed weights%s", n_out, k_len, bits, rows, columns, ms * 1e3,
                             packed / ms / 1e9, "" if ok else "  WRONG")
            del w, q, deq
    return 0


if __name__ == "__main__":
    sys.exit(main())
