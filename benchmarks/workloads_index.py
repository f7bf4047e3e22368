"""Indexing workloads for bench.py: a random gather (the issue's bar) and a scatter-add row.

gather_2e24: ``mx.take(src, idx)`` with 2^24 int32 indices drawn uniformly from a 2^26-element
float32 source. TB/s counts the bytes the op must move at least: the indices read (64 MiB),
the gathered elements read (64 MiB) and the output written (64 MiB), as FIELD-NOTES counts
CuPy's ~0.5 TB/s. The bar: >= the best peer (torch src[idx], CuPy cp.take, MLX-CUDA mx.take).

scatter_add_2e24: ``x.at[idx].add(v)`` (2^24 int32 indices with duplicates into 2^24 float32,
out of place): GB/s counting indices + updates read and the destination read and written once.
A sanity row against torch index_add, cupyx.scatter_add on a copy, and MLX-CUDA's own ``.at``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

N_SRC = 1 << 26
N_IDX = 1 << 24


def _run(impls: dict[str, Any], reps: int, make: dict[str, Callable[[Any], tuple]],
         check: Callable[[np.ndarray], bool], nbytes: int, scale: float, what: str
         ) -> dict[str, float]:
    """For each implementation: build (fn, to_numpy) with ``make[name](impl)``, time fn, check
    its result; bytes / median time, times ``scale`` (1e-12: TB/s, 1e-9: GB/s)."""
    results: dict[str, float] = {}
    for name, impl in impls.items():
        if name not in make:
            continue
        try:
            fn, to_numpy = make[name](impl)
            ms = impl.time_gpu(fn, reps)
            got = to_numpy(fn())
        except Exception as exc:  # a peer that cannot run the op is reported, not fatal
            log.warning("%s failed on %s: %r", name, what, exc)
            continue
        if not check(np.asarray(got)):
            log.error("%s gave a wrong result for %s", name, what)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = nbytes / (ms * 1e-3) * scale
        del fn, got
        _free(impls)
    return results


def gather_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """TB/s of out = src[idx] (indices + gathered elements read, output written)."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal(N_SRC, dtype=np.float32)
    idx = rng.integers(0, N_SRC, N_IDX, dtype=np.int32)
    expected = src[idx]
    nbytes = idx.nbytes + 2 * expected.nbytes

    def ours(impl: Any) -> tuple:
        mx = impl.mx
        s, i = mx.array(src), mx.array(idx)
        mx.eval(s, i)
        return (lambda: mx.take(s, i)), np.asarray

    def torch(impl: Any) -> tuple:
        t = impl.torch
        s = t.from_numpy(src).cuda()
        i = t.from_numpy(idx).cuda()
        try:
            s[i]                      # int32 indices where this torch accepts them
        except Exception:
            i = i.long()              # converted once, outside the timing
        return (lambda: s[i]), (lambda r: r.cpu().numpy())

    def cupy(impl: Any) -> tuple:
        cp = impl.cp
        s, i = cp.asarray(src), cp.asarray(idx)
        return (lambda: cp.take(s, i)), cp.asnumpy

    def mlx(impl: Any) -> tuple:
        m = impl.mx
        s, i = m.array(src), m.array(idx)
        m.eval(s, i)
        return (lambda: m.take(s, i)), np.array

    return _run(impls, reps, {"pycudamlx": ours, "torch": torch, "cupy": cupy, "mlx-cuda": mlx},
                lambda got: np.array_equal(got, expected), nbytes, 1e-12, "gather")


def scatter_add_workload(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """GB/s of y = x.at[idx].add(v) (indices and updates read, destination read + written)."""
    rng = np.random.default_rng(1)
    n = N_IDX
    base = rng.standard_normal(n, dtype=np.float32)
    idx = rng.integers(0, n, n, dtype=np.int32)
    vals = rng.standard_normal(n, dtype=np.float32)
    expected = base.astype(np.float64)
    np.add.at(expected, idx, vals.astype(np.float64))
    nbytes = idx.nbytes + vals.nbytes + 2 * base.nbytes

    def ours(impl: Any) -> tuple:
        mx = impl.mx
        x, i, v = mx.array(base), mx.array(idx), mx.array(vals)
        mx.eval(x, i, v)
        return (lambda: x.at[i].add(v)), np.asarray

    def torch(impl: Any) -> tuple:
        t = impl.torch
        x = t.from_numpy(base).cuda()
        i = t.from_numpy(idx).cuda().long()
        v = t.from_numpy(vals).cuda()
        return (lambda: x.index_add(0, i, v)), (lambda r: r.cpu().numpy())

    def cupy(impl: Any) -> tuple:
        cp = impl.cp
        import cupyx

        x, i, v = cp.asarray(base), cp.asarray(idx), cp.asarray(vals)

        def fn() -> Any:
            y = x.copy()
            cupyx.scatter_add(y, i, v)
            return y

        return fn, cp.asnumpy

    def mlx(impl: Any) -> tuple:
        m = impl.mx
        x, i, v = m.array(base), m.array(idx), m.array(vals)
        m.eval(x, i, v)
        return (lambda: x.at[i].add(v)), np.array

    return _run(impls, reps, {"pycudamlx": ours, "torch": torch, "cupy": cupy, "mlx-cuda": mlx},
                lambda got: np.allclose(got, expected, rtol=1e-4, atol=1e-4), nbytes, 1e-9,
                "scatter_add")


WORKLOADS: dict[str, tuple[str, str, Callable[..., dict[str, float]]]] = {
    "gather_2e24": ("take: 2^24 int32 idx into 2^26 float32", "TB/s", gather_workload),
    "scatter_add_2e24": ("x.at[idx].add(v): 2^24 int32 idx into 2^24 float32", "GB/s",
                         scatter_add_workload),
}
