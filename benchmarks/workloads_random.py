"""mx.random workloads for bench.py: a sanity row (no issue bar) for the fused threefry uniform.

uniform of 2**28 float32 in [0, 1): TB/s written (1 GiB of output per draw). Peers draw with
their own generators (torch: Philox, CuPy: cuRAND), so their values are checked for range and
moments only; ours is checked bit for bit against threefry computed on the host at both ends of
the array, and MLX-CUDA (the same threefry) must give the very same bits.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np
from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

N = 1 << 28
_EDGE = 4096


def _expected_edges(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """MLX's uniform bits for the first and last _EDGE elements, computed on the host."""
    from pycudamlx.graph.primitives.random import threefry2x32

    half, odd = n // 2, n % 2
    i = np.arange(_EDGE, dtype=np.uint32)
    head, _ = threefry2x32(seed >> 32, seed & 0xFFFFFFFF, i, i + np.uint32(half + odd))
    j = np.arange(n - _EDGE, n, dtype=np.uint64)
    _, tail = threefry2x32(seed >> 32, seed & 0xFFFFFFFF,
                           (j - np.uint64(half + odd)).astype(np.uint32), j.astype(np.uint32))

    def unit(w: np.ndarray) -> np.ndarray:
        u = w.astype(np.float32) / np.float32(4294967295.0)
        return np.minimum(u, np.nextafter(np.float32(1), np.float32(0)))

    return unit(head), unit(tail)


def _moments_ok(x: np.ndarray) -> bool:
    return bool(x.min() >= 0.0 and x.max() < 1.0 and abs(x.mean() - 0.5) < 2e-3
                and abs(x.std() - 0.2887) < 2e-3)


def uniform_workload(impls: dict[str, Any], reps: int, seed: int = 7) -> dict[str, float]:
    """TB/s written by uniform(shape=(2**28,), float32)."""
    nbytes = N * 4
    head, tail = _expected_edges(seed, N)
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            exact = name in ("pycudamlx", "mlx-cuda")
            if name == "pycudamlx":
                mx = impl.mx
                key = mx.random.key(seed)

                def draw() -> Any:
                    return mx.random.uniform(shape=(N,), key=key, stream=mx.gpu)
            elif name == "torch":
                t = impl.torch
                gen = t.Generator(device="cuda")
                gen.manual_seed(seed)

                def draw() -> Any:
                    return t.rand(N, device="cuda", dtype=t.float32, generator=gen)
            elif name == "cupy":
                cp = impl.cp
                rs = cp.random.RandomState(seed)

                def draw() -> Any:
                    return rs.random_sample(N, dtype=cp.float32)
            else:
                m = impl.mx
                mkey = m.random.key(seed)

                def draw() -> Any:
                    return m.random.uniform(shape=(N,), key=mkey, stream=m.gpu)
            ms = impl.time_gpu(draw, reps)
            out = draw()
            if name == "pycudamlx":
                got = np.asarray(out)
            elif name == "torch":
                got = out.cpu().numpy()
            elif name == "cupy":
                got = impl.cp.asnumpy(out)
            else:
                got = np.array(out)
            del out
        except Exception as exc:  # a peer failing is reported, not fatal
            log.warning("%s failed: %r", name, exc)
            continue
        if exact:
            ok = (np.array_equal(got[:_EDGE].view(np.uint32), head.view(np.uint32))
                  and np.array_equal(got[-_EDGE:].view(np.uint32), tail.view(np.uint32)))
        else:
            ok = _moments_ok(got[:: 1 << 8])
        if not ok:
            log.error("%s gave a wrong result for uniform", name)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = nbytes / (ms * 1e-3) / 1e12
        del got
        _free(impls)
    return results


WORKLOADS: dict[str, tuple[str, str, Callable[..., dict[str, float]]]] = {
    "random_uniform_f32": ("uniform 2^28 float32 (threefry; sanity row, no bar)", "TB/s",
                           uniform_workload),
}
