"""repr() and str() of arrays, character for character as MLX prints them, and print options.

MLX formats with C++ streams: ``array(<body>, dtype=<name>)``; each float with the stream's
default ``%g`` (6 significant digits: ``1.5``, ``2``, ``1e-05``, ``2.14748e+09``, ``-0``, ``nan``,
``-nan``, ``inf``) or, after ``set_printoptions(precision=p)``, ``%.pf``; complex as
``re+imj`` / ``re-imj``; bools as True/False. A dimension longer than 6 shows its first and last
three entries around ``...``; rows of inner dimensions start on new lines indented by
``7 + depth`` spaces. ``str(a) == repr(a)``, as in MLX.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt

__all__ = ["PrintOptions", "get_printoptions", "set_printoptions", "printoptions"]

_EDGE = 3  # entries shown at each end of a summarised dimension


class PrintOptions:
    """Array printing options: ``precision`` (-1: the default 6 significant digits)."""

    __slots__ = ("precision",)

    def __init__(self, precision: int = -1) -> None:
        self.precision = int(precision)


_options = PrintOptions()
_lock = threading.Lock()


def get_printoptions() -> PrintOptions:
    """Get global printing precision for array formatting."""
    return PrintOptions(_options.precision)


def set_printoptions(precision: int = -1) -> None:
    """Set global printing precision for array formatting (-1: the default)."""
    _options.precision = int(precision)


class _PrintOptionsContext:
    """``with mx.printoptions(precision=3):`` sets the options and restores them on exit."""

    def __init__(self, options: PrintOptions) -> None:
        self._new = PrintOptions(options.precision)
        self._old: PrintOptions | None = None

    def __enter__(self) -> _PrintOptionsContext:
        with _lock:
            self._old = PrintOptions(_options.precision)
            _options.precision = self._new.precision
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            _options.precision = self._old.precision


def printoptions(precision: int = -1) -> _PrintOptionsContext:
    """Context manager for setting print options temporarily."""
    return _PrintOptionsContext(PrintOptions(precision))


# ------------------------------------------------------------------------------------------------
# Element formatting


def _fmt_float_g(x: float) -> str:
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x


def _float_formatter(precision: int) -> Callable[[float], str]:
    if precision < 0:
        return _fmt_float_g
    spec = f"%.{precision}f"

    def fmt(x: float) -> str:
        if x != x:
            return "-nan" if math.copysign(1.0, x) < 0 else "nan"
        return spec % x

    return fmt


def _formatter(dtype: dt.Dtype) -> Callable[[Any], str]:
    if dtype is dt.bool_:
        return lambda v: "True" if v else "False"
    if dtype.kind in "iu":
        return str
    ffmt = _float_formatter(_options.precision)
    if dtype.kind == "c":
        def cfmt(z: complex) -> str:
            re, im = z.real, z.imag
            if im >= 0 or im != im:
                return f"{ffmt(re)}+{ffmt(im)}j"
            return f"{ffmt(re)}-{ffmt(-im)}j"

        return cfmt
    return ffmt


def _python_values(host: np.ndarray, dtype: dt.Dtype) -> list:
    """The elements of a 1-d host array as Python scalars (floats through float64)."""
    if dtype.kind == "f" and host.dtype != np.float64:
        host = host.astype(np.float64)
    elif dtype.kind == "c":
        host = host.astype(np.complex128)
    return host.tolist()


def _body(host: np.ndarray, dtype: dt.Dtype, fmt: Callable[[Any], str]) -> str:
    """MLX's print_subarray, iteratively over the leading dimensions."""
    ndim = host.ndim
    out: list[str] = []

    def rows(dim: int, view: np.ndarray) -> None:
        n = view.shape[0]
        out.append("[")
        if dim == ndim - 1:
            if n > 2 * _EDGE:
                head = _python_values(view[:_EDGE], dtype)
                tail = _python_values(view[n - _EDGE:], dtype)
                out.append(", ".join([*map(fmt, head), "...", *map(fmt, tail)]))
            else:
                out.append(", ".join(map(fmt, _python_values(view, dtype))))
            out.append("]")
            return
        prefix = " " * (7 + dim)
        indices: list[int | None]
        if n > 2 * _EDGE:
            indices = [*range(_EDGE), None, *range(n - _EDGE, n)]
        else:
            indices = list(range(n))
        for k, i in enumerate(indices):
            if k:
                out.append(prefix)
            if i is None:
                out.append("...")
            else:
                rows(dim + 1, view[i])
            if k != len(indices) - 1:
                out.append(",\n")
        out.append("]")

    rows(0, host)
    return "".join(out)


def array_repr(a: Any) -> str:
    """``array([...], dtype=float32)`` exactly as MLX prints the array."""
    host = a._numpy()
    dtype = a._dtype
    fmt = _formatter(dtype)
    if host.ndim == 0:
        body = fmt(_python_values(host.reshape(1), dtype)[0])
    else:
        body = _body(host, dtype, fmt)
    return f"array({body}, dtype={dtype.name})"


def array_str(a: Any) -> str:
    """``str(a)``: the same text as ``repr(a)``, as in MLX."""
    return array_repr(a)
