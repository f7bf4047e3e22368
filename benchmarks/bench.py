"""Benchmarks: pycudamlx against torch, CuPy and MLX's CUDA build, measured in one run.

Bandwidth-bound ops are reported as TB/s (bytes read + written over median time) and as a
fraction of the device-to-device copy bandwidth measured in the same run (cuMemcpyDtoD on 1 GiB).
GPU times come from CUDA events around --reps back-to-back ops on the implementation's stream,
one op already queued before the start event so that the GPU never waits for the host (median
of three such batches, after warm-up); MLX's CUDA build exposes no events, so it is timed the
same way by the host clock (async_eval each op, one synchronize). Per-op overhead is host time per op of
``x = x + b`` on 1,024 elements, with a sync after every op and with one sync after 10,000.

    python benchmarks/bench.py --json results.json        # all workloads, every peer present
    python benchmarks/bench.py --only add_f32 --reps 5    # one workload
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # peer_memory, for the workloads too

from peer_memory import free as _free  # noqa: E402

log = logging.getLogger("bench")

GiB = 1 << 30


#: Timed batches per measurement (the median is reported).
_SAMPLES = 3


def _pipelined_ms(launch: Callable[[], Any], record: Callable[[Any], None],
                  events: Callable[[], tuple[Any, Any]], reps: int) -> float:
    """Milliseconds per op of ``reps`` back-to-back launches between two CUDA events (median of
    ``_SAMPLES`` batches), the same method for every implementation.

    One op is queued before the start event, so the GPU is busy while the host queues the
    rest: the figure is the device's time per op, free of the Python launch cost that a
    per-launch event pair would add to a short kernel (the per-op rows report that cost)."""
    launch()
    samples = []
    for _ in range(_SAMPLES):
        e0, e1 = events()
        first = launch()
        record(e0)
        for _ in range(reps):
            out = launch()
        record(e1)
        e1.synchronize()
        samples.append(_elapsed_ms(e0, e1) / reps)
        del first, out
    return statistics.median(samples)


def _elapsed_ms(e0: Any, e1: Any) -> float:
    """Milliseconds between two recorded events of any of the implementations."""
    if hasattr(e0, "elapsed_ms"):
        return e0.elapsed_ms(e1)  # ours
    if hasattr(e0, "elapsed_time"):
        return e0.elapsed_time(e1)  # torch
    import cupy

    return cupy.cuda.get_elapsed_time(e0, e1)


# ------------------------------------------------------------------------------------------------
# Implementations: each gives (prepare(np_arrays) -> handles, run(handles) -> result, timer)


class Ours:
    name = "pycudamlx"

    def __init__(self) -> None:
        import pycudamlx.core as mx
        from pycudamlx.backend.cuda import driver, stream as st

        self.mx = mx
        self.dev = driver.get_device(0)
        self.stream = mx.default_stream(mx.gpu).cuda_stream()
        self.st = st

    def time_gpu(self, fn: Callable[[], Any], reps: int) -> float:
        mx, s = self.mx, self.stream

        def launch() -> Any:
            out = fn()
            mx.eval(out)  # queues the kernels; the host does not wait
            return out

        return _pipelined_ms(launch, lambda e: e.record(s), self._events, reps)

    def _events(self) -> tuple[Any, Any]:
        return self.st.TimingEvent(self.dev), self.st.TimingEvent(self.dev)

    def sync(self) -> None:
        self.stream.synchronize()


class Torch:
    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def time_gpu(self, fn: Callable[[], Any], reps: int) -> float:
        t = self.torch

        def events() -> tuple[Any, Any]:
            return t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)

        return _pipelined_ms(fn, lambda e: e.record(), events, reps)

    def sync(self) -> None:
        self.torch.cuda.synchronize()


class Cupy:
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cp = cupy

    def time_gpu(self, fn: Callable[[], Any], reps: int) -> float:
        cp = self.cp
        return _pipelined_ms(fn, lambda e: e.record(), lambda: (cp.cuda.Event(), cp.cuda.Event()),
                             reps)

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()


class MlxCuda:
    name = "mlx-cuda"

    def __init__(self) -> None:
        import mlx.core as mlx

        if not mlx.is_available(mlx.gpu):
            raise RuntimeError("MLX has no GPU backend here")
        self.mx = mlx

    def time_gpu(self, fn: Callable[[], Any], reps: int) -> float:
        """Host clock around ``reps`` back-to-back ops (async_eval queues each without waiting)
        and one synchronize, after one op already queued: MLX has no events to record."""
        mx = self.mx
        mx.eval(fn())
        mx.synchronize()
        samples = []
        for _ in range(_SAMPLES):
            first = fn()
            mx.async_eval(first)
            t0 = time.perf_counter()
            for _ in range(reps):
                out = fn()
                mx.async_eval(out)
            mx.synchronize()
            samples.append((time.perf_counter() - t0) * 1e3 / reps)
            del first, out
        return statistics.median(samples)

    def sync(self) -> None:
        self.mx.synchronize()


def load_impls(names: list[str]) -> dict[str, Any]:
    impls = {}
    for cls in (Ours, Torch, Cupy, MlxCuda):
        if names and cls.name not in names:
            continue
        try:
            impls[cls.name] = cls()
        except Exception as exc:  # a peer that is not installed is reported, not fatal
            log.warning("%s unavailable: %s", cls.name, exc)
    return impls


# ------------------------------------------------------------------------------------------------
# Workloads


def copy_bandwidth(impls: dict[str, Any], reps: int) -> float:
    """cuMemcpyDtoD of 1 GiB through the driver (bytes read + written): the reference."""
    from pycudamlx.backend.cuda import driver, memory, stream as st

    dev = driver.get_device(0)
    s = st.default_stream(dev)
    cu = driver.init()
    a = memory.allocate(GiB, dev, memory.DEVICE, s)
    b = memory.allocate(GiB, dev, memory.DEVICE, s)
    memory.memset(a, 7, s)
    ms = _pipelined_ms(lambda: driver.call(cu.cuMemcpyDtoDAsync, b.ptr, a.ptr, GiB, s.handle),
                       lambda e: e.record(s), lambda: (st.TimingEvent(dev), st.TimingEvent(dev)),
                       reps)
    a.free()
    b.free()
    return 2 * GiB / (ms * 1e-3) / 1e12


def _binary_workload(impls: dict[str, Any], reps: int, dtype: str, shape_a: tuple[int, ...],
                     shape_b: tuple[int, ...], transpose_a: bool = False) -> dict[str, float]:
    """TB/s of c = a + b (bytes: a and b read once each, c written once)."""
    rng = np.random.default_rng(0)
    np_dtype = {"float32": np.float32, "float16": np.float16}.get(dtype, np.float32)
    host_a = rng.standard_normal(shape_a, dtype=np.float32).astype(np_dtype)
    host_b = rng.standard_normal(shape_b, dtype=np.float32).astype(np_dtype)
    out_shape = np.broadcast_shapes(host_a.T.shape if transpose_a else host_a.shape, host_b.shape)
    nbytes = (host_a.nbytes + host_b.nbytes
              + int(np.prod(out_shape)) * np.dtype(np_dtype).itemsize)
    if dtype == "bfloat16":
        nbytes = nbytes // 2
    expected = None
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            if name == "pycudamlx":
                mx = impl.mx
                a = mx.array(host_a)
                b = mx.array(host_b)
                if dtype == "bfloat16":
                    a, b = a.astype(mx.bfloat16), b.astype(mx.bfloat16)
                mx.eval(a, b)
                if transpose_a:
                    a_op = mx.transpose(a) if hasattr(mx, "transpose") else None
                    if a_op is None:
                        continue
                else:
                    a_op = a
                ms = impl.time_gpu(lambda: mx.add(a_op, b), reps)
                got = np.asarray(mx.add(a_op, b).astype(mx.float32) if dtype == "bfloat16"
                                 else mx.add(a_op, b))
            elif name == "torch":
                t = impl.torch
                tdt = {"float32": t.float32, "float16": t.float16, "bfloat16": t.bfloat16}[dtype]
                a = t.from_numpy(host_a.astype(np.float32)).to("cuda", tdt)
                b = t.from_numpy(host_b.astype(np.float32)).to("cuda", tdt)
                a_op = a.T if transpose_a else a
                ms = impl.time_gpu(lambda: a_op + b, reps)
                got = (a_op + b).float().cpu().numpy()
            elif name == "cupy":
                if dtype == "bfloat16":
                    continue  # CuPy has no bfloat16
                cp = impl.cp
                a, b = cp.asarray(host_a), cp.asarray(host_b)
                a_op = a.T if transpose_a else a
                ms = impl.time_gpu(lambda: a_op + b, reps)
                got = cp.asnumpy(a_op + b)
            else:
                m = impl.mx
                a = m.array(host_a)
                b = m.array(host_b)
                if dtype == "bfloat16":
                    a, b = a.astype(m.bfloat16), b.astype(m.bfloat16)
                a_op = m.transpose(a) if transpose_a else a
                m.eval(a_op, b)
                ms = impl.time_gpu(lambda: a_op + b, reps)
                got = np.array((a_op + b).astype(m.float32))
        except Exception as exc:
            log.warning("%s failed: %r", name, exc)
            continue
        got = np.asarray(got, dtype=np.float32)
        if expected is None:
            ref_a = host_a.T if transpose_a else host_a
            expected = ref_a.astype(np.float32) + host_b.astype(np.float32)
        tol = 1e-5 if dtype == "float32" else 2e-2
        if not np.allclose(got, expected, rtol=tol, atol=tol):
            log.error("%s gave a wrong result for add %s", name, dtype)
            results[name + " (WRONG)"] = float("nan")
            continue
        results[name] = nbytes / (ms * 1e-3) / 1e12
        del a, b, a_op, got
        _free(impls)
    return results


def per_op_overhead(impls: dict[str, Any], n_ops: int, sync_every: bool) -> dict[str, float]:
    """Host microseconds per ``x = x + b`` on 1,024 float32 elements."""
    host = np.random.default_rng(1).standard_normal(1024, dtype=np.float32)
    results: dict[str, float] = {}
    for name, impl in impls.items():
        try:
            if name == "pycudamlx":
                mx = impl.mx
                x, b = mx.array(host), mx.array(host)
                mx.eval(mx.add(x, b))

                def step_sync() -> None:
                    nonlocal x
                    x = mx.add(x, b)
                    mx.eval(x)
                    impl.sync()

                def run_batch() -> None:
                    nonlocal x
                    for _ in range(n_ops):
                        x = mx.add(x, b)
                    mx.eval(x)
                    impl.sync()
            elif name == "torch":
                t = impl.torch
                x = t.from_numpy(host).cuda()
                b = x.clone()

                def step_sync() -> None:
                    nonlocal x
                    x = x + b
                    t.cuda.synchronize()

                def run_batch() -> None:
                    nonlocal x
                    for _ in range(n_ops):
                        x = x + b
                    t.cuda.synchronize()
            elif name == "cupy":
                cp = impl.cp
                x = cp.asarray(host)
                b = x.copy()

                def step_sync() -> None:
                    nonlocal x
                    x = x + b
                    cp.cuda.Device().synchronize()

                def run_batch() -> None:
                    nonlocal x
                    for _ in range(n_ops):
                        x = x + b
                    cp.cuda.Device().synchronize()
            else:
                m = impl.mx
                x, b = m.array(host), m.array(host)

                def step_sync() -> None:
                    nonlocal x
                    x = x + b
                    m.eval(x)
                    m.synchronize()

                def run_batch() -> None:
                    nonlocal x
                    for _ in range(n_ops):
                        x = x + b
                    m.eval(x)
                    m.synchronize()
            if sync_every:
                for _ in range(200):
                    step_sync()
                t0 = time.perf_counter()
                for _ in range(n_ops):
                    step_sync()
                results[name] = (time.perf_counter() - t0) / n_ops * 1e6
            else:
                run_batch()
                if name == "pycudamlx":  # steady state: fused programs built (first sight
                    from pycudamlx.backend.cuda import fused  # compiles in the background)

                    fused.wait()
                    run_batch()
                samples = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    run_batch()
                    samples.append((time.perf_counter() - t0) / n_ops * 1e6)
                results[name] = statistics.median(samples)
        except Exception as exc:
            log.warning("%s failed in per-op overhead: %r", name, exc)
    return results


# ------------------------------------------------------------------------------------------------
# Managed memory: host-written data read by the GPU, and GPU results read by numpy (issue 5)


def _transfer_bytes() -> int:
    """4 GiB, or less where the GPU has not that much free twice over (an input and an output
    of managed memory must fit, with room to spare: never more managed memory than is free)."""
    from pycudamlx.backend.cuda import driver

    free, _ = driver.get_device(0).memory_info()
    room = (free - 2 * GiB) // 2
    n = min(4 * GiB, max(room, 0)) & ~(256 * (1 << 20) - 1)
    if n < 4 * GiB:
        log.warning("managed-memory workloads use %.2f GiB (free GPU memory: %.1f GiB)",
                    n / GiB, free / GiB)
    return n


def _host_write_then_gpu_read(impls: dict[str, Any], reps: int, auto: bool) -> dict[str, float]:
    """GB/s of a GPU op reading all of x (``x.astype(float16)``: reads 4 GiB, writes 2 GiB into a
    cached block) right after the host wrote x into fresh managed memory, as data loaded on the
    host lands there: with automatic prefetch (one cuMemPrefetchAsync, then the kernel) or
    without (the kernel pulls the pages over by faults, as in MLX's CUDA backend). Time: eval +
    synchronize, host clock; the host write is not timed."""
    impl = impls.get("pycudamlx")
    nbytes = _transfer_bytes()
    if impl is None or not nbytes:
        return {}
    from pycudamlx import cuda as pcuda
    from pycudamlx.backend.cuda import array as gpu_array, driver, memory
    from pycudamlx.core.array import from_data

    dev = driver.get_device(0)
    if gpu_array.memory_kind(dev) != memory.MANAGED:
        log.warning("device mode: no managed memory to measure")
        return {}
    mx = impl.mx
    n = nbytes // 4
    host = np.empty(n, np.float32)

    def host_written(value: float) -> Any:
        """A fresh managed block the host wrote (pages on the host), as an mx array."""
        buf = memory.allocate(nbytes, dev, memory.MANAGED)
        host.fill(value)
        memory.parallel_copy(buf.host_view(np.uint8, (nbytes,)), host.view(np.uint8))
        return from_data(gpu_array.GpuArray(buf, 0, (n,), (1,), mx.float32), mx.float32)

    previous = pcuda.set_auto_prefetch(auto)
    try:
        times = []
        for i in range(max(1, min(reps, 3)) + 1):
            x = host_written(1.5 + i)
            t0 = time.perf_counter()
            y = x.astype(mx.float16, stream=mx.gpu)
            mx.eval(y)
            impl.sync()
            times.append(time.perf_counter() - t0)
            if float(y[n - 1].item()) != 1.5 + i:
                log.error("pycudamlx gave a wrong result for host-written x.astype(float16)")
                return {"pycudamlx (WRONG)": float("nan")}
            del x, y
            keep = mx.set_cache_limit(nbytes // 2)  # free x's block (y's smaller one stays)
            mx.set_cache_limit(keep)
    finally:
        pcuda.set_auto_prefetch(previous)
        _free(impls)
        impl.mx.clear_cache()
    return {"pycudamlx": nbytes / statistics.median(times[1:]) / 1e9}


def pinned_host_to_device(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """GB/s of cuMemcpyHtoDAsync from pinned host memory (cuMemHostAlloc) to device memory: the
    bar the automatic prefetch is held to."""
    from pycudamlx.backend.cuda import driver, memory, stream as st

    nbytes = _transfer_bytes()
    if not nbytes:
        return {}
    dev = driver.get_device(0)
    cu = driver.init()
    s = st.default_stream(dev)
    dev.activate()
    pinned = driver.call(cu.cuMemHostAlloc, nbytes, 0)
    dst = memory.allocate(nbytes, dev, memory.DEVICE, s)
    try:
        times = []
        for _ in range(max(1, min(reps, 3)) + 1):
            t0 = time.perf_counter()
            driver.call(cu.cuMemcpyHtoDAsync, dst.ptr, pinned, nbytes, s.handle)
            s.synchronize()
            times.append(time.perf_counter() - t0)
    finally:
        dst.free()
        cu.cuMemFreeHost(pinned)
        memory.clear_cache()
    return {"pycudamlx": nbytes / statistics.median(times[1:]) / 1e9}


def _gpu_result_to_numpy(impls: dict[str, Any], reps: int, auto: bool) -> dict[str, float]:
    """GB/s of ``np.array(y)`` for a GPU-written y: with our host-read path (a device-to-host
    copy through pinned staging buffers, the pages staying on the GPU) or without (numpy reads
    the managed pages through a host view, faulting them over)."""
    impl = impls.get("pycudamlx")
    nbytes = _transfer_bytes()
    if impl is None or not nbytes:
        return {}
    from pycudamlx import cuda as pcuda

    mx = impl.mx
    previous = pcuda.set_auto_prefetch(auto)
    try:
        x = mx.array(np.full(nbytes // 4, 1.5, np.float32))
        mx.eval(x)
        times = []
        for i in range(max(1, min(reps, 3))):
            y = mx.add(x, float(i), stream=mx.gpu)
            mx.eval(y)
            impl.sync()
            t0 = time.perf_counter()
            out = np.array(y)
            times.append(time.perf_counter() - t0)
            if out[-1] != 1.5 + i or out[0] != 1.5 + i:
                log.error("pycudamlx gave a wrong result for np.array(y)")
                return {"pycudamlx (WRONG)": float("nan")}
            del y, out
        del x
    finally:
        pcuda.set_auto_prefetch(previous)
        _free(impls)
        impl.mx.clear_cache()
    return {"pycudamlx": nbytes / statistics.median(times) / 1e9}


def prefetches_in_small_op_loop(impls: dict[str, Any], reps: int) -> dict[str, float]:
    """How many prefetches a loop of 1,000 small ops on resident data issues (must be 0)."""
    impl = impls.get("pycudamlx")
    if impl is None:
        return {}
    from pycudamlx import cuda as pcuda

    mx = impl.mx
    host = np.random.default_rng(2).standard_normal(1024, dtype=np.float32)
    x, b = mx.array(host), mx.array(host)
    x = mx.add(x, b, stream=mx.gpu)
    mx.eval(x)
    before = pcuda.memory_stats()["prefetches"]
    for _ in range(1000):
        x = mx.add(x, b, stream=mx.gpu)
        mx.eval(x)
    impl.sync()
    return {"pycudamlx": float(pcuda.memory_stats()["prefetches"] - before)}


WORKLOADS: dict[str, tuple[str, str, Callable[..., dict[str, float]]]] = {
    "add_f32": ("c = a + b, 2^28 float32", "TB/s",
                lambda i, r: _binary_workload(i, r, "float32", (1 << 28,), (1 << 28,))),
    "add_f16": ("c = a + b, 2^28 float16", "TB/s",
                lambda i, r: _binary_workload(i, r, "float16", (1 << 28,), (1 << 28,))),
    "add_bf16": ("c = a + b, 2^28 bfloat16", "TB/s",
                 lambda i, r: _binary_workload(i, r, "bfloat16", (1 << 28,), (1 << 28,))),
    "add_bcast": ("c = a + row, 16384x16384 + 16384 float32", "TB/s",
                  lambda i, r: _binary_workload(i, r, "float32", (16384, 16384), (16384,))),
    "add_strided": ("c = a.T + b, 16384x16384 float32", "TB/s",
                    lambda i, r: _binary_workload(i, r, "float32", (16384, 16384), (16384, 16384),
                                                  transpose_a=True)),
    "op_sync": ("per op, x = x + b (1,024 el.), sync every op", "us/op",
                lambda i, r: per_op_overhead(i, 2000, True)),
    "op_batched": ("per op, x = x + b (1,024 el.), one sync after 10,000", "us/op",
                   lambda i, r: per_op_overhead(i, 10000, False)),
    "h2d_fault": ("4 GiB host-written, then read by a GPU op: faults", "GB/s",
                  lambda i, r: _host_write_then_gpu_read(i, r, auto=False)),
    "h2d_auto": ("4 GiB host-written, then read by a GPU op: prefetch", "GB/s",
                 lambda i, r: _host_write_then_gpu_read(i, r, auto=True)),
    "h2d_pinned": ("4 GiB pinned cuMemcpyHtoD (reference)", "GB/s", pinned_host_to_device),
    "d2h_fault": ("np.array(x), 4 GiB GPU-written: faults", "GB/s",
                  lambda i, r: _gpu_result_to_numpy(i, r, auto=False)),
    "d2h_ours": ("np.array(x), 4 GiB GPU-written: ours", "GB/s",
                 lambda i, r: _gpu_result_to_numpy(i, r, auto=True)),
    "prefetch_loop": ("prefetches in 1,000 small ops on resident data", "count",
                      prefetches_in_small_op_loop),
}


def _load_area_workloads() -> None:
    """Workloads of each op family live in ``benchmarks/workloads_<area>.py`` (a module-level
    ``WORKLOADS`` dict of the same form), so that families grow without touching this file."""
    import importlib.util

    for path in sorted(Path(__file__).resolve().parent.glob("workloads_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        WORKLOADS.update(module.WORKLOADS)


_load_area_workloads()

#: The workloads an issue sets a bar on (``--bars``: the quick run gpu-check makes).
BAR_WORKLOADS = ["add_f32", "add_f16", "add_bf16", "add_bcast", "add_strided", "op_sync",
                 "op_batched", "op_batched_unfused", "chain16_small", "chain16_large", "h2d_fault", "h2d_auto", "h2d_pinned", "d2h_fault", "d2h_ours",
                 "prefetch_loop", "sum_f32", "softmax_8192", "softmax_65536x1024", "sort_f32",
                 "argsort_f32", "gather_2e24", "matmul_bf16", "matmul_f16", "matmul_f32",
                 "matmul_tf32"]

#: The issue's bars for the managed-memory rows: (row, reference row, minimum ratio).
MEMORY_BARS = [("h2d_auto", "h2d_pinned", 0.8), ("h2d_auto", "h2d_fault", 5.0),
               ("d2h_ours", "d2h_fault", 2.0)]


def versions(impls: dict[str, Any]) -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    from pycudamlx.backend.cuda import driver

    out["pycudamlx"] = __import__("pycudamlx").__version__
    out["cuda-bindings"] = driver.bindings_version() or "missing"
    out["driver CUDA"] = driver.format_cuda_version(driver.driver_version())
    out["gpu"] = driver.get_device(0).properties.name
    for name, mod_attr in (("torch", "torch"), ("cupy", "cp"), ("mlx-cuda", "mx")):
        if name in impls:
            out[name] = getattr(getattr(impls[name], mod_attr), "__version__", "?")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="workload name (repeat)")
    parser.add_argument("--bars", action="store_true",
                        help="only the workloads an issue sets a bar on (BAR_WORKLOADS)")
    parser.add_argument("--skip", action="append", default=[], help="leave this workload out "
                        "(repeat; a trailing * matches a prefix: --skip 'h2d_*')")
    parser.add_argument("--impl", action="append", default=[], help="implementation (repeat)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--json", type=Path, help="write raw results here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    impls = load_impls(args.impl)
    copy_tbs = copy_bandwidth(impls, args.reps)
    log.info("device-to-device copy: %.2f TB/s", copy_tbs)
    rows: list[dict[str, Any]] = []
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "versions": versions(impls),
           "copy_tbs": copy_tbs, "rows": rows, "reps": args.reps}
    unknown = [k for k in args.only if k not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    chosen = args.only or (BAR_WORKLOADS if args.bars else list(WORKLOADS))
    names = [k for k in chosen if not _skipped(k, args.skip)]
    for i, key in enumerate(names):
        title, unit, fn = WORKLOADS[key]
        log.info("[%d/%d] %s", i + 1, len(names), title)
        started = time.perf_counter()
        res = fn(impls, args.reps)
        rows.append({"workload": key, "title": title, "unit": unit, "results": res})
        log.info("    %s   (%.0f s)", "  ".join(f"{k} {v:.3g}" for k, v in res.items())
                 or "no results", time.perf_counter() - started)
        if args.json:  # after every row: a run cut short still leaves its raw results
            args.json.write_text(json.dumps(doc, indent=1))
    print_table(doc)
    return 0


def _skipped(key: str, patterns: list[str]) -> bool:
    return any(key == p or (p.endswith("*") and key.startswith(p[:-1])) for p in patterns)


def print_table(doc: dict[str, Any]) -> None:
    impl_names = ["pycudamlx", "torch", "cupy", "mlx-cuda"]
    print(f"\ncopy (cuMemcpyDtoD, 1 GiB): {doc['copy_tbs']:.2f} TB/s")
    print(f"{'workload':<58}" + "".join(f"{n:>12}" for n in impl_names) + f"{'ours/copy':>11}")
    for row in doc["rows"]:
        res = row["results"]
        cells = "".join(f"{res[n]:>12.2f}" if n in res else f"{'-':>12}" for n in impl_names)
        frac = (f"{res['pycudamlx'] / doc['copy_tbs']:>11.2f}"
                if row["unit"] == "TB/s" and "pycudamlx" in res else f"{'':>11}")
        print(f"{row['title'] + ' [' + row['unit'] + ']':<58}{cells}{frac}")
    ours = {row["workload"]: row["results"].get("pycudamlx") for row in doc["rows"]}
    bars = [(a, b, m) for a, b, m in MEMORY_BARS if ours.get(a) and ours.get(b)]
    for a, b, minimum in bars:
        ratio = ours[a] / ours[b]
        print(f"bar {a} / {b} = {ratio:.2f} (>= {minimum}): "
              f"{'ok' if ratio >= minimum else 'MISSED'}")
    if ours.get("prefetch_loop") is not None:
        print(f"bar prefetch_loop = {ours['prefetch_loop']:.0f} (0): "
              f"{'ok' if ours['prefetch_loop'] == 0 else 'MISSED'}")


if __name__ == "__main__":
    sys.exit(main())
