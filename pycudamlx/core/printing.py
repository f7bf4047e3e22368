"""repr() and str() of arrays, formatted as MLX formats them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt


def _host(a: Any) -> np.ndarray:
    host = a._numpy()
    if a._dtype in (dt.float16, dt.bfloat16):
        host = host.astype(np.float32)
    return host


def array_str(a: Any) -> str:
    return np.array2string(_host(a), separator=", ") if a.ndim else str(a.item())


def array_repr(a: Any) -> str:
    body = np.array2string(_host(a), separator=", ", prefix="array(")
    return f"array({body}, dtype={a._dtype.name})"
