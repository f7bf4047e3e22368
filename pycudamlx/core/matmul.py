"""Matrix products: matmul (``@``), addmm, inner, outer, tensordot, vecdot, einsum, einsum_path.

Every contraction ends in one primitive, ``Matmul`` (``alpha * (a @ b) + beta * c`` with
broadcast batches), so the GPU path (cuBLAS, or the NVRTC GEMM) is written once. The others are
views (transpose, reshape, expand_dims) around it, as MLX builds them. MLX's rules: matmul and
everything that contracts through it refuse integer dtypes; vecdot and einsum's plain sums and
products accept them.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from .. import dtypes as dt
from ..graph.primitives.matmul import Matmul
from . import device as dev
from ._base import AxisError, astype, broadcast_shapes
from ._nanobind import argument_error, to_float, to_int, to_int_list
from .array import array, make
from .creation import zeros
from .elementwise import conjugate, multiply
from .shape import broadcast_to, diagonal, expand_dims, fmt_shape, reshape, transpose

__all__ = ["matmul", "addmm", "inner", "outer", "tensordot", "vecdot", "einsum", "einsum_path"]

_SIG = {
    "matmul": "matmul(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array",
    "addmm": "addmm(c: array, a: array, b: array, /, alpha: float = 1.0, beta: float = 1.0,  *, "
             "stream: StreamOrDevice = None) -> array",
    "inner": "inner(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array",
    "outer": "outer(a: array, b: array, /, *, stream: StreamOrDevice = None) -> array",
    "tensordot": "tensordot(a: array, b: array, /, axes: int | list[Sequence[int]] = 2, *, "
                 "stream: StreamOrDevice = None) -> array",
    "vecdot": "vecdot(a: array, b: array, /, *, axis: int = -1, stream: StreamOrDevice = None) "
              "-> array",
}


def _require(fn: str, *args: Any) -> None:
    """MLX's TypeError when an operand is not an array (it does not convert scalars here)."""
    for x in args:
        if not isinstance(x, array):
            raise dt._incompatible_arguments(_SIG[fn], *args)


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def _product(a: array, b: array, batch: tuple[int, ...], dtype: dt.Dtype, s: dev.Stream,
             c: array | None = None, alpha: float = 1.0, beta: float = 0.0) -> array:
    """The Matmul node for a (..., M, K) @ b (..., K, N) with batch shape ``batch``; empty
    outputs and K == 0 become zeros (or ``beta * c``) without a GEMM."""
    m, k = a._shape[-2], a._shape[-1]
    n = b._shape[-1]
    shape = batch + (m, n)
    if _size(shape) == 0 or k == 0:
        if c is None or beta == 0.0 or _size(shape) == 0:
            return zeros(shape, dtype, stream=s)
        c = broadcast_to(c, shape, stream=s)
        return c if beta == 1.0 else multiply(c, beta, stream=s)
    if c is not None and beta != 0.0:
        return make(Matmul(float(alpha), float(beta)), (a, b, c), shape, dtype, s)
    return make(Matmul(float(alpha), 0.0), (a, b), shape, dtype, s)


def _mm_shapes(fn: str, a: array, b: array) -> tuple[array, array, bool, bool, tuple[int, ...]]:
    """1-D promotion, the inner-dimension check and the broadcast batch shape."""
    a1, b1 = a.ndim == 1, b.ndim == 1
    ash = (1,) + a._shape if a1 else a._shape
    bsh = b._shape + (1,) if b1 else b._shape
    if ash[-1] != bsh[-2]:
        raise ValueError(f"[{fn}] Last dimension of first input with shape {fmt_shape(ash)} "
                         "must match second to last dimension of second input with shape "
                         f"{fmt_shape(bsh)}.")
    batch = broadcast_shapes(ash[:-2], bsh[:-2])
    if a1:
        a = reshape(a, list(ash))
    if b1:
        b = reshape(b, list(bsh))
    return a, b, a1, b1, batch


def _final_shape(batch: tuple[int, ...], m: int, n: int, a1: bool, b1: bool
                 ) -> tuple[int, ...]:
    return batch + ((() if a1 else (m,)) + (() if b1 else (n,)))


def matmul(a: array, b: array, /, *, stream: Any = None) -> array:
    """Matrix product with broadcast batches; a 1-D operand is a row (a) or column (b) vector
    whose singleton dimension is removed from the result, as in MLX and numpy."""
    _require("matmul", a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("[matmul] Got 0 dimension input. Inputs must have at least one "
                         "dimension.")
    dtype = dt.promote_types(a._dtype, b._dtype)
    if dtype.kind not in "fc":
        raise ValueError(f"[matmul] Only inexact types are supported but {a._dtype.name} and "
                         f"{b._dtype.name} were provided which results in {dtype.name}, which "
                         "is not a floating point type.")
    s = dev.resolve_stream(stream)
    a, b, a1, b1, batch = _mm_shapes("matmul", a, b)
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    m, n = a._shape[-2], b._shape[-1]
    out = _product(a, b, batch, dtype, s)
    final = _final_shape(batch, m, n, a1, b1)
    return out if out._shape == final else reshape(out, list(final), stream=s)


def addmm(c: array, a: array, b: array, /, alpha: float = 1.0, beta: float = 1.0, *,
          stream: Any = None) -> array:
    """``alpha * (a @ b) + beta * c`` in one GEMM (cuBLAS's beta), c broadcast to the result.
    With beta == 0, c is not read (a NaN in c does not propagate), as in MLX."""
    _require("addmm", c, a, b)
    # nanobind converts (or refuses) the arguments before the op runs
    alpha_f, beta_f = to_float(alpha), to_float(beta)
    if alpha_f is None or beta_f is None:
        raise argument_error("addmm", dt._incompatible_arguments(_SIG["addmm"], c, a, b, alpha,
                                                                beta))
    alpha, beta = alpha_f, beta_f
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("[addmm] Got 0 dimension input. Inputs must have at least one "
                         "dimension.")
    dtype = dt.promote_types(dt.promote_types(a._dtype, b._dtype), c._dtype)
    if dtype.kind not in "fc":  # MLX's message says "real", yet it accepts complex64
        raise ValueError(f"[addmm] Only real floating point types are supported but "
                         f"{c._dtype.name}, {a._dtype.name} and {b._dtype.name} were provided "
                         f"which results in {dtype.name}, which is not a real floating point "
                         "type.")
    s = dev.resolve_stream(stream)
    a, b, a1, b1, batch = _mm_shapes("addmm", a, b)
    m, n = a._shape[-2], b._shape[-1]
    final = _final_shape(batch, m, n, a1, b1)
    if broadcast_shapes(c._shape, final) != final:
        raise ValueError("[addmm] input c must broadcast to the output shape")
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    c = broadcast_to(astype(c, dtype, s), final, stream=s)
    if a1:
        c = expand_dims(c, -1 if b1 else -2, stream=s)
    if b1:
        c = expand_dims(c, -1, stream=s)
    out = _product(a, b, batch, dtype, s, c, alpha, beta)
    return out if out._shape == final else reshape(out, list(final), stream=s)


def inner(a: array, b: array, /, *, stream: Any = None) -> array:
    """Sum product over the last axes (a plain product when either operand is 0-d)."""
    _require("inner", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b, stream=stream)
    if a._shape[-1] != b._shape[-1]:
        raise ValueError("[inner] a and b must have the same last dimension.")
    return tensordot(a, b, [[-1], [-1]], stream=stream)


def outer(a: array, b: array, /, *, stream: Any = None) -> array:
    """Outer product of the flattened operands (any dtype: a broadcast multiply)."""
    _require("outer", a, b)
    return multiply(reshape(a, [-1, 1], stream=stream), reshape(b, [1, -1], stream=stream),
                    stream=stream)


def _int_lists(v: Any) -> list[list[int]] | None:
    """nanobind's ``list[Sequence[int]]`` (tensordot's axes): a sequence of int sequences."""
    try:
        items = list(v)
    except Exception:  # noqa: BLE001 - not a sequence
        return None
    out = []
    for x in items:
        lst = None if isinstance(x, (str, bytes)) else to_int_list(x)
        if lst is None:
            return None
        out.append(lst)
    return out


def tensordot(a: array, b: array, /, axes: int | Sequence[Sequence[int]] = 2, *,
              stream: Any = None) -> array:
    """Contract the last ``axes`` axes of a with the first of b, or the listed axis pairs:
    one transpose + reshape per operand around one matmul."""
    _require("tensordot", a, b)
    n = to_int(axes)
    if n is not None:
        if n < 0:
            raise ValueError("[tensordot] axis must be greater or equal to 0.")
        if n > a.ndim or n > b.ndim:
            raise ValueError("[tensordot] axis must be less than the number of dimensions of "
                             "a and b.")
        ax_a = list(range(a.ndim - n, a.ndim))
        ax_b = list(range(n))
    else:
        # nanobind's list[Sequence[int]]: any sequence of int sequences
        lists = None if isinstance(axes, (str, bytes)) else _int_lists(axes)
        if lists is None:
            raise argument_error("tensordot", dt._incompatible_arguments(_SIG["tensordot"], a,
                                                                        b, axes), _SIG["tensordot"])
        if len(lists) != 2:
            raise ValueError("[tensordot] axes must be a list of two lists.")
        la, lb = lists
        if len(la) != len(lb):
            raise ValueError("[tensordot] axes must have the same size.")
        ax_a, ax_b = [], []
        for lst, x, out in ((la, a, ax_a), (lb, b, ax_b)):
            for v in lst:
                if not -x.ndim <= v < x.ndim:
                    raise AxisError(f"[tensordot] Invalid axis {v} for array with {x.ndim} "
                                    "dimensions.")
                out.append(v + x.ndim if v < 0 else v)
            if len(set(out)) != len(out):
                raise ValueError("[tensordot] Repeat axes not allowed.")
    for i, j in zip(ax_a, ax_b):
        if a._shape[i] != b._shape[j]:
            raise ValueError("[tensordot] a and b must have the same shape on the contracted "
                             "axes.")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [j for j in range(b.ndim) if j not in ax_b]
    k = _size([a._shape[i] for i in ax_a])
    fa = [a._shape[i] for i in free_a]
    fb = [b._shape[j] for j in free_b]
    s = dev.resolve_stream(stream)
    a2 = reshape(transpose(a, free_a + ax_a, stream=s), [_size(fa), k], stream=s)
    b2 = reshape(transpose(b, ax_b + free_b, stream=s), [k, _size(fb)], stream=s)
    return reshape(matmul(a2, b2, stream=s), fa + fb, stream=s)


def _sum_dtype(dtype: dt.Dtype) -> dt.Dtype:
    """The dtype of MLX's sum over ``dtype``: small integers and bool widen."""
    return {"bool": dt.int32, "int8": dt.int32, "int16": dt.int32, "uint8": dt.uint32,
            "uint16": dt.uint32}.get(dtype.name, dtype)


def vecdot(a: array, b: array, /, *, axis: int = -1, stream: Any = None) -> array:
    """``sum(conj(a) * b, axis)`` as a batched (1, K) @ (K, 1) product; integer dtypes too."""
    _require("vecdot", a, b)
    axis_i = to_int(axis)
    if axis_i is None:
        raise argument_error("vecdot", dt._incompatible_arguments(_SIG["vecdot"], a, b))
    axis = axis_i
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("[vecdot] inputs must be at least 1D.")
    if not -a.ndim <= axis < a.ndim:
        raise IndexError("[vecdot] axis is out of bounds.")
    if a.ndim != b.ndim:
        raise ValueError("[vecdot] axis is out of bounds.")
    ax = axis + a.ndim if axis < 0 else axis
    if a._shape[ax] != b._shape[ax]:
        raise ValueError("[vecdot] a and b must have the same size along axis.")
    s = dev.resolve_stream(stream)
    dtype = dt.promote_types(a._dtype, b._dtype)
    if _sum_dtype(dtype) is not dtype:
        # MLX multiplies in the narrow dtype (wrapping; bool: logical and), then sums wider.
        prod = multiply(astype(a, dtype, s), astype(b, dtype, s), stream=s)
        return _sum_axes(prod, [ax], s)
    a = astype(a, dtype, s)
    b = astype(b, dtype, s)
    if dtype.kind == "c":
        a = conjugate(a, stream=s)
    perm = [i for i in range(a.ndim) if i != ax] + [ax]
    a = transpose(a, perm, stream=s)
    b = transpose(b, perm, stream=s)
    batch = broadcast_shapes(a._shape[:-1], b._shape[:-1])
    out = _product(expand_dims(a, -2, stream=s), expand_dims(b, -1, stream=s), batch, dtype, s)
    return reshape(out, list(batch), stream=s)


# ----------------------------------------------------------------------------------------------
# einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(subscripts: str, operands: Sequence[Any]
                  ) -> tuple[list[str], str, dict[str, int], str]:
    """Inputs' and output's subscripts (ellipses replaced by unused letters), each letter's
    size, and the equation as written with an explicit output (for einsum_path's text)."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum(): incompatible function arguments: subscripts must be a str")
    if not operands:
        raise ValueError("[einsum] At least one operand is required.")
    for x in operands:
        if not isinstance(x, array):  # MLX: RuntimeError std::bad_cast
            raise dt._bad_cast(f"einsum operands must be arrays, got {type(x).__name__}")
    eq = subscripts.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"[einsum] Number of operands, {len(operands)}, does not match number "
                         f"of input subscripts, {len(ins)}")
    for part in ins + ([rhs] if arrow else []):
        rest = part.replace("...", "", 1)
        for ch in rest:
            if ch not in _LETTERS:
                if ch == "." and "..." in rest:
                    raise ValueError("[einsum] Only one ellipsis per subscript is allowed but "
                                     f"found more in '{part}'.")
                raise ValueError(f"[einsum] Subscripts must be letters, but got '{ch}'.")
    used = set(eq)
    spare = [ch for ch in _LETTERS if ch not in used]
    ell_rank = 0
    for part, x in zip(ins, operands):
        if "..." in part:
            ell_rank = max(ell_rank, x.ndim - (len(part) - 3))
    ell = "".join(spare[:max(ell_rank, 0)])
    out_ins: list[str] = []
    for i, (part, x) in enumerate(zip(ins, operands)):
        if "..." in part:
            r = x.ndim - (len(part) - 3)
            if r < 0:
                raise ValueError(f"[einsum] Operand {i} with shape {fmt_shape(x._shape)} has "
                                 f"insufficient dimensions for subscript '{part}'. The ellipsis "
                                 f"requires at least {len(part) - 3} dimensions but the operand "
                                 f"has {x.ndim} dimensions.")
            part = part.replace("...", ell[len(ell) - r:] if r else "")
        elif len(part) != x.ndim:
            raise ValueError(f"[einsum] Invalid number of subscripts {len(part)} for input {i} "
                             f"with {x.ndim} dimensions.")
        out_ins.append(part)
    if arrow:
        out = rhs.replace("...", ell)
        if len(set(out)) != len(out):
            raise ValueError("[einsum] Repeat indices not allowed in output.")
        for ch in out:
            if not any(ch in p for p in out_ins):
                raise ValueError(f"[einsum] Output subscript '{ch}' does not appear in the "
                                 "inputs.")
    else:
        counts: dict[str, int] = {}
        for p in ins:
            for ch in p.replace("...", ""):
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(ch for ch, k in counts.items() if k == 1))
    sizes: dict[str, int] = {}
    for i, (part, x) in enumerate(zip(out_ins, operands)):
        local: dict[str, int] = {}
        for d, ch in enumerate(part):
            e = x._shape[d]
            if local.setdefault(ch, e) != e:
                raise ValueError("[einsum] Dimensions of repeated subscripts do not have the "
                                 f"same size ({local[ch]} != {e}).")
        for d, ch in enumerate(part):
            e = x._shape[d]
            have = sizes.get(ch)
            if have is None or have == 1:
                sizes[ch] = e
            elif e != have and e != 1:
                raise ValueError(f"[einsum] Cannot broadcast dimension {d} of input {i} with "
                                 f"shape {fmt_shape(x._shape)} to size {have}.")
    written = eq if arrow else eq + "->" + out
    return out_ins, out, sizes, written


def _greedy_path(ins: list[str], out: str, sizes: dict[str, int]) -> list[tuple[int, ...]]:
    """The greedy contraction order MLX uses, numpy's greedy algorithm as MLX adapted it:
    pairs sharing an index first, by the most memory removed, then by FLOPs; no intermediate
    larger than the largest operand or the output and no path dearer than the naive one (else
    the rest at once). MLX's differences from numpy, kept: after the first step only pairs with
    the newest term are considered, outer products included, and contractions that sum nothing
    are paired too (numpy contracts those all at once)."""
    n = len(ins)
    if n == 1:
        return [(0,)]
    if n == 2:
        return [(0, 1)]
    out_set = set(out)

    def size(idx: set[str]) -> int:
        return _size([sizes[ch] for ch in idx])

    def find(positions: Sequence[int], sets: list[set[str]]) -> tuple:
        contract = set().union(*(sets[p] for p in positions))
        remaining = [st for i, st in enumerate(sets) if i not in positions]
        result = contract & out_set.union(*remaining)
        return result, remaining + [result], contract - result, contract

    _, _, removed, contract = find(range(n), [set(p) for p in ins])
    naive = _flops(contract, len(removed) > 0, n, sizes)
    limit = max(size(set(x)) for x in ins + [out])

    def possible(positions: tuple[int, int], sets: list[set[str]], path_cost: int) -> Any:
        result, new_sets, removed, contract = find(positions, sets)
        if size(result) > limit:
            return None
        removed_size = sum(size(sets[p]) for p in positions) - size(result)
        cost = _flops(contract, len(removed) > 0, len(positions), sizes)
        if path_cost + cost > naive:
            return None
        return [(-removed_size, cost), positions, new_sets]

    def update(results: list, best: list) -> list:
        bx, by = best[1]
        kept = []
        for cost, (x, y), con_sets in results:
            if x in best[1] or y in best[1]:
                continue
            del con_sets[by - int(by > x) - int(by > y)]
            del con_sets[bx - int(bx > x) - int(bx > y)]
            con_sets.insert(-1, best[2][-1])
            kept.append([cost, (x - int(x > bx) - int(x > by), y - int(y > bx) - int(y > by)),
                         con_sets])
        return kept

    sets = [set(p) for p in ins]
    pairs = list(itertools.combinations(range(n), 2))
    known: list = []
    path: list[tuple[int, ...]] = []
    path_cost = 0
    for _ in range(n - 1):
        for positions in pairs:
            if sets[positions[0]].isdisjoint(sets[positions[1]]):
                continue
            r = possible(positions, sets, path_cost)
            if r is not None:
                known.append(r)
        if not known:  # outer products, among the same pairs (numpy rescans them all)
            for positions in pairs:
                r = possible(positions, sets, path_cost)
                if r is not None:
                    known.append(r)
            if not known:
                path.append(tuple(range(len(sets))))
                break
        best = min(known, key=lambda x: x[0])
        known = update(known, best)
        sets = best[2]
        last = len(sets) - 1
        pairs = [(i, last) for i in range(last)]
        path.append(best[1])
        path_cost += best[0][1]
    return path


def _flops(idx: set[str], inner: bool, terms: int, sizes: dict[str, int]) -> int:
    """numpy's FLOP estimate of one contraction (the figure MLX prints)."""
    factor = max(1, terms - 1) + (1 if inner else 0)
    return _size([sizes[ch] for ch in idx]) * factor


def _path_info(ins: list[str], out: str, sizes: dict[str, int], path: list[tuple[int, ...]]
               ) -> tuple[int, int, int, int]:
    all_idx = set("".join(ins))
    naive_scale = len(all_idx)
    naive = _flops(all_idx, len(all_idx - set(out)) > 0, len(ins), sizes)
    opt = 0
    opt_scale = 0
    cur = [set(p) for p in ins]
    for step in path:
        picked = [cur[i] for i in step]
        rest = [c for i, c in enumerate(cur) if i not in step]
        idx = set().union(*picked)
        keep = set(out).union(*rest) if rest else set(out)
        new = idx & keep
        opt += _flops(idx, len(idx - new) > 0, len(step), sizes)
        opt_scale = max(opt_scale, len(idx))
        cur = rest + [new]
    return naive_scale, opt_scale, naive, opt


def einsum_path(subscripts: str, *operands: array) -> tuple[list[tuple[int, ...]], str]:
    """The contraction order einsum uses (numpy's greedy one, as MLX's) and MLX's summary."""
    ins, out, sizes, _ = _parse_einsum(subscripts, operands)
    path = _greedy_path(ins, out, sizes)
    ns, os_, nf, of = _path_info(ins, out, sizes, path)
    text = (f"  Complete contraction:  {subscripts}\n"
            f"         Naive scaling:  {ns}\n"
            f"     Optimized scaling:  {os_}\n"
            f"      Naive FLOP count:  {nf}\n"
            f"  Optimized FLOP count:  {of}\n")
    return path, text


def _sum_axes(x: array, axes: list[int], s: dev.Stream) -> array:
    """Sum over ``axes`` (MLX's sum dtypes) as a product with a ones vector, so einsum's sums
    run on the GEMM path, integers included."""
    if not axes:
        return x
    dtype = _sum_dtype(x._dtype)
    x = astype(x, dtype, s)
    keep = [i for i in range(x.ndim) if i not in axes]
    kshape = [x._shape[i] for i in keep]
    k = _size([x._shape[i] for i in axes])
    x2 = reshape(transpose(x, keep + axes, stream=s), [_size(kshape), k], stream=s)
    ones = broadcast_to(array(1, dtype), (k, 1), stream=s)
    return reshape(_product(x2, ones, (), dtype, s), kshape, stream=s)


def _diagonals(x: array, sub: str, s: dev.Stream) -> tuple[array, str]:
    """Take the diagonal of every repeated letter (``ii->i``): views, no copy."""
    while True:
        for i, ch in enumerate(sub):
            j = sub.find(ch, i + 1)
            if j >= 0:
                x = diagonal(x, 0, i, j, stream=s)
                sub = sub[:i] + sub[i + 1:j] + sub[j + 1:] + ch
                break
        else:
            return x, sub


def _contract(x: array, xs: str, y: array, ys: str, keep: set[str], s: dev.Stream
              ) -> tuple[array, str]:
    """x and y contracted over their shared letters not in ``keep``; shared kept letters are
    a batch; no contracted letter is a broadcast multiply (integers allowed, as in MLX)."""
    shared = [ch for ch in xs if ch in ys]
    batch = [ch for ch in shared if ch in keep]
    con = [ch for ch in shared if ch not in keep]
    fx = [ch for ch in xs if ch not in ys]
    fy = [ch for ch in ys if ch not in xs]
    if not con:
        out = "".join(batch + fx + fy)
        xv = transpose(x, [xs.index(ch) for ch in batch + fx], stream=s)
        yv = transpose(y, [ys.index(ch) for ch in batch + fy], stream=s)
        xv = reshape(xv, list(xv._shape) + [1] * len(fy), stream=s)
        yv = reshape(yv, list(yv._shape[:len(batch)]) + [1] * len(fx)
                     + list(yv._shape[len(batch):]), stream=s)
        return multiply(xv, yv, stream=s), out
    shape_of = {ch: x._shape[xs.index(ch)] for ch in xs}
    shape_of.update({ch: y._shape[ys.index(ch)] for ch in ys})
    bshape = [shape_of[ch] for ch in batch]
    m = _size([shape_of[ch] for ch in fx])
    n = _size([shape_of[ch] for ch in fy])
    k = _size([shape_of[ch] for ch in con])
    xv = reshape(transpose(x, [xs.index(ch) for ch in batch + fx + con], stream=s),
                 bshape + [m, k], stream=s)
    yv = reshape(transpose(y, [ys.index(ch) for ch in batch + con + fy], stream=s),
                 bshape + [k, n], stream=s)
    r = matmul(xv, yv, stream=s)
    out = "".join(batch + fx + fy)
    return reshape(r, bshape + [shape_of[ch] for ch in fx + fy], stream=s), out


def einsum(subscripts: str, *operands: array, stream: Any = None) -> array:
    """Einstein summation along numpy's greedy path: diagonals are views, sums and
    contractions go through the GEMM, contractions with matmul's dtype rules as in MLX."""
    ins, out, sizes, _ = _parse_einsum(subscripts, operands)
    s = dev.resolve_stream(stream)
    path = _greedy_path(ins, out, sizes)
    terms: list[tuple[array, str]] = []
    for x, sub in zip(operands, ins):
        target = tuple(sizes[ch] for ch in sub)
        if x._shape != target:
            x = broadcast_to(x, target, stream=s)
        terms.append(_diagonals(x, sub, s))
    terms = [(x, sub) for x, sub in terms]

    def reduce_unique(idx: int) -> None:
        x, sub = terms[idx]
        others = set(out).union(*(set(t[1]) for i, t in enumerate(terms) if i != idx))
        axes = [i for i, ch in enumerate(sub) if ch not in others]
        if axes:
            terms[idx] = (_sum_axes(x, axes, s), "".join(ch for ch in sub if ch in others))

    for i in range(len(terms)):
        reduce_unique(i)
    for step in path:
        if len(step) == 1:
            continue
        picked = [terms[i] for i in step]
        rest = [t for k, t in enumerate(terms) if k not in step]
        while len(picked) > 1:  # an n-ary step (never from the greedy path): pairwise
            (x, xs), (y, ys) = picked[0], picked[1]
            keep = set(out).union(*(set(t[1]) for t in rest + picked[2:]))
            picked = [_contract(x, xs, y, ys, keep, s)] + picked[2:]
        terms = rest + picked
        reduce_unique(len(terms) - 1)
    while len(terms) > 1:  # a path that left operands (never with numpy's greedy)
        (x, xs), (y, ys) = terms[0], terms[1]
        rest = terms[2:]
        keep = set(out).union(*(set(t[1]) for t in rest))
        terms = rest + [_contract(x, xs, y, ys, keep, s)]
    x, sub = terms[0]
    extra = [i for i, ch in enumerate(sub) if ch not in out]
    if extra:
        x = _sum_axes(x, extra, s)
        sub = "".join(ch for ch in sub if ch in out)
    if sub != out:
        x = transpose(x, [sub.index(ch) for ch in out], stream=s)
    return x
