"""``mx.linalg``: norms, factorizations, inverses and solvers with MLX 0.32.4's semantics.

As in MLX, the factorizations (qr, svd, inv, tri_inv, cholesky, cholesky_inv, pinv, eig, eigh,
eigvals, eigvalsh, lu, lu_factor, solve, solve_triangular, det, slogdet) run only on a CPU stream:
on a GPU stream they raise MLX's ValueError "... This op is not yet supported on the GPU.
Explicitly pass a CPU stream to run it." before building anything. norm (except the ord=2/-2/
'nuc' matrix norms, which need an SVD) and cross are compositions of lazy ops and run anywhere.
Composite functions (lu, solve, solve_triangular, pinv, cholesky_inv, det, slogdet) are built
exactly as MLX builds them, so their dtypes, shapes and edge cases follow MLX's.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitives import linalg as P
from . import creation as C
from . import elementwise as E
from . import indexing as I
from . import reduce as R
from . import shape as S
from . import device as dev
from ._base import AxisError, astype as _astype
from ._nanobind import argument_error
from .array import array, make, make_multi

__all__ = ["norm", "qr", "svd", "inv", "tri_inv", "cholesky", "cholesky_inv", "pinv", "cross",
           "eigvalsh", "eigh", "eigvals", "eig", "lu", "lu_factor", "solve", "solve_triangular",
           "det", "slogdet"]

_SIG = {
    "norm": "norm(a: array, /, ord: None | int | float | str = None, axis: None | int | "
            "list[int] = None, keepdims: bool = False, *, stream: StreamOrDevice = None) -> array",
    "qr": "qr(a: array, *, stream: StreamOrDevice = None) -> tuple[array, array]",
    "svd": "svd(a: array, compute_uv: bool = True, *, stream: StreamOrDevice = None) -> "
           "tuple[array, array, array]",
    "inv": "inv(a: array, *, stream: StreamOrDevice = None) -> array",
    "tri_inv": "tri_inv(a: array, upper: bool = False, *, stream: StreamOrDevice = None) -> array",
    "cholesky": "cholesky(a: array, upper: bool = False, *, stream: StreamOrDevice = None) -> "
                "array",
    "cholesky_inv": "cholesky_inv(a: array, upper: bool = False, *, stream: StreamOrDevice = "
                    "None) -> array",
    "pinv": "pinv(a: array, *, stream: StreamOrDevice = None) -> array",
    "cross": "cross(a: array, b: array, axis: int = -1, *, stream: StreamOrDevice = None) -> "
             "array",
    "eigvalsh": "eigvalsh(a: array, UPLO: str = 'L', *, stream: StreamOrDevice = None) -> array",
    "eigh": "eigh(a: array, UPLO: str = 'L', *, stream: StreamOrDevice = None) -> "
            "tuple[array, array]",
    "eigvals": "eigvals(a: array, *, stream: StreamOrDevice = None) -> array",
    "eig": "eig(a: array, *, stream: StreamOrDevice = None) -> tuple[array, array]",
    "lu": "lu(a: array, *, stream: StreamOrDevice = None) -> tuple[array, array, array]",
    "lu_factor": "lu_factor(a: array, *, stream: StreamOrDevice = None) -> tuple[array, array]",
    "solve": "solve(a: array, b: array, *, stream: StreamOrDevice = None) -> array",
    "solve_triangular": "solve_triangular(a: array, b: array, *, upper: bool = False, "
                        "stream: StreamOrDevice = None) -> array",
    "det": "det(a: array, *, stream: StreamOrDevice = None) -> array",
    "slogdet": "slogdet(a: array, *, stream: StreamOrDevice = None) -> tuple[array, array]",
}


def _signature_error(fn: str, *args: Any) -> TypeError:
    """nanobind's TypeError for a call of ``mx.linalg.<fn>`` with wrongly typed (or too many
    positional) arguments: the types of the whole call where it can be read, else ``args``'."""
    types = ", ".join("mlx.core.array" if isinstance(a, array) else type(a).__name__
                      for a in args)
    fallback = (f"{fn}(): incompatible function arguments. The following argument types "
                f"are supported:\n    1. {_SIG[fn]}\n\nInvoked with types: {types}")
    return argument_error(fn, fallback, _SIG[fn])


def _need_arrays(fn: str, *args: Any, extra: tuple = ()) -> None:
    """Array arguments, and no positional arguments past the keyword-only marker (``extra``:
    the function's ``*_extra``, which exists only to give nanobind's error for them)."""
    if extra or not all(isinstance(a, array) for a in args):
        raise _signature_error(fn, *args, *extra)


def _need_bool(fn: str, *flags: Any) -> None:
    """nanobind's bool accepts only True and False (not 0/1, not numpy.bool_)."""
    for f in flags:
        if f is not True and f is not False:
            raise _signature_error(fn, f)


def _check_cpu_stream(stream: dev.Stream, prefix: str) -> None:
    if stream.is_gpu:
        raise ValueError(f"{prefix} This op is not yet supported on the GPU. "
                         "Explicitly pass a CPU stream to run it.")


def _check_float(d: dt.Dtype, prefix: str) -> None:
    if d is not dt.float32 and d is not dt.float64:
        raise ValueError(f"{prefix} Arrays must have type float32 or float64. "
                         f"Received array with type {d.name}.")


def _check_float_or_complex(d: dt.Dtype, prefix: str) -> None:
    if d is not dt.float32 and d is not dt.float64 and d is not dt.complex64:
        raise ValueError(f"{prefix} Arrays must have type float32, float64 or complex64. "
                         f"Received array with type {d.name}.")


def _check_ndim(a: array, prefix: str, what: str = "Arrays must have") -> None:
    if a.ndim < 2:
        raise ValueError(f"{prefix} {what} >= 2 dimensions. Received array with {a.ndim} "
                         "dimensions.")


def _refuse_empty_matrix(a: array, prefix: str) -> None:
    """MLX 0.32.4 dies (SIGFPE) inverting or LU-factoring a matrix with a zero dimension (an
    empty batch of real matrices is fine): a clear error instead."""
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        raise ValueError(f"{prefix} Received an empty {m}x{n} matrix; MLX 0.32.4 crashes on "
                         "it (floating point exception), so it is refused.")


def _at_least_float(d: dt.Dtype) -> dt.Dtype:
    return d if dt.issubdtype(d, dt.inexact) else dt.promote_types(d, dt.float32)


def _idx(a: array, key: tuple, s: dev.Stream) -> array:
    """``a[key]`` built on stream ``s``."""
    with dev.StreamContext(s):
        return a[key]


def _fmt(shape: Sequence[int]) -> str:
    return "(" + ",".join(str(s) for s in shape) + ")"


# ----------------------------------------------------------------------------------- norms

def _l2(a: array, axis: list[int], keepdims: bool, s: dev.Stream) -> array:
    if dt.issubdtype(a.dtype, dt.complexfloating):
        m = E.abs(a, stream=s)
        return E.sqrt(R.sum(E.multiply(m, m, stream=s), axis, keepdims, stream=s), stream=s)
    return E.sqrt(R.sum(E.square(a, stream=s), axis, keepdims, stream=s), stream=s)


def _scalar(v: float, d: dt.Dtype) -> array:
    return array(v, d)


def _vector_norm(a: array, ord: float, axis: list[int], keepdims: bool, s: dev.Stream) -> array:
    d = _at_least_float(a.dtype)
    if ord == 0.0:
        return _astype(R.sum(E.not_equal(a, array(0), stream=s), axis, keepdims, stream=s), d, s)
    if ord == 1.0:
        return _astype(R.sum(E.abs(a, stream=s), axis, keepdims, stream=s), d, s)
    if ord == 2.0:
        return _l2(a, axis, keepdims, s)
    if ord == math.inf:
        return _astype(R.max(E.abs(a, stream=s), axis, keepdims, stream=s), d, s)
    if ord == -math.inf:
        return _astype(R.min(E.abs(a, stream=s), axis, keepdims, stream=s), d, s)
    return E.power(R.sum(E.power(E.abs(a, stream=s), _scalar(ord, d), stream=s), axis, keepdims,
                         stream=s), _scalar(1.0 / ord, d), stream=s)


def _svd_matrix(a: array, axis: list[int], s: dev.Stream) -> tuple[array, int, int]:
    r = axis[0] + a.ndim if axis[0] < 0 else axis[0]
    c = axis[1] + a.ndim if axis[1] < 0 else axis[1]
    if r > c:
        m = S.moveaxis(S.moveaxis(a, r, -1, stream=s), c, -1, stream=s)
    else:
        m = S.moveaxis(S.moveaxis(a, c, -1, stream=s), r, -2, stream=s)
    return svd(m, False, stream=s), r, c


def _matrix_norm(a: array, ord: float, axis: list[int], keepdims: bool, s: dev.Stream) -> array:
    d = _at_least_float(a.dtype)
    # MLX normalizes negative axes first: (-1, -2) of a batch reduces the matrix dims.
    row, col = (x + a.ndim if x < 0 else x for x in axis)
    if ord in (1.0, -1.0):
        col -= (not keepdims and col > row and col > 0)
        red = R.max if ord == 1.0 else R.min
        return _astype(red(R.sum(E.abs(a, stream=s), row, keepdims, stream=s), col, keepdims,
                           stream=s), d, s)
    if ord in (math.inf, -math.inf):
        row -= (not keepdims and row > col and row > 0)
        red = R.max if ord == math.inf else R.min
        return _astype(red(R.sum(E.abs(a, stream=s), col, keepdims, stream=s), row, keepdims,
                           stream=s), d, s)
    if ord in (2.0, -2.0):
        sv, r, c = _svd_matrix(a, axis, s)
        out = R.max(sv, -1, False, stream=s) if ord == 2.0 else R.min(sv, -1, False, stream=s)
        if keepdims:
            out = S.expand_dims(out, sorted((r, c)), stream=s)
        return _astype(out, d, s)
    raise ValueError(f"[linalg::norm] Invalid ord {_fmt_double(ord)} for matrix norm.")


def _fmt_double(v: float) -> str:
    """A double as C++'s ostream prints it (6 significant digits, 'inf')."""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if math.isnan(v):
        return "nan"
    return f"{v:g}"


def _matrix_norm_str(a: array, ord: str, axis: list[int], keepdims: bool,
                     s: dev.Stream) -> array:
    if ord in ("f", "fro"):
        return _l2(a, axis, keepdims, s)
    if ord == "nuc":
        sv, r, c = _svd_matrix(a, axis, s)
        out = R.sum(sv, -1, False, stream=s)
        if keepdims:
            out = S.expand_dims(out, sorted((r, c)), stream=s)
        return out
    raise ValueError(f"[linalg::norm] Invalid ord value '{ord}' for matrix norm.")


def norm(a: array, /, ord: None | int | float | str = None, axis: None | int | list[int] = None,
         keepdims: bool = False, *_extra: Any, stream: Any = None) -> array:
    """Vector or matrix norm (MLX's table of ``ord``): composed of lazy ops, any device."""
    is_num = isinstance(ord, (int, float, np.integer, np.floating))
    if _extra or not isinstance(a, array) or not (
            ord is None or is_num or isinstance(ord, str)) or not (
            axis is None or isinstance(axis, (int, np.integer, list, tuple))) or (
            keepdims is not True and keepdims is not False):
        raise _signature_error("norm", a)
    s = dev.resolve_stream(stream)
    ax: list[int] | None
    if axis is None:
        ax = None
    elif isinstance(axis, (int, np.integer)):
        ax = [int(axis)]
    else:
        ax = [int(x) for x in axis]
    if ord is None:
        if ax is None:
            return _l2(a, list(range(a.ndim)), keepdims, s)
        if len(ax) > 2:
            raise ValueError("[linalg::norm] Received too many axes for norm.")
        return _l2(a, ax, keepdims, s)
    if ax is None:
        ax = list(range(a.ndim))
    if isinstance(ord, str):
        if len(ax) != 2:
            raise ValueError(f"[linalg::norm] Norm '{ord}' only supported for matrices, but "
                             f"received {len(ax)} axis/axes.")
        return _matrix_norm_str(a, ord, ax, keepdims, s)
    o = float(ord)
    # as in MLX, bad axes are reported by the ops the norm is built of
    if len(ax) == 1:
        return _vector_norm(a, o, ax, keepdims, s)
    if len(ax) == 2:
        return _matrix_norm(a, o, ax, keepdims, s)
    raise ValueError("[linalg::norm] Received too many axes for norm.")


# --------------------------------------------------------------------------- factorizations

def qr(a: array, *_extra: Any, stream: Any = None) -> tuple[array, array]:
    """Reduced QR: Q (..., m, k), R (..., k, n) with k = min(m, n). CPU only."""
    _need_arrays("qr", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _check_cpu_stream(s, "[linalg::qr]")
    _check_float(a.dtype, "[linalg::qr]")
    _check_ndim(a, "[linalg::qr]")
    m, n = a.shape[-2:]
    k = min(m, n)
    q_shape = a.shape[:-1] + (k,)
    r_shape = a.shape[:-2] + (k, n)
    q, r = make_multi(P.QRF(), (a,), [(q_shape, a.dtype), (r_shape, a.dtype)], s)
    return q, r


def svd(a: array, compute_uv: bool = True, *_extra: Any, stream: Any = None) -> Any:
    """SVD: (U, S, Vt) with full U (m, m) and Vt (n, n), or S alone. CPU only."""
    _need_arrays("svd", a, extra=_extra)
    _need_bool("svd", compute_uv)
    s = dev.resolve_stream(stream)
    _check_cpu_stream(s, "[linalg::svd]")
    _check_float_or_complex(a.dtype, "[linalg::svd]")
    _check_ndim(a, "[linalg::svd]", "Input array must have")
    m, n = a.shape[-2:]
    s_shape = a.shape[:-2] + (min(m, n),)
    s_dtype = dt.float32 if a.dtype is dt.complex64 else a.dtype
    if not compute_uv:
        return make(P.SVD(False), (a,), s_shape, s_dtype, s)
    lead = a.shape[:-2]
    u, sv, vt = make_multi(P.SVD(True), (a,), [(lead + (m, m), a.dtype), (s_shape, s_dtype),
                                               (lead + (n, n), a.dtype)], s)
    return u, sv, vt


def _inv_impl(a: array, tri: bool, upper: bool, s: dev.Stream) -> array:
    _check_cpu_stream(s, "[linalg::inv]")
    _check_float(a.dtype, "[linalg::inv]")
    _check_ndim(a, "[linalg::inv]")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError("[linalg::inv] Inverses are only defined for square matrices.")
    _refuse_empty_matrix(a, "[linalg::inv]")
    return make(P.Inverse(tri, upper), (a,), a.shape, a.dtype, s)


def inv(a: array, *_extra: Any, stream: Any = None) -> array:
    """Inverse of square matrices (batched over leading dims). CPU only."""
    _need_arrays("inv", a, extra=_extra)
    return _inv_impl(a, False, True, dev.resolve_stream(stream))


def tri_inv(a: array, upper: bool = False, *_extra: Any, stream: Any = None) -> array:
    """Inverse of the lower (or upper) triangle of ``a``; the other triangle is zero. CPU only."""
    _need_arrays("tri_inv", a, extra=_extra)
    _need_bool("tri_inv", upper)
    return _inv_impl(a, True, bool(upper), dev.resolve_stream(stream))


def cholesky(a: array, upper: bool = False, *_extra: Any, stream: Any = None) -> array:
    """Cholesky factor of a symmetric positive definite matrix (lower triangle read). CPU only."""
    _need_arrays("cholesky", a, extra=_extra)
    _need_bool("cholesky", upper)
    s = dev.resolve_stream(stream)
    _check_cpu_stream(s, "[linalg::cholesky]")
    _check_float(a.dtype, "[linalg::cholesky]")
    _check_ndim(a, "[linalg::cholesky]")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError("[linalg::cholesky] Cholesky decomposition is only defined for square "
                         "matrices.")
    return make(P.Cholesky(bool(upper)), (a,), a.shape, a.dtype, s)


def pinv(a: array, *_extra: Any, stream: Any = None) -> array:
    """Moore-Penrose pseudo-inverse from the SVD, MLX's cutoff 10*max(m,n)*eps*max(S)."""
    _need_arrays("pinv", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _check_cpu_stream(s, "[linalg::pinv]")
    _check_float(a.dtype, "[linalg::pinv]")
    _check_ndim(a, "[linalg::pinv]")
    m, n = a.shape[-2:]
    if a.size == 0:  # MLX: the (..., n, m) zeros, no SVD (whose max(S) would be empty)
        return C.zeros(a.shape[:-2] + (n, m), a.dtype, stream=s)
    k = min(m, n)
    U, Sv, V = svd(a, True, stream=s)
    nd = a.ndim
    U = S.swapaxes(_idx(U, (slice(None),) * (nd - 1) + (slice(0, k),), s), -1, -2, stream=s)
    V = S.swapaxes(_idx(V, (slice(None),) * (nd - 2) + (slice(0, k),), s), -1, -2, stream=s)
    Sv = S.expand_dims(Sv, -2, stream=s)
    rcond = 10.0 * max(m, n) * dt.finfo(a.dtype).eps
    cutoff = E.multiply(array(rcond, a.dtype), R.max(Sv, -1, True, stream=s), stream=s)
    rS = E.where(E.greater(Sv, cutoff, stream=s), E.reciprocal(Sv, stream=s),
                 array(0.0, a.dtype), stream=s)
    from .matmul import matmul

    return matmul(E.multiply(V, rS, stream=s), U, stream=s)


def cholesky_inv(a: array, upper: bool = False, *_extra: Any, stream: Any = None) -> array:
    """Inverse of A from its Cholesky factor (``a`` = L, or U with ``upper``). CPU only."""
    _need_arrays("cholesky_inv", a, extra=_extra)
    _need_bool("cholesky_inv", upper)
    s = dev.resolve_stream(stream)
    _check_cpu_stream(s, "[linalg::cholesky_inv]")
    _check_float(a.dtype, "[linalg::cholesky_inv]")
    _check_ndim(a, "[linalg::cholesky_inv]")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError("[linalg::cholesky_inv] Cholesky inverse is only defined for square "
                         "matrices.")
    _refuse_empty_matrix(a, "[linalg::cholesky_inv]")
    from .matmul import matmul

    L_inv = _inv_impl(a, True, bool(upper), s)
    if upper:
        return matmul(L_inv, S.swapaxes(L_inv, -1, -2, stream=s), stream=s)
    return matmul(S.swapaxes(L_inv, -1, -2, stream=s), L_inv, stream=s)


def cross(a: array, b: array, axis: int = -1, *_extra: Any, stream: Any = None) -> array:
    """Cross product of 2- or 3-vectors along ``axis`` (composed of lazy ops: any device)."""
    if _extra or not isinstance(a, array) or not isinstance(b, array) or not isinstance(
            axis, (int, np.integer)):
        raise _signature_error("cross", a, b)
    s = dev.resolve_stream(stream)
    for x in (a, b):
        if axis >= x.ndim or axis + x.ndim < 0:
            raise AxisError(f"[linalg::cross] Axis {axis} is out of bounds for array with "
                            f"{x.ndim} dimensions.")
        if not 2 <= x.shape[axis] <= 3:
            raise ValueError("[linalg::cross] The specified axis must have size 2 or 3.")
    a2 = a.shape[axis] == 2
    b2 = b.shape[axis] == 2
    out_type = dt.promote_types(a.dtype, b.dtype)
    ash = list(a.shape)
    bsh = list(b.shape)
    ash[axis] = 3
    bsh[axis] = 3
    from ._base import broadcast_shapes

    out_shape = list(broadcast_shapes(tuple(ash), tuple(bsh)))
    if axis < 0:
        axis += len(out_shape)
    out_shape[axis] = 2 if a2 else 3
    a_ = S.broadcast_to(_astype(a, out_type, s), tuple(out_shape), stream=s)
    out_shape[axis] = 2 if b2 else 3
    b_ = S.broadcast_to(_astype(b, out_type, s), tuple(out_shape), stream=s)
    sa = S.split(a_, 2 if a2 else 3, axis, stream=s)
    sb = S.split(b_, 2 if b2 else 3, axis, stream=s)
    mul, sub = E.multiply, E.subtract
    outs: list[array] = []
    if a2 and b2:
        z = C.zeros_like(sa[0], stream=s)
        outs += [z, z]
    elif b2:
        outs.append(E.negative(mul(sa[2], sb[1], stream=s), stream=s))
        outs.append(mul(sa[2], sb[0], stream=s))
    elif a2:
        outs.append(mul(sa[1], sb[2], stream=s))
        outs.append(E.negative(mul(sa[0], sb[2], stream=s), stream=s))
    else:
        outs.append(sub(mul(sa[1], sb[2], stream=s), mul(sa[2], sb[1], stream=s), stream=s))
        outs.append(sub(mul(sa[2], sb[0], stream=s), mul(sa[0], sb[2], stream=s), stream=s))
    outs.append(sub(mul(sa[0], sb[1], stream=s), mul(sa[1], sb[0], stream=s), stream=s))
    return S.concatenate(outs, axis, stream=s)


# ----------------------------------------------------------------------------------- eigen

def _validate_eig(a: array, s: dev.Stream, fname: str) -> None:
    _check_cpu_stream(s, fname)
    _check_float_or_complex(a.dtype, fname)
    _check_ndim(a, fname)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fname} Only defined for square matrices.")


def _uplo(fn: str, UPLO: Any) -> str:
    if not isinstance(UPLO, str):
        raise _signature_error(fn, UPLO)
    # MLX passes anything but "U" to LAPACK as the lower triangle.
    return "U" if UPLO == "U" else "L"


def eigvalsh(a: array, UPLO: str = "L", *_extra: Any, stream: Any = None) -> array:
    """Eigenvalues (ascending) of symmetric/Hermitian matrices. CPU only."""
    _need_arrays("eigvalsh", a, extra=_extra)
    uplo = _uplo("eigvalsh", UPLO)
    s = dev.resolve_stream(stream)
    _validate_eig(a, s, "[linalg::eigvalsh]")
    d = dt.float32 if a.dtype is dt.complex64 else a.dtype
    return make(P.Eigh(uplo, False), (a,), a.shape[:-1], d, s)


def eigh(a: array, UPLO: str = "L", *_extra: Any, stream: Any = None) -> tuple[array, array]:
    """Eigenvalues (ascending) and unit eigenvectors (columns) of symmetric matrices. CPU only."""
    _need_arrays("eigh", a, extra=_extra)
    uplo = _uplo("eigh", UPLO)
    s = dev.resolve_stream(stream)
    _validate_eig(a, s, "[linalg::eigh]")
    d = dt.float32 if a.dtype is dt.complex64 else a.dtype
    w, v = make_multi(P.Eigh(uplo, True), (a,), [(a.shape[:-1], d), (a.shape, a.dtype)], s)
    return w, v


def eigvals(a: array, *_extra: Any, stream: Any = None) -> array:
    """Eigenvalues of general square matrices, complex64. CPU only."""
    _need_arrays("eigvals", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_eig(a, s, "[linalg::eigvals]")
    return make(P.Eig(False), (a,), a.shape[:-1], dt.complex64, s)


def eig(a: array, *_extra: Any, stream: Any = None) -> tuple[array, array]:
    """Eigenvalues and unit right eigenvectors of general matrices, complex64. CPU only."""
    _need_arrays("eig", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_eig(a, s, "[linalg::eig]")
    w, v = make_multi(P.Eig(True), (a,), [(a.shape[:-1], dt.complex64),
                                          (a.shape, dt.complex64)], s)
    return w, v


# -------------------------------------------------------------------------------------- LU

def _validate_lu(a: array, s: dev.Stream, fname: str) -> None:
    _check_cpu_stream(s, fname)
    _check_float(a.dtype, fname)
    _check_ndim(a, fname)
    _refuse_empty_matrix(a, fname)


def _lu_helper(a: array, s: dev.Stream) -> list[array]:
    m, n = a.shape[-2:]
    return make_multi(P.LUF(), (a,), [(a.shape, a.dtype),
                                      (a.shape[:-2] + (min(m, n),), dt.uint32),
                                      (a.shape[:-1], dt.uint32)], s)


def lu(a: array, *_extra: Any, stream: Any = None) -> tuple[array, array, array]:
    """(P, L, U) with ``A = L[P, :] @ U``; P holds row indices (uint32). CPU only."""
    _need_arrays("lu", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_lu(a, s, "[linalg::lu]")
    LU, _, rows = _lu_helper(a, s)
    L = C.tril(LU, -1, stream=s)
    U = C.triu(LU, 0, stream=s)
    M, N = a.shape[-2:]
    K = min(M, N)
    nd = a.ndim
    if N != K:
        L = _idx(L, (slice(None),) * (nd - 1) + (slice(0, K),), s)
    elif M != K:
        U = _idx(U, (slice(None),) * (nd - 2) + (slice(0, K),), s)
    L = E.add(L, C.eye(M, K, stream=s), stream=s)
    return rows, L, U


def lu_factor(a: array, *_extra: Any, stream: Any = None) -> tuple[array, array]:
    """Packed LU and LAPACK's (0-based, uint32) pivots. CPU only."""
    _need_arrays("lu_factor", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_lu(a, s, "[linalg::lu_factor]")
    out = _lu_helper(a, s)
    return out[0], out[1]


def _validate_solve(a: array, b: array, s: dev.Stream, fname: str) -> None:
    _check_cpu_stream(s, fname)
    if a.ndim < 2:
        raise ValueError(f"{fname} First input must have >= 2 dimensions. Received array with "
                         f"{a.ndim} dimensions.")
    if b.ndim < 1:
        raise ValueError(f"{fname} Second input must have >= 1 dimensions. Received array with "
                         f"{b.ndim} dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fname} First input must be a square matrix. Received array with "
                         f"shape {_fmt(a.shape)}.")
    last = -2 if b.ndim > 1 else -1
    if a.shape[-1] != b.shape[last]:
        raise ValueError(f"{fname} Last dimension of first input with shape {_fmt(a.shape)} "
                         "must match second to last dimension of second input with shape "
                         f"{_fmt(b.shape)}.")
    out = dt.promote_types(a.dtype, b.dtype)
    if out is not dt.float32 and out is not dt.float64:
        raise ValueError(f"{fname} Input arrays must promote to float32 or float64.  Received "
                         f"arrays with type {a.dtype.name} and {b.dtype.name}.")
    _refuse_empty_matrix(a, fname)


def solve(a: array, b: array, *_extra: Any, stream: Any = None) -> array:
    """x with ``a @ x = b`` via LU with partial pivoting (MLX's composition). CPU only."""
    _need_arrays("solve", a, b, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_solve(a, b, s, "[linalg::solve]")
    p, L, U = lu(a, stream=s)
    from .sorting import argsort

    perm = argsort(p, -1, stream=s)
    take_axis = -1
    if b.ndim >= 2:
        perm = S.expand_dims(perm, -1, stream=s)
        take_axis -= 1
    pb = I.take_along_axis(b, perm, take_axis, stream=s)
    y = solve_triangular(L, pb, upper=False, stream=s)
    return solve_triangular(U, y, upper=True, stream=s)


def solve_triangular(a: array, b: array, *_extra: Any, upper: bool = False,
                     stream: Any = None) -> array:
    """x with ``tri(a) @ x = b`` (``tri_inv(a) @ b``, as MLX computes it). CPU only."""
    _need_arrays("solve_triangular", a, b, extra=_extra)
    _need_bool("solve_triangular", upper)
    s = dev.resolve_stream(stream)
    _validate_solve(a, b, s, "[linalg::solve_triangular]")
    from .matmul import matmul

    return matmul(_inv_impl(a, True, bool(upper), s), b, stream=s)


# ------------------------------------------------------------------------------ determinants

def _validate_det(a: array, s: dev.Stream, fname: str) -> None:
    _check_cpu_stream(s, fname)
    if dt.issubdtype(a.dtype, dt.complexfloating):
        raise ValueError(f"{fname} Complex inputs are not supported.")
    _check_ndim(a, fname)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{fname} Only defined for square matrices.")


def _det_raw_small(a: array, s: dev.Stream) -> array:
    n = a.shape[-1]
    if n == 0:
        return S.broadcast_to(array(1.0, a.dtype), a.shape[:-2], stream=s)
    lead = (slice(None),) * (a.ndim - 2)

    def el(i: int, j: int) -> array:
        return _idx(a, lead + (i, j), s)

    mul, sub = E.multiply, E.subtract
    if n == 1:
        return el(0, 0)
    if n == 2:
        return sub(mul(el(0, 0), el(1, 1), stream=s), mul(el(0, 1), el(1, 0), stream=s),
                   stream=s)
    a00, a01, a02 = el(0, 0), el(0, 1), el(0, 2)
    a10, a11, a12 = el(1, 0), el(1, 1), el(1, 2)
    a20, a21, a22 = el(2, 0), el(2, 1), el(2, 2)
    t0 = mul(a00, sub(mul(a11, a22, stream=s), mul(a12, a21, stream=s), stream=s), stream=s)
    t1 = mul(a01, sub(mul(a10, a22, stream=s), mul(a12, a20, stream=s), stream=s), stream=s)
    t2 = mul(a02, sub(mul(a10, a21, stream=s), mul(a11, a20, stream=s), stream=s), stream=s)
    return E.add(sub(t0, t1, stream=s), t2, stream=s)


def _slogdet_impl(x: array, s: dev.Stream) -> tuple[array, array]:
    n = x.shape[-1]
    d = x.dtype
    if n <= 3:
        raw = _det_raw_small(x, s)
        return E.sign(raw, stream=s), E.log(E.abs(raw, stream=s), stream=s)
    LU, piv = lu_factor(x, stream=s)
    diag = S.diagonal(LU, 0, -2, -1, stream=s)
    k = min(x.shape[-2:])
    iota = C.arange(0, k, dtype=dt.uint32, stream=s)
    parity = _astype(R.sum(E.not_equal(piv, iota, stream=s), -1, False, stream=s), dt.int32, s)
    num_neg = _astype(R.sum(E.less(diag, array(0.0, d), stream=s), -1, False, stream=s),
                      dt.int32, s)
    total = E.add(parity, num_neg, stream=s)
    two = array(2, dt.int32)
    sign_val = _astype(E.subtract(array(1, dt.int32), E.multiply(
        two, E.remainder(total, two, stream=s), stream=s), stream=s), d, s)
    logabs = R.sum(E.log(E.abs(diag, stream=s), stream=s), -1, False, stream=s)
    is_zero = R.any(E.equal(diag, array(0.0, d), stream=s), -1, False, stream=s)
    sign_val = E.where(is_zero, array(0.0, d), sign_val, stream=s)
    logabs = E.where(is_zero, array(-math.inf, d), logabs, stream=s)
    return sign_val, logabs


def slogdet(a: array, *_extra: Any, stream: Any = None) -> tuple[array, array]:
    """(sign, log|det|) of square matrices; singular: (0, -inf). CPU only."""
    _need_arrays("slogdet", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_det(a, s, "[linalg::slogdet]")
    x = _astype(a, _at_least_float(a.dtype), s)
    return _slogdet_impl(x, s)


def det(a: array, *_extra: Any, stream: Any = None) -> array:
    """Determinant: closed form up to 3x3, sign*exp(log|det|) from LU above. CPU only."""
    _need_arrays("det", a, extra=_extra)
    s = dev.resolve_stream(stream)
    _validate_det(a, s, "[linalg::det]")
    x = _astype(a, _at_least_float(a.dtype), s)
    if x.shape[-1] <= 3:
        return _det_raw_small(x, s)
    sign_val, logabs = _slogdet_impl(x, s)
    return E.multiply(sign_val, E.exp(logabs, stream=s), stream=s)


def _hide_extra() -> None:
    import inspect

    for name in __all__:
        f = globals()[name]
        sig = inspect.signature(f)
        f.__signature__ = sig.replace(parameters=[
            p for p in sig.parameters.values() if p.kind is not p.VAR_POSITIONAL])


_hide_extra()


def __dir__() -> list[str]:
    # dir(mx.linalg) as MLX shows it: MLX lists only the public functions, not our helpers
    return [n for n in ("__doc__", "__loader__", "__name__", "__package__", "__spec__")
            if n in globals()] + sorted(__all__)


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.core.linalg', not our module path
    raise AttributeError(f"module 'mlx.core.linalg' has no attribute {name!r}")
