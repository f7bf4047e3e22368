"""Sorting workloads for bench.py: sort and argsort of 2^24 float32 (the issue's bars: sort >= 0.8
of CuPy's, argsort >= 0.8 of torch's), and many short rows (65,536 rows of 256 float32, sorted
along the last axis: the block-local kernel). Unit: Gkeys/s (keys sorted per second).

Each implementation sorts the same random input; every result is checked against numpy
(argsort through the values it gathers, since ties among random floats are rare but possible).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")


def _sort_workload(impls: dict[str, Any], reps: int, shape: tuple[int, ...], arg: bool
                   ) -> dict[str, float]:
    """Gkeys/s of sort (or argsort) of a float32 array of ``shape`` along its last axis."""
    rng = np.random.default_rng(0)
    host = rng.standard_normal(shape, dtype=np.float32)
    expected = np.sort(host, axis=-1)
    nkeys = host.size
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            if name == "pycudamlx":
                mx = impl.mx
                a = mx.array(host)
                mx.eval(a)
                fn: Callable[[], Any] = (lambda: mx.argsort(a)) if arg else (lambda: mx.sort(a))
                ms = impl.time_gpu(fn, reps)
                got = np.asarray(fn())
            elif name == "torch":
                t = impl.torch
                a = t.from_numpy(host).to("cuda")
                fn = (lambda: t.argsort(a, dim=-1)) if arg else (lambda: t.sort(a, dim=-1)[0])
                ms = impl.time_gpu(fn, reps)
                got = fn().cpu().numpy()
            elif name == "cupy":
                cp = impl.cp
                a = cp.asarray(host)
                fn = (lambda: cp.argsort(a, axis=-1)) if arg else (lambda: cp.sort(a, axis=-1))
                ms = impl.time_gpu(fn, reps)
                got = cp.asnumpy(fn())
            else:
                m = impl.mx
                a = m.array(host)
                m.eval(a)
                fn = (lambda: m.argsort(a)) if arg else (lambda: m.sort(a))
                ms = impl.time_gpu(fn, reps)
                got = np.array(fn())
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        if arg:
            got = np.take_along_axis(host, np.asarray(got).astype(np.int64), axis=-1)
        if not np.array_equal(np.asarray(got, dtype=np.float32), expected):
            log.error("%s gave a wrong result for %s %s", name, "argsort" if arg else "sort",
                      shape)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = nkeys / (ms * 1e-3) / 1e9
        del a, got, fn
        _free(impls)
    return results


WORKLOADS: dict[str, tuple[str, str, Callable[..., dict[str, float]]]] = {
    "sort_f32": ("sort 2^24 float32", "Gkeys/s",
                 lambda i, r: _sort_workload(i, r, (1 << 24,), arg=False)),
    "argsort_f32": ("argsort 2^24 float32", "Gkeys/s",
                    lambda i, r: _sort_workload(i, r, (1 << 24,), arg=True)),
    "sort_rows_f32": ("sort (65536, 256) float32, last axis", "Gkeys/s",
                      lambda i, r: _sort_workload(i, r, (65536, 256), arg=False)),
    "argsort_rows_f32": ("argsort (65536, 256) float32, last axis", "Gkeys/s",
                         lambda i, r: _sort_workload(i, r, (65536, 256), arg=True)),
}
