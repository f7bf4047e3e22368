"""Which op makes the GPU differ from the CPU? Run an MLX program with every ``mx.*`` function
and array operator checked: each top-level call on the GPU is repeated on the CPU stream with
the same inputs, and calls whose results differ beyond the tolerance are logged (op, shapes,
dtypes, largest difference), first ones first. Inner calls of an op are not checked on their
own: the first line names the op to look at.

    python scripts/trace_gpu_vs_cpu.py program.py [args]
    python scripts/trace_gpu_vs_cpu.py -m pytest tests/test_models.py -k ssm_masked
    RTOL=1e-4 ATOL=1e-5 LIMIT=20 python scripts/trace_gpu_vs_cpu.py ...

Random ops (``mx.random.*``) are not repeated (a second draw would advance the key); their
results feed the later ops identically on both sides.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pycudamlx.core as mx  # noqa: E402
from pycudamlx import mlx_compat  # noqa: E402

log = logging.getLogger("trace_gpu_vs_cpu")
RTOL = float(os.environ.get("RTOL", "1e-4"))
ATOL = float(os.environ.get("ATOL", "1e-5"))
LIMIT = int(os.environ.get("LIMIT", "30"))
#: SELFTEST=1 checks CPU calls against the CPU (a machine without a GPU: nothing may differ).
_TRACED = mx.cpu if os.environ.get("SELFTEST") else mx.gpu
_depth = 0
_reported: list[str] = []
_checked = 0

OPERATORS = ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
             "__truediv__", "__rtruediv__", "__floordiv__", "__mod__", "__pow__", "__rpow__",
             "__matmul__", "__rmatmul__", "__neg__", "__getitem__", "__lt__", "__le__",
             "__gt__", "__ge__", "__eq__", "__ne__", "__and__", "__or__", "__invert__",
             "__abs__")
SKIP = {"eval", "async_eval", "array", "set_default_device", "set_default_stream", "stream",
        "default_device", "default_stream", "new_stream", "synchronize", "compile", "grad",
        "value_and_grad", "vjp", "jvp", "vmap", "checkpoint", "custom_function", "load", "save",
        "savez", "savez_compressed", "save_safetensors", "save_gguf", "export_function",
        "import_function", "disable_compile", "enable_compile", "get_active_memory",
        "get_peak_memory", "reset_peak_memory", "get_cache_memory", "clear_cache",
        "set_memory_limit", "set_cache_limit", "set_wired_limit", "new_thread_local_stream",
        "is_available", "device_info", "issubdtype", "finfo", "iinfo", "from_fp8", "to_fp8"}


def _to_cpu(x):
    if isinstance(x, mx.array):
        return mx.array(np.array(x.astype(mx.float32) if x.dtype == mx.bfloat16 else x),
                        ).astype(x.dtype) if x.size else x
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_cpu(v) for k, v in x.items()}
    return x


def _arrays(x):
    if isinstance(x, mx.array):
        return [x]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v)]
    return []


def _host(a):
    return np.array(a.astype(mx.float32) if a.dtype in (mx.bfloat16, mx.float16) else a)


def _describe(args) -> str:
    parts = []
    for a in args:
        if isinstance(a, mx.array):
            parts.append(f"{str(a.dtype).rsplit('.', 1)[-1]}{tuple(a.shape)}")
        elif isinstance(a, (int, float, bool, str, type(None), slice, tuple)):
            parts.append(repr(a)[:40])
        else:
            parts.append(type(a).__name__)
    return ", ".join(parts)


def _check(name: str, fn, args, kwargs, out) -> None:
    global _checked
    outs = _arrays(out)
    if not outs or any(o.size == 0 for o in outs) or "stream" in kwargs:
        return
    try:
        got = [_host(o) for o in outs]
        with mx.stream(mx.cpu):
            ref = fn(*_to_cpu(args), **_to_cpu(kwargs))
            want = [_host(r) for r in _arrays(ref)]
    except Exception as exc:  # noqa: BLE001 - the program's own business
        log.debug("%s: not repeated on the CPU (%s)", name, exc)
        return
    _checked += 1
    for g, w in zip(got, want):
        if g.shape != w.shape:
            _report(f"{name}({_describe(args)}): shape {g.shape} on the GPU, {w.shape} on CPU")
            return
        if g.dtype == bool or g.dtype.kind in "iu":
            bad = g != w
        else:
            with np.errstate(all="ignore"):
                bad = ~((np.abs(g - w) <= ATOL + RTOL * np.abs(w)) | (np.isnan(g) & np.isnan(w))
                        | (g == w))
        if bad.any():
            idx = np.argwhere(bad)[0]
            with np.errstate(all="ignore"):
                worst = np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))
            _report(f"{name}({_describe(args)}): {int(bad.sum())}/{bad.size} differ, first at "
                    f"{tuple(int(i) for i in idx)}: gpu {g[tuple(idx)]!r} cpu {w[tuple(idx)]!r};"
                    f" max |diff| {worst:.3g}")
            return


def _report(line: str) -> None:
    if len(_reported) < LIMIT:
        log.warning("DIFF %s", line)
    _reported.append(line)


def _wrap(name: str, fn):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        global _depth
        if _depth:
            return fn(*args, **kwargs)
        _depth += 1
        try:
            out = fn(*args, **kwargs)
            if mx.default_device() == _TRACED:
                _check(name, fn, args, kwargs, out)
            return out
        finally:
            _depth -= 1
    return traced


def install() -> None:
    for mod, prefix in ((mx, "mx."), (mx.fast, "mx.fast."), (mx.linalg, "mx.linalg.")):
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("_") or name in SKIP or not callable(obj) or isinstance(obj, type):
                continue
            setattr(mod, name, _wrap(prefix + name, obj))
    for name in OPERATORS:
        if hasattr(mx.array, name):
            setattr(mx.array, name, _wrap("array." + name, getattr(mx.array, name)))


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    argv = sys.argv[1:]
    if not argv:
        print(__doc__)
        return 2
    install()
    try:
        if argv[0] == "-m":
            mlx_compat.run_module(argv[1], argv[2:])
        else:
            mlx_compat.run_script(argv[0], argv[1:])
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    log.info("trace: %d GPU calls checked against the CPU, %d differ (rtol %g, atol %g)",
             _checked, len(_reported), RTOL, ATOL)
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    sys.exit(main())
