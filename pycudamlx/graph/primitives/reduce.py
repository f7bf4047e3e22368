"""Reduction, scan, softmax and diff primitives, computed with numpy.

The op functions (pycudamlx/core/reduce.py) check arguments and decide the output dtype; these
primitives only compute. float16/bfloat16 reductions accumulate in float32 and are cast back, as
MLX does; its CPU scans (cumsum, cumprod, logcumsumexp) keep the running value in the half dtype.

GPU streams: ``eval_gpu`` launches reduce.cu's kernels through backend/cuda/reduce.py (row and
column reductions with split partials, block scans, fused softmax, bitwise median selection);
diff is n subtract launches on views.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules
from .elementwise import cast_numpy


_cuda = cuda_modules("array", "elementwise", "reduce")

_F32 = np.dtype(np.float32)


def _mlx_exp32(x: np.ndarray) -> np.ndarray:
    """MLX's CPU float32 exp (see backend/optable.py)."""
    from ...backend.optable import _exp32

    return _exp32(x)


# float16 and bfloat16 as numpy dtypes: bfloat16's joins when pycudamlx first needs ml_dtypes
# (dtypes._load_bfloat16); no bfloat16 numpy array reaches us before that.
_HALF = {np.dtype(np.float16)}
dt.on_bfloat16_loaded(_HALF.add)


def _work(x: np.ndarray, float_result: bool = False) -> np.ndarray:
    """``x`` in the dtype the computation runs in: halves in float32, and integers/bools in
    float32 when the result is floating (mean, var, logsumexp ...)."""
    d = x.dtype
    if d in _HALF or (float_result and d.kind in "biu"):
        return x.astype(_F32)
    return x


def _finish(r: Any, dtype: dt.Dtype) -> np.ndarray:
    r = np.asarray(r)
    if r.dtype == dtype.np_dtype:
        return r
    return cast_numpy(r, dtype)


def _count(x: np.ndarray, axes: tuple[int, ...]) -> int:
    n = 1
    for ax in axes:
        n *= x.shape[ax]
    return n


def _float_sum(w: np.ndarray, axes: tuple, keepdims: bool) -> Any:
    """Sum of a real float array as MLX's CPU adds it: over trailing axes (a contiguous run of
    memory) one running sum from the first element to the last, in the array's dtype (numpy's
    pairwise sum of 3e5 float32 values differed from MLX's by 1e-5 relative); over leading or
    interleaved axes numpy's order, which is MLX's row-by-row accumulation for leading axes."""
    k = len(axes)
    if (w.dtype.kind != "f" or k == 0 or w.size == 0
            or axes != tuple(range(w.ndim - k, w.ndim))):
        return np.sum(w, axis=axes, keepdims=keepdims)
    outer = w.shape[:w.ndim - k]
    flat = np.ascontiguousarray(w).reshape(outer + (-1,))
    total = np.add.accumulate(flat, axis=-1, dtype=w.dtype)[..., -1]
    return total.reshape(outer + (1,) * k) if keepdims else total


def _sum(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    if dtype.kind == "f":
        return _float_sum(_work(x), axes, keepdims)
    acc = dtype.np_dtype if dtype.kind in "iu" else None
    return np.sum(_work(x), axis=axes, keepdims=keepdims, dtype=acc)


def _prod(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    acc = dtype.np_dtype if dtype.kind in "iu" else None
    return np.prod(_work(x), axis=axes, keepdims=keepdims, dtype=acc)


_SUM_ACC = {"b": np.int32, "i": np.int32, "u": np.uint32}


def _mean(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    if x.dtype.kind in "biu":
        # MLX sums integers in sum's dtype (wrapping), then converts to float32 and divides.
        acc = x.dtype if x.dtype.itemsize >= 4 and x.dtype.kind != "b" else _SUM_ACC[
            x.dtype.kind]
        s = np.sum(x, axis=axes, keepdims=keepdims, dtype=acc).astype(_F32)
    else:
        w = _work(x)
        s = _float_sum(w, axes, keepdims) if w.dtype.kind == "f" else \
            np.sum(w, axis=axes, keepdims=keepdims)
    # MLX multiplies the sum, rounded to the result dtype, by 1/n in that dtype (not a
    # division: float32 results differ by an ulp, float16/bfloat16 ones visibly). The product
    # of two halves is exact in float32, so one rounding of it is the half multiply.
    out = dtype.np_dtype
    with np.errstate(divide="ignore", invalid="ignore"):  # empty: 0 * inf = NaN, as MLX
        inv = np.asarray(np.float64(1.0) / np.float64(_count(x, axes))).astype(out)
    if s.dtype != out:
        return np.asarray(s).astype(out).astype(_F32) * inv.astype(_F32)
    return s * inv


def _var(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    w = _work(x, True)
    n = _count(x, axes)
    if w.dtype.kind == "f" and x.dtype not in _HALF:
        # MLX's CPU: mu = sum * (1/n); the squared deviations' sum times 1/n (ddof 0) or
        # divided by n - ddof; each sum one running sum over trailing axes (bit for bit).
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.asarray(np.float64(1.0) / np.float64(n)).astype(w.dtype)
            d = w - _float_sum(w, axes, True) * inv
            ss = _float_sum(d * d, axes, keepdims)
            if param == 0:
                return ss * inv
            return ss / np.asarray(max(n - param, 0), dtype=w.dtype)
    m = np.sum(w, axis=axes, keepdims=True) / np.asarray(n, dtype=w.dtype)
    d = w - m
    sq = (d * np.conj(d)).real if d.dtype.kind == "c" else d * d
    ss = np.sum(sq, axis=axes, keepdims=keepdims)
    # MLX divides by max(n - ddof, 0): inf (or nan for a zero sum) when ddof >= n.
    return ss / np.asarray(max(n - param, 0), dtype=ss.dtype)


def _std(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.sqrt(_var(x, axes, keepdims, dtype, param))


def _max(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.max(_work(x), axis=axes, keepdims=keepdims)


def _min(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.min(_work(x), axis=axes, keepdims=keepdims)


def _all(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.all(x, axis=axes, keepdims=keepdims)


def _any(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.any(x, axis=axes, keepdims=keepdims)


def _count_nonzero(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype,
                   param: Any) -> Any:
    return np.sum(x != 0, axis=axes, keepdims=keepdims, dtype=np.int32)


def _logsumexp(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    if x.dtype in _HALF and axes != (x.ndim - 1,):
        return _composed_half_logsumexp(x, axes, keepdims)
    w = _work(x, True)
    if w.dtype.kind == "c":
        return np.log(np.sum(np.exp(w), axis=axes, keepdims=keepdims))
    m = np.max(w, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, np.zeros((), w.dtype))
    if w.dtype == _F32:
        # MLX's CPU: its own exp, and over the last axis alone one running float32 sum
        total = _float_sum(_mlx_exp32(w - m), axes, True)
        s = np.log(total.astype(np.float64)).astype(_F32) + m
    else:
        s = np.log(np.sum(np.exp(w - m), axis=axes, keepdims=True)) + m
    return s if keepdims else np.squeeze(s, axis=axes)


def _composed_half_logsumexp(x: np.ndarray, axes: tuple, keepdims: bool) -> np.ndarray:
    """MLX fuses logsumexp over the last axis alone; over other axes it composes max, subtract,
    exp, sum, log and add, and in float16/bfloat16 each of those rounds to the half dtype."""
    d = x.dtype

    def rnd(v: np.ndarray) -> np.ndarray:
        return v.astype(d).astype(_F32)

    m = np.max(x, axis=axes, keepdims=True).astype(_F32)
    e = rnd(np.exp(rnd(x.astype(_F32) - m)))
    s = rnd(np.log(rnd(np.sum(e, axis=axes, keepdims=True))))
    out = np.where(np.isinf(m), m, rnd(s + m))
    return out if keepdims else np.squeeze(out, axis=axes)


def _median(x: np.ndarray, axes: tuple, keepdims: bool, dtype: dt.Dtype, param: Any) -> Any:
    return np.median(_work(x, True), axis=axes, keepdims=keepdims)


REDUCERS: dict[str, Callable[..., Any]] = {
    "sum": _sum, "prod": _prod, "mean": _mean, "var": _var, "std": _std, "max": _max,
    "min": _min, "all": _all, "any": _any, "count_nonzero": _count_nonzero,
    "logsumexp": _logsumexp, "median": _median,
}


class Reduce(Primitive):
    """``op`` over ``axes`` (normalized, sorted, unique); ``param`` is var/std's ddof."""

    __slots__ = ("op", "axes", "keepdims", "param", "name", "_fn")
    gpu_kernel = True

    def __init__(self, op: str, axes: tuple[int, ...], keepdims: bool, param: Any = None
                 ) -> None:
        self.op = op
        self.axes = axes
        self.keepdims = keepdims
        self.param = param
        self.name = op
        self._fn = REDUCERS[op]

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        with np.errstate(all="ignore"):
            r = self._fn(inputs[0], self.axes, self.keepdims, dtype, self.param)
            return [_finish(r, dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, ew, kernels = _cuda()
        shape, dtype = outs[0]
        x = inputs[0]
        out = gpu_array.empty(shape, dtype, stream)
        if not self.axes and self.op in ("sum", "prod"):
            ew.copy(x, out, stream)  # over no axes: a copy in the input's dtype, as MLX
        else:
            kernels.reduce(self.op, x, self.axes, out, stream, ddof=self.param or 0)
        return [out]


class ArgReduce(Primitive):
    """argmax/argmin along one axis (None: over the flattened array); first index on ties,
    the first NaN wins, as MLX."""

    __slots__ = ("op", "axis", "name")
    gpu_kernel = True

    def __init__(self, op: str, axis: int | None) -> None:
        self.op = op
        self.axis = axis
        self.name = op

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        x = _work(inputs[0])
        fn = np.argmax if self.op == "argmax" else np.argmin
        r = fn(x.reshape(-1)) if self.axis is None else fn(x, axis=self.axis)
        return [np.asarray(r).astype(np.uint32).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, kernels = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        kernels.argreduce(self.op, inputs[0], self.axis, out, stream)
        return [out]


def scan_identity(op: str, dtype: np.dtype) -> Any:
    """The value an exclusive scan ``op`` starts from in numpy ``dtype`` (its first output)."""
    if op in ("cumsum",):
        return 0
    if op == "cumprod":
        return 1
    if op == "logcumsumexp":
        return -np.inf
    if dtype.kind == "b":
        return op == "cummin"
    if dtype.kind == "c":
        return complex(-np.inf, -np.inf) if op == "cummax" else complex(np.inf, np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "cummax" else info.max
    return -np.inf if op == "cummax" else np.inf


def _half_logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MLX's CPU logaddexp on float16/bfloat16 operands: every step (the difference, exp,
    log1p, the sum) rounds to the half dtype."""
    h = a.dtype
    m = np.maximum(a, b)
    n = np.minimum(a, b)
    d = (n.astype(_F32) - m.astype(_F32)).astype(h)
    e = np.exp(d.astype(_F32)).astype(h)
    lp = np.log1p(e.astype(_F32)).astype(h)
    out = (m.astype(_F32) + lp.astype(_F32)).astype(h)
    return np.where((n == -np.inf) | (m == np.inf), m, out)


def _f32_logcumsumexp(x: np.ndarray, ax: int) -> np.ndarray:
    """MLX's CPU scan with its logaddexp (max + log1p(exp(min - max)), its own exp)."""
    from ...backend.optable import _logaddexp

    r = np.moveaxis(x, ax, 0).copy()
    for i in range(1, r.shape[0]):
        r[i] = _logaddexp(r[i - 1], r[i])
    return np.moveaxis(r, 0, ax)


def _half_scan(op: str, x: np.ndarray, ax: int) -> np.ndarray:
    """cumsum/cumprod/logcumsumexp of a float16/bfloat16 array with the running value kept in
    that dtype, as MLX's CPU scan does (a bfloat16 cumsum stalls once the total's spacing
    exceeds the addends; accumulating in float32 would not)."""
    if op == "cumsum":
        return np.add.accumulate(x, axis=ax, dtype=x.dtype)
    if op == "cumprod":
        return np.multiply.accumulate(x, axis=ax, dtype=x.dtype)
    r = np.moveaxis(x, ax, 0).copy()
    for i in range(1, r.shape[0]):
        r[i] = _half_logaddexp(r[i - 1], r[i])
    return np.moveaxis(r, 0, ax)


class Scan(Primitive):
    """Inclusive/exclusive, forward/reverse scans along one axis (the op functions flatten for
    ``axis=None``)."""

    __slots__ = ("op", "axis", "reverse", "inclusive", "name")
    gpu_kernel = True

    def __init__(self, op: str, axis: int, reverse: bool, inclusive: bool) -> None:
        self.op = op
        self.axis = axis
        self.reverse = reverse
        self.inclusive = inclusive
        self.name = op

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        x = inputs[0]
        if x.dtype != dtype.np_dtype:
            x = cast_numpy(x, dtype)  # bool cumsum -> int32, cumsum(dtype=...)
        ax = self.axis
        if self.reverse:
            x = np.flip(x, ax)
        op = self.op
        with np.errstate(all="ignore"):
            if x.dtype in _HALF and op != "cummax" and op != "cummin":
                r = _half_scan(op, x, ax)
            elif op == "cumsum":
                acc = dtype.np_dtype if dtype.kind in "iub" else None
                r = np.cumsum(_work(x), axis=ax, dtype=acc)
            elif op == "cumprod":
                acc = dtype.np_dtype if dtype.kind in "iu" else None
                r = np.cumprod(_work(x), axis=ax, dtype=acc)
            elif op == "cummax":
                r = np.maximum.accumulate(_work(x), axis=ax)
            elif op == "cummin":
                r = np.minimum.accumulate(_work(x), axis=ax)
            else:  # logcumsumexp
                w = _work(x, True)
                if w.dtype.kind == "c":
                    r = np.log(np.cumsum(np.exp(w), axis=ax))
                else:
                    r = _f32_logcumsumexp(w, ax) if w.dtype == _F32 else \
                        np.logaddexp.accumulate(w, axis=ax)
            r = _finish(r, dtype)
            if not self.inclusive and r.shape[ax] > 0:
                first = [slice(None)] * r.ndim
                first[ax] = slice(0, 1)
                head = np.full(r[tuple(first)].shape, scan_identity(op, r.dtype), r.dtype)
                rest = [slice(None)] * r.ndim
                rest[ax] = slice(0, -1)
                r = np.concatenate([head, r[tuple(rest)]], axis=ax)
            if self.reverse:
                r = np.flip(r, ax)
        return [np.ascontiguousarray(r)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, kernels = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        kernels.scan(self.op, inputs[0], self.axis, self.reverse, self.inclusive, out, stream)
        return [out]


class Softmax(Primitive):
    """exp(x - max) / sum over ``axes``; integers compute in float32, and halves too when
    ``precise`` (otherwise in their own dtype on the CPU, as MLX's CPU backend does)."""

    __slots__ = ("axes", "precise")
    name = "softmax"
    gpu_kernel = True

    def __init__(self, axes: tuple[int, ...], precise: bool = False) -> None:
        self.axes = axes
        self.precise = precise

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        x = inputs[0]
        with np.errstate(all="ignore"):
            if x.dtype in _HALF and not self.precise and x.size:
                return [_half_softmax(x, self.axes)]
            w = _work(x, True)
            if w.dtype.kind != "c" and w.size:
                w = w - np.max(w, axis=self.axes, keepdims=True)
            if w.dtype == _F32 and w.size:
                # MLX's CPU: its own exp; over the last axis alone its fused kernel adds the
                # exponentials one after the other and multiplies by 1 / sum (bit for bit).
                e = _mlx_exp32(w)
                if self.axes == (w.ndim - 1,):
                    total = np.add.accumulate(e, axis=-1, dtype=_F32)[..., -1:]
                    return [_finish(e * (np.float32(1) / total), dtype)]
                r = e / np.sum(e, axis=self.axes, keepdims=True)
                return [_finish(r, dtype)]
            e = np.exp(w)
            r = e / np.sum(e, axis=self.axes, keepdims=True)
        return [_finish(r, dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, kernels = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        kernels.softmax(inputs[0], self.axes, out, stream)
        return [out]


def _half_softmax(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """MLX's CPU softmax of a float16/bfloat16 array without ``precise``: every step rounds to
    the half dtype. Over the last axis alone its fused kernel adds the exponentials one after
    the other in that dtype and multiplies by the rounded inverse of the sum; over other axes it
    composes exp, sum (accumulated in float32, then rounded) and divide."""
    half = x.dtype
    shifted = (x.astype(_F32) - np.max(x, axis=axes, keepdims=True).astype(_F32)).astype(half)
    e = np.exp(shifted.astype(_F32)).astype(half)
    if axes == (x.ndim - 1,):
        total = np.add.accumulate(e, axis=-1, dtype=half)[..., -1:]
        inv = (np.float32(1) / total.astype(_F32)).astype(half)
        return (e.astype(_F32) * inv.astype(_F32)).astype(half)
    total = np.sum(e.astype(_F32), axis=axes, keepdims=True).astype(half)
    return (e.astype(_F32) / total.astype(_F32)).astype(half)


class Diff(Primitive):
    """The n-th forward difference along ``axis``; bools differ by xor, as MLX."""

    __slots__ = ("n", "axis")
    name = "diff"
    gpu_kernel = True

    def __init__(self, n: int, axis: int) -> None:
        self.n = n
        self.axis = axis

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        x = inputs[0]
        half = x.dtype if x.dtype in _HALF else None
        ax = self.axis
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[ax] = slice(1, None)
        lo[ax] = slice(None, -1)
        hi_t, lo_t = tuple(hi), tuple(lo)
        with np.errstate(all="ignore"):
            for _ in range(self.n):
                if x.shape[ax] == 0:
                    break
                if half is not None:  # MLX rounds every order's difference to the half type
                    x = np.subtract(x[hi_t].astype(_F32), x[lo_t].astype(_F32)).astype(half)
                else:
                    x = np.not_equal(x[hi_t], x[lo_t]) if x.dtype.kind == "b" else np.subtract(
                        x[hi_t], x[lo_t])
        return [_finish(x, dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, kernels = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        kernels.diff(inputs[0], self.n, self.axis, out, stream)
        return [out]
