"""`pycudamlx smoke`: run the basic GPU paths on random data and check them against numpy.

Each pass runs, per device, the driver's device-to-device copy (the bandwidth reference),
copyto, memset, fill, add and multiply at several sizes (1 element, an odd million, and arrays
of at least 256 MiB), timed with CUDA events. The CLI runs one pass in its own process with the
normal kernel lookup, then a second one in a fresh process with NVRTC disabled and an empty
kernel cache, so the precompiled kernels_ptx/ path is exercised too.

Without a GPU only the CPU backend's check runs: numpy's elementwise functions from the op table
against float64 arithmetic, which is what the CPU backend computes with.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import _env, dtypes
from .backend import optable
from .backend.cuda import array, compiler, driver, elementwise, memory, nvrtc
from .backend.cuda import stream as stream_mod

log = logging.getLogger(__name__)

SMOKE_SCHEMA = "pycudamlx-smoke/1"
_MiB = 1 << 20
#: Element counts per op: one element, an odd size, and float32 arrays of 256 MiB + 12 bytes.
GPU_SIZES: tuple[int, ...] = (1, 1_000_003, 256 * _MiB // 4 + 3)
CPU_SIZES: tuple[int, ...] = (1, 1_000_003)
REPEATS = 3
#: A GPU case: (run it once, fetch its result to the host, the expected result, arrays to free).
_Case = tuple[Callable[[], None], Callable[[], np.ndarray], np.ndarray, list]
#: The seed of the random inputs (fixed, so a failure reproduces).
SEED = 20261130


@dataclass
class Row:
    """One op at one size: whether it matched numpy, and how fast it ran (best of REPEATS)."""

    op: str
    dtype: str
    size: int
    bytes: int                  # bytes read plus written by one run, for GB/s
    status: str                 # "ok", "FAIL" or "skipped"
    time_ms: float | None = None
    gb_per_s: float | None = None
    detail: str | None = None


@dataclass
class Pass:
    """One run over the ops and sizes on one device (or the CPU), with one kernel source path."""

    device: int | None
    device_name: str
    path: str                   # "default", "kernels_ptx" or "cpu"
    nvrtc: str | None = None    # the NVRTC version the pass could use; None: missing or disabled
    kernel_sources: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    results: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.status != "FAIL" for r in self.results)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["ok"] = self.ok
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Pass":
        rows = [Row(**r) for r in doc.get("results", [])]
        return cls(doc["device"], doc["device_name"], doc["path"], doc.get("nvrtc"),
                   dict(doc.get("kernel_sources", {})), doc.get("error"), rows)


def report(passes: Sequence[Pass], gpu_unavailable_reason: str | None) -> dict[str, Any]:
    """The JSON document `pycudamlx smoke --json` prints (schema: docs/cli.md)."""
    return {
        "schema": SMOKE_SCHEMA,
        "backend": "cpu" if gpu_unavailable_reason is not None else "cuda",
        "gpu_unavailable_reason": gpu_unavailable_reason,
        "ok": all(p.ok for p in passes),
        "passes": [p.to_json() for p in passes],
    }


def _gbps(nbytes: int, ms: float) -> float | None:
    return nbytes / (ms * 1e-3) / 1e9 if ms > 0 else None


def _mismatch(got: np.ndarray, want: np.ndarray) -> str | None:
    """None when equal, else how many elements differ and the first of them."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    bad = np.flatnonzero(got != want)
    if bad.size == 0:
        return None
    i = int(bad[0])
    return f"{bad.size} of {want.size} elements differ; first at {i}: got {got[i]!r}, want {want[i]!r}"


# --------------------------------------------------------------------------------------------------
# CPU backend


def cpu_pass(sizes: Sequence[int] = CPU_SIZES, repeats: int = REPEATS) -> Pass:
    """numpy copy, fill, add and multiply (the op table's CPU functions) against float64 math.

    Adding or multiplying two float32 values in float64 is exact (up to rare double rounding of
    sums whose exponents differ by more than 29), so rounding that to float32 is the correctly
    rounded result IEEE arithmetic must give.
    """
    rng = np.random.default_rng(SEED)
    result = Pass(None, "cpu (numpy)", "cpu")
    for n in sizes:
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        value = np.float32(rng.standard_normal())
        out = np.empty_like(a)
        cases: list[tuple[str, int, Callable[[], Any], np.ndarray]] = [
            ("copyto", 2, lambda: np.copyto(out, a), a),
            ("fill", 1, lambda: out.fill(value), np.full(n, value, np.float32)),
            ("add", 3, lambda: optable.OPS["add"].numpy(a, b, out=out),
             (a.astype(np.float64) + b).astype(np.float32)),
            ("mul", 3, lambda: optable.OPS["multiply"].numpy(a, b, out=out),
             (a.astype(np.float64) * b).astype(np.float32)),
        ]
        for op, k, fn, want in cases:
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                best = min(best, (time.perf_counter() - t0) * 1e3)
            detail = _mismatch(out, want)
            result.results.append(Row(op, "float32", n, k * a.nbytes,
                                      "ok" if detail is None else "FAIL", best,
                                      _gbps(k * a.nbytes, best), detail))
    return result


# --------------------------------------------------------------------------------------------------
# GPU


class _GpuRunner:
    """Allocation, upload, timing and download for one device and one stream."""

    def __init__(self, index: int) -> None:
        self.device = driver.get_device(index)
        self.stream = stream_mod.CudaStream(self.device)
        # Arrays come from the array core (managed memory where the GPU has concurrent managed
        # access, device memory otherwise), so the smoke checks the memory arrays really use.
        self.f32 = dtypes.by_name["float32"]

    def fits(self, nbytes: int) -> str | None:
        """None when ``nbytes`` more fit in free device memory (guard headroom kept), else why."""
        memory.clear_cache()
        free, _ = self.device.memory_info()
        room = free - memory.GUARD_HEADROOM - 64 * _MiB
        if nbytes > room:
            fmt = memory.format_bytes
            return f"needs {fmt(nbytes)}, {fmt(max(room, 0))} available"
        return None

    def upload(self, host: np.ndarray) -> Any:
        """A float32 GpuArray holding ``host``, its pages already on the device."""
        return array.from_numpy(host, self.f32, self.stream)

    def empty(self, n: int) -> Any:
        out = array.empty((n,), self.f32, self.stream)
        # Fresh managed pages written first by the GPU cost 55 ms/GiB in faults; prefetching
        # the fresh range first costs ~4 ms/GiB (FIELD-NOTES), and is a no-op for device memory.
        out.buffer.prefetch(self.device.index, self.stream)
        return out

    def download(self, arr: Any, dtype: Any, n: int) -> np.ndarray:
        """A host copy of the first ``n`` elements of type ``dtype`` of ``arr``'s buffer."""
        buf = arr.buffer
        host = np.empty(n, dtype)
        if buf.kind == memory.MANAGED:
            buf.prefetch(memory.HOST, self.stream)  # one migration, not page faults
            self.stream.synchronize()
            host[:] = buf.host_view(dtype, (n,))
        else:
            memory.copy_device_to_host(host, buf, self.stream)
        return host

    def time_ms(self, fn: Callable[[], None], repeats: int) -> float:
        """Best of ``repeats`` timed runs of ``fn`` on the stream, after one untimed warm-up."""
        fn()
        start = stream_mod.TimingEvent(self.device)
        end = stream_mod.TimingEvent(self.device)
        best = float("inf")
        for _ in range(repeats):
            start.record(self.stream)
            fn()
            end.record(self.stream)
            best = min(best, start.elapsed_ms(end))
        return best


def gpu_pass(index: int, path: str, sizes: Sequence[int] = GPU_SIZES,
             repeats: int = REPEATS) -> Pass:
    """Every smoke op at every size on GPU ``index``, checked against numpy."""
    try:
        nv = None if _env.DISABLE_NVRTC else nvrtc.nvrtc_version_or_none()
        runner = _GpuRunner(index)
    except driver.CudaError as exc:
        return Pass(index, "?", path, None, error=str(exc))
    result = Pass(index, runner.device.properties.name, path, nv)
    before = Counter(compiler.stats)
    rng = np.random.default_rng(SEED)
    stream = runner.stream
    for n in sizes:
        nbytes = n * 4
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        value = np.float32(rng.standard_normal())
        byte = int(rng.integers(1, 255))

        # Each setup returns (run, fetch the result, the expected result, the arrays to free).
        def memcpy() -> _Case:
            src, dst = runner.upload(a), runner.empty(n)
            return (lambda: memory.copy_device_to_device(dst.buffer, src.buffer, nbytes, stream),
                    lambda: runner.download(dst, np.float32, n), a, [src, dst])

        def copyto() -> _Case:
            src, dst = runner.upload(a), runner.empty(n)
            return (lambda: elementwise.copy(src, dst, stream),
                    lambda: runner.download(dst, np.float32, n), a, [src, dst])

        def memset() -> _Case:
            dst = runner.empty(n)
            return (lambda: memory.memset(dst.buffer, byte, stream),
                    lambda: runner.download(dst, np.uint8, nbytes),
                    np.full(nbytes, byte, np.uint8), [dst])

        def fill() -> _Case:
            dst = runner.empty(n)
            return (lambda: elementwise.fill(dst, value.tobytes(), stream),
                    lambda: runner.download(dst, np.float32, n),
                    np.full(n, value, np.float32), [dst])

        def binary(op: str) -> Callable[[], _Case]:
            def setup() -> _Case:
                x, y, out = runner.upload(a), runner.upload(b), runner.empty(n)
                return (lambda: elementwise.binary(op, x, y, out, stream),
                        lambda: runner.download(out, np.float32, n),
                        optable.OPS[op].numpy(a, b), [x, y, out])
            return setup

        cases: list[tuple[str, int, Callable[[], _Case]]] = [
            ("memcpy", 2, memcpy), ("copyto", 2, copyto), ("memset", 1, memset),
            ("fill", 1, fill), ("add", 3, binary("add")), ("mul", 3, binary("multiply")),
        ]
        for op, k, setup in cases:
            result.results.append(_gpu_case(runner, op, n, k, setup, repeats))
            if driver._lost is not None:
                break
        if driver._lost is not None:
            result.error = str(driver._lost)
            break
    memory.clear_cache()
    result.kernel_sources = dict(Counter(compiler.stats) - before)
    if path == "kernels_ptx" and result.error is None:
        src = result.kernel_sources
        if src.get("nvrtc") or src.get("disk") or not src.get("shipped"):
            result.error = (f"modules were loaded from {src or 'nowhere'}, not from kernels_ptx/ "
                            "alone (NVRTC was meant to be disabled and the kernel cache empty)")
    return result


def _gpu_case(runner: _GpuRunner, op: str, n: int, k: int, setup: Callable[[], tuple],
              repeats: int) -> Row:
    nbytes = n * 4
    moved = k * nbytes
    why = runner.fits(k * nbytes)
    if why is not None:
        return Row(op, "float32", n, moved, "skipped", detail=why)
    arrays: list = []
    try:
        run, fetch, want, arrays = setup()
        ms = runner.time_ms(run, repeats)
        got = fetch()
        detail = _mismatch(got, want)
        status = "ok" if detail is None else "FAIL"
        return Row(op, "float32", n, moved, status, ms, _gbps(moved, ms), detail)
    except driver.CudaOutOfMemoryError as exc:
        return Row(op, "float32", n, moved, "skipped", detail=str(exc))
    except (driver.CudaError, compiler.KernelUnavailableError, compiler.KernelCompileError) as exc:
        log.debug("smoke %s at %d failed", op, n, exc_info=True)
        return Row(op, "float32", n, moved, "FAIL", detail=f"{type(exc).__name__}: {exc}")
    finally:
        for arr in arrays:  # give the blocks back now, not when the garbage collector runs
            arr.buffer.free()


def gpu_passes(devices: Sequence[int], path: str, sizes: Sequence[int] = GPU_SIZES) -> list[Pass]:
    return [gpu_pass(i, path, sizes) for i in devices]


def kernels_ptx_passes_in_subprocess(devices: Sequence[int],
                                     sizes: Sequence[int] = GPU_SIZES) -> list[Pass]:
    """The same passes in a fresh process with NVRTC disabled and an empty kernel cache.

    A fresh process is the only honest way: this one has modules loaded and NVRTC imported.
    """
    with tempfile.TemporaryDirectory(prefix="pycudamlx-smoke-cache-") as cache_dir:
        env = dict(os.environ, PYCUDAMLX_DISABLE_NVRTC="1", PYCUDAMLX_CACHE_DIR=cache_dir)
        package_root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(
            [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        cmd = [sys.executable, "-m", "pycudamlx", "smoke", "--json", "--single-pass",
               "kernels_ptx", "--sizes", ",".join(str(s) for s in sizes)]
        for i in devices:
            cmd += ["--device", str(i)]
        log.info("running the kernels_ptx pass: %s", " ".join(cmd))
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        doc = json.loads(proc.stdout)
        return [Pass.from_json(p) for p in doc["passes"]]
    except (ValueError, KeyError, TypeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return [Pass(i, "?", "kernels_ptx", error=(
            f"the kernels_ptx pass (a subprocess) exited with {proc.returncode}: "
            + " | ".join(tail))) for i in devices]
