"""mx.hadamard_transform: the Walsh-Hadamard transform along the last axis, as MLX defines it.

For n = m * 2**k (m in 1, 12, 20, 28) MLX's matrix is kron(H_m, H_{2**k}), H_{2**k} in
Sylvester's order (scipy.linalg.hadamard) and H_m the fixed ±1 matrices below (read off MLX
0.32.4's results). Here the 2**k part is k butterfly steps (sums and differences of the two
halves of each bit axis, each one view pair and one stack: O(n log n) work), and the H_m part is
a sum over the m inputs; halves, integers, bools and complex inputs compute in float32 (complex: the
real part), as MLX does, and halves round once at the end. float64 is MLX's error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as dt
from . import device as dev
from ._base import astype
from ._nanobind import argument_error, to_float
from .array import array
from .elementwise import add, multiply, subtract
from .reduce import sum as sum_
from .shape import expand_dims, reshape, stack

__all__ = ["hadamard_transform"]

_SIG = ("hadamard_transform(a: array, scale: float | None = None, stream: StreamOrDevice = None)"
        " -> array")

_ROWS = {
    12: "+-++++++++++ --+-+-+-+-+- +++-++----++ +---+--+-++- +++++-++---- +-+---+--+-+ "
        "++--+++-++-- +--++---+--+ ++----+++-++ +--+-++---+- ++++----+++- +-+--+-++---",
    20: "+----+----++--++-++- -+----+---+++---+-++ --+----+---+++-+-+-+ ---+----+---+++++-+- "
        "----+----++--++-++-+ -+++++-----+--+++--+ +-+++-+---+-+--+++-- ++-++--+---+-+--+++- "
        "+++-+---+---+-+--+++ ++++-----++--+-+--++ --++-+-++-+-----++++ ---++-+-++-+---+-+++ "
        "+---++-+-+--+--++-++ ++---++-+----+-+++-+ -++---++-+----+++++- -+--+--++-+----+---- "
        "+-+-----++-+----+--- -+-+-+---+--+----+-- --+-+++------+----+- +--+--++------+----+",
    28: "+------++----++-+--+-+--++-- -+-----+++-----+-+--+-+--++- --+-----+++---+-+-+----+--++ "
        "---+-----+++---+-+-+-+--+--+ ----+-----+++---+-+-+++--+-- -----+-----++++--+-+--++--+- "
        "------++----++-+--+-+--++--+ --++++-+-------++--+++-+--+- ---++++-+-----+-++--+-+-+--+ "
        "+---+++--+----++-++--+-+-+-- ++---++---+----++-++--+-+-+- +++---+----+----++-++--+-+-+ "
        "++++--------+-+--++-++--+-+- -++++--------+++--++--+--+-+ -+-++-++--++--+--------++++- "
        "+-+-++--+--++--+--------++++ -+-+-++--+--++--+----+---+++ +-+-+-++--+--+---+---++---++ "
        "++-+-+-++--+------+--+++---+ -++-+-+-++--+------+-++++--- +-++-+---++--+------+-++++-- "
        "-++--++-+-++-+++----++------ +-++--++-+-++-+++-----+----- ++-++---+-+-++-+++-----+---- "
        "-++-++-+-+-+-+--+++-----+--- --++-++++-+-+----+++-----+-- +--++-+-++-+-+----+++-----+- "
        "++--++-+-++-+-+----++------+",
}
_MATRICES: dict[int, np.ndarray] = {}


def _matrix(m: int) -> np.ndarray:
    h = _MATRICES.get(m)
    if h is None:
        rows = _ROWS[m].split()
        h = _MATRICES[m] = np.array([[1.0 if c == "+" else -1.0 for c in r] for r in rows],
                                    dtype=np.float32)
    return h


def _split(n: int) -> tuple[int, int]:
    """(m, 2**k) with n = m * 2**k, or MLX's error."""
    for m in (1, 12, 20, 28):
        if n % m == 0:
            p = n // m
            if p & (p - 1) == 0:
                return m, p
    raise ValueError("[hadamard] Only supports n = m*2^k where m in (1, 12, 20, 28).")


def hadamard_transform(a: array, scale: float | None = None, stream: Any = None) -> array:
    """``(H_n @ x) * scale`` along the last axis (``scale`` defaults to 1/sqrt(n))."""
    scale_f = None if scale is None else to_float(scale)  # nanobind's float
    if not isinstance(a, array) or (scale is not None and scale_f is None):
        raise argument_error("hadamard_transform", dt._incompatible_arguments(_SIG, a)
                             if scale is None else dt._incompatible_arguments(_SIG, a, scale))
    scale = scale_f
    if a.size == 0:
        raise ValueError("[hadamard_transform] Does not support empty arrays.")
    if a._dtype is dt.float64:
        raise ValueError("[hadamard] Unsupported type.")
    s = dev.resolve_stream(stream)
    shape = a.shape
    n = shape[-1] if shape else 1
    m, p = _split(n)
    if scale is None:
        scale = 1.0 / float(np.sqrt(n))
    out_dtype = a._dtype if a._dtype in (dt.float16, dt.bfloat16, dt.float32) else dt.float32
    work = dt.float32
    x = astype(a, work, s)
    rows = a.size // n
    y = reshape(x, (rows, m, p), stream=s)
    half = p // 2
    outer = 1
    while half >= 1:  # one Sylvester butterfly per bit of the 2**k index, high bit first
        y = reshape(y, (rows, m, outer, 2, half), stream=s)
        lo, hi = y[:, :, :, 0, :], y[:, :, :, 1, :]
        y = stack([add(lo, hi, stream=s), subtract(lo, hi, stream=s)], axis=3, stream=s)
        outer *= 2
        half //= 2
    y = reshape(y, (rows, m, p), stream=s)
    if m > 1:
        # (m, m, 1) * (rows, 1, m, p) summed over the m inputs: exact float32/float64 products
        # (a float32 GEMM would round through TF32 on the GPU).
        h = astype(array(_matrix(m)[:, :, None]), work, s)
        y = sum_(multiply(h, expand_dims(y, 1, stream=s), stream=s), axis=2, stream=s)
    y = multiply(y, scale, stream=s)
    return astype(reshape(y, shape, stream=s), out_dtype, s)
