"""Shape, copy and indexing primitives: views, reshape, assembly, gathers and scatters.

Views (transpose, slicing, broadcast, squeeze, flip, diagonal, split, as_strided, reshapes of a
compatible layout) are affine maps of the input's (offset, strides): ``ViewSpec`` describes one,
and both backends apply it without copying (numpy views on the CPU, GpuArray views on the GPU:
no allocation). Copies (concatenate, pad, roll, diag, contiguous, tile/repeat through reshape)
allocate the output once and fill it with strided copies (elementwise.copy) or strided fills.
Gathers and scatters (integer-array indexing, dynamic slices) use the gather.cu kernels.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules
from .elementwise import broadcast_view, cast_numpy

Shape = tuple[int, ...]
#: A destination region of a contiguous output: (element offset, shape, element strides).
Region = tuple[int, Shape, tuple[int, ...]]

_as_strided = np.lib.stride_tricks.as_strided


_cuda = cuda_modules("array", "elementwise", "indexing")


def _size(shape: Sequence[int]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= shape[i]
    return tuple(strides)


# ----------------------------------------------------------------------------------------------
# Affine views


class ViewSpec:
    """An affine view: ``offset = in_offset + sum(off[d] * in_strides[d])`` and, for each output
    dimension j, ``stride_j = sum(c * in_strides[d] for d, c in terms[j])``.

    ``off[d]`` is the input index of the view's first element along d (in range whenever the
    view is not empty), so the numpy backend can start its view at that element.
    """

    __slots__ = ("shape", "off", "terms", "_memo")

    def __init__(self, shape: Shape, off: tuple[int, ...],
                 terms: tuple[tuple[tuple[int, int], ...], ...]) -> None:
        self.shape = shape
        self.off = off
        self.terms = terms
        self._memo: dict | None = None

    def apply(self, offset: int, strides: Sequence[int]) -> tuple[int, tuple[int, ...]]:
        """The view's (offset, strides) over an input at ``offset`` with ``strides``.

        Memoised per input strides: a spec reused every step (a cached transpose of a weight,
        see core/shape._permute) sees the same strides each time."""
        if type(strides) is not tuple:
            strides = tuple(strides)
        memo = self._memo
        if memo is not None:
            hit = memo.get(strides)
            if hit is not None:
                return offset + hit[0], hit[1]
        delta = 0
        for d, c in enumerate(self.off):
            if c:
                delta += c * strides[d]
        out = tuple(sum(c * strides[d] for d, c in t) for t in self.terms)
        if memo is None:
            memo = self._memo = {}
        elif len(memo) >= 8:
            memo.clear()
        memo[strides] = (delta, out)
        return offset + delta, out

    def gpu(self, x: Any) -> Any:
        offset, strides = self.apply(x.offset, x.strides)
        return x.view(offset, self.shape, strides)

    def numpy(self, x: np.ndarray, writeable: bool = False) -> np.ndarray:
        shape = self.shape
        if 0 in shape:
            return np.empty(shape, x.dtype)
        base = x[tuple(slice(c, None) for c in self.off)] if any(self.off) else x
        bs = x.strides
        strides = tuple(sum(c * bs[d] for d, c in t) for t in self.terms)
        return _as_strided(base, shape, strides, writeable=writeable)

    def __repr__(self) -> str:
        return f"ViewSpec({self.shape}, off={self.off}, terms={self.terms})"


def identity_spec(shape: Shape) -> ViewSpec:
    return ViewSpec(shape, (0,) * len(shape), tuple(((d, 1),) for d in range(len(shape))))


def region_numpy(out: np.ndarray, region: Region) -> np.ndarray:
    """A writeable numpy view of a region of the contiguous array ``out``."""
    offset, shape, strides = region
    item = out.dtype.itemsize
    flat = out.reshape(-1)
    return _as_strided(flat[offset:], shape, tuple(s * item for s in strides), writeable=True)


def region_gpu(out: Any, region: Region) -> Any:
    offset, shape, strides = region
    return out.view(out.offset + offset, shape, strides)


class View(Primitive):
    """A zero-copy view (transpose, slice, broadcast_to, squeeze, expand_dims, flip, diagonal)."""

    __slots__ = ("spec", "name")
    gpu_kernel = True

    def __init__(self, spec: ViewSpec, name: str = "view") -> None:
        self.spec = spec
        self.name = name

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [self.spec.numpy(inputs[0])]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        return [self.spec.gpu(inputs[0])]


class Split(Primitive):
    """Several views of one input (mx.split): one output per spec."""

    __slots__ = ("specs",)
    name = "split"
    gpu_kernel = True

    def __init__(self, specs: Sequence[ViewSpec]) -> None:
        self.specs = tuple(specs)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [s.numpy(inputs[0]) for s in self.specs]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        return [s.gpu(inputs[0]) for s in self.specs]


# ----------------------------------------------------------------------------------------------
# Reshape, contiguous copies, as_strided


#: nocopy_reshape_strides by (old shape, old strides, new shape): models reshape the same
#: activations every step, and the rule costs ~5 us of Python against a dict lookup's 0.1.
_reshape_strides: dict[tuple, tuple[int, ...] | None] = {}


def nocopy_reshape_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                           new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides that view ``old`` as ``new_shape`` without copying, or None (numpy's rule)."""
    key = (tuple(old_shape), tuple(old_strides), tuple(new_shape))
    try:
        return _reshape_strides[key]
    except KeyError:
        pass
    strides = _nocopy_reshape_strides(old_shape, old_strides, new_shape)
    if len(_reshape_strides) >= 4096:
        _reshape_strides.clear()
    _reshape_strides[key] = strides
    return strides


def _nocopy_reshape_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                            new_shape: Sequence[int]) -> tuple[int, ...] | None:
    if _size(new_shape) == 0:
        return contiguous_strides(new_shape)
    olddims = [e for e in old_shape if e != 1]
    oldstrides = [s for e, s in zip(old_shape, old_strides) if e != 1]
    newdims = list(new_shape)
    newnd, oldnd = len(newdims), len(olddims)
    newstrides = [0] * newnd
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < newnd and oi < oldnd:
        np_ = newdims[ni]
        op = olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= newdims[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1]:
                return None
        newstrides[nj - 1] = oldstrides[oj - 1]
        for nk in range(nj - 1, ni, -1):
            newstrides[nk - 1] = newstrides[nk] * newdims[nk]
        ni = nj
        nj += 1
        oi = oj
        oj += 1
    last = newstrides[ni - 1] if ni >= 1 else 1
    for nk in range(ni, newnd):
        newstrides[nk] = last
    return tuple(newstrides)


def gpu_contiguous_copy(x: Any, dtype: dt.Dtype, stream: Any) -> Any:
    """A new contiguous GpuArray holding x (cast to dtype)."""
    gpu_array, launch, _ = _cuda()
    out = gpu_array.empty(tuple(x.shape), dtype, stream)
    launch.copy(x, out, stream)
    return out


class Reshape(Primitive):
    """A view when the input's layout allows it (numpy's rule), else a contiguous copy."""

    __slots__ = ()
    name = "reshape"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        return [inputs[0].reshape(outs[0][0])]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        x = inputs[0]
        shape = outs[0][0]
        strides = nocopy_reshape_strides(x.shape, x.strides, shape)
        if strides is None:
            x = gpu_contiguous_copy(x, x.dtype, stream)
            strides = contiguous_strides(shape)
        return [x.view(x.offset, shape, strides)]


def _is_row_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    expected = 1
    for e, s in zip(reversed(shape), reversed(strides)):
        if e != 1 and s != expected:
            return False
        expected *= e
    return True


class Copy(Primitive):
    """A contiguous copy, cast to the output dtype (astype of broadcasts, full(shape, array))."""

    __slots__ = ()
    name = "copy"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        dtype = outs[0][1]
        if x.dtype != dtype.np_dtype:
            x = cast_numpy(x, dtype)
        return [np.array(x, order="C", copy=True)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        shape, dtype = outs[0]
        return [gpu_contiguous_copy(broadcast_view(inputs[0], shape), dtype, stream)]


class Depends(Primitive):
    """mx.depends: the outputs are the first ``n_out`` inputs themselves (no copy); the inputs
    after them are dependencies, evaluated first and otherwise unused (no gradient reaches
    them)."""

    __slots__ = ("n_out",)
    name = "depends"
    gpu_kernel = True

    def __init__(self, n_out: int) -> None:
        self.n_out = n_out

    def grad_inputs(self, n: int) -> Sequence[int]:
        return range(self.n_out)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list:
        return list(inputs[:self.n_out])

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list:
        return list(inputs[:self.n_out])


class Contiguous(Primitive):
    """mx.contiguous: the input itself when row-contiguous (or column-major, if allowed)."""

    __slots__ = ("allow_col_major",)
    name = "contiguous"
    gpu_kernel = True

    def __init__(self, allow_col_major: bool) -> None:
        self.allow_col_major = allow_col_major

    def _keep(self, shape: Sequence[int], strides: Sequence[int]) -> bool:
        if _is_row_contiguous(shape, strides):
            return True
        return self.allow_col_major and _is_row_contiguous(shape[::-1], strides[::-1])

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        item = x.dtype.itemsize
        if self._keep(x.shape, [s // item for s in x.strides]):
            return [x]
        return [np.ascontiguousarray(x)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        x = inputs[0]
        if self._keep(x.shape, x.strides):
            return [x]
        return [gpu_contiguous_copy(x, x.dtype, stream)]


class AsStrided(Primitive):
    """A view with explicit shape, strides and offset over the row-major input (copied to a
    contiguous layout first when it is not one). Bounds are checked when the op is built."""

    __slots__ = ("shape", "strides", "offset")
    name = "as_strided"
    gpu_kernel = True

    def __init__(self, shape: Shape, strides: tuple[int, ...], offset: int) -> None:
        self.shape = shape
        self.strides = strides
        self.offset = offset

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = np.ascontiguousarray(inputs[0]).reshape(-1)
        if 0 in self.shape:
            return [np.empty(self.shape, x.dtype)]
        item = x.dtype.itemsize
        # Bounds were checked when the op was built: every addressed element lies in x.
        return [_as_strided(x[self.offset:], self.shape, tuple(s * item for s in self.strides),
                            writeable=False)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        x = inputs[0]
        if not _is_row_contiguous(x.shape, x.strides):
            x = gpu_contiguous_copy(x, x.dtype, stream)
        return [x.view(x.offset + self.offset, self.shape, self.strides)]


# ----------------------------------------------------------------------------------------------
# Assembly: an output filled by strided copies and fills


class Assemble(Primitive):
    """A new contiguous output built from pieces: an optional initial value for every element,
    then strided copies of (views of) inputs into regions, then fills of regions with a constant
    or an input's first element. Concatenate, stack, roll, constant pad, diag and eye use it."""

    __slots__ = ("name", "init", "blocks", "fills")
    gpu_kernel = True

    def __init__(self, name: str, init: Any, blocks: Sequence[tuple[int, ViewSpec | None, Region]],
                 fills: Sequence[tuple[Region, Any]] = ()) -> None:
        self.name = name
        #: None (no initial value), or the Python value every element starts as.
        self.init = init
        self.blocks = tuple(blocks)
        #: (region, source): source is ("const", value) or ("input", index) (its first element).
        self.fills = tuple(fills)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        if self.init is None:
            out = np.empty(shape, dtype.np_dtype)
        else:
            out = np.full(shape, _scalar_numpy(self.init, dtype))
        for index, spec, region in self.blocks:
            if _size(region[1]) == 0:
                continue
            src = inputs[index] if spec is None else spec.numpy(inputs[index])
            region_numpy(out, region)[...] = cast_numpy(src, dtype) if src.dtype != out.dtype \
                else src
        for region, source in self.fills:
            if _size(region[1]) == 0:
                continue
            if source[0] == "const":
                value = _scalar_numpy(source[1], dtype)
            else:
                value = cast_numpy(inputs[source[1]].reshape(-1)[:1], dtype)[0]
            region_numpy(out, region)[...] = value
        return [out]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch, indexing = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        if self.init is not None and out.size:
            value = _scalar_numpy(self.init, dtype)
            raw = value.tobytes()
            if raw.count(0) == len(raw):
                from ...backend.cuda import memory

                memory.memset(out.buffer, 0, stream, out.size * dtype.size)
            else:
                launch.fill(out, raw, stream)
        for index, spec, region in self.blocks:
            if _size(region[1]) == 0:
                continue
            src = inputs[index] if spec is None else spec.gpu(inputs[index])
            launch.copy(src, region_gpu(out, region), stream)
        for region, source in self.fills:
            if _size(region[1]) == 0:
                continue
            dst = region_gpu(out, region)
            if source[0] == "const":
                indexing.fill_strided(dst, _scalar_numpy(source[1], dtype).tobytes(), stream)
            else:
                src = inputs[source[1]]
                first = src.view(src.offset, dst.shape, (0,) * len(dst.shape))
                launch.copy(first, dst, stream)
        return [out]


def _scalar_numpy(value: Any, dtype: dt.Dtype) -> np.ndarray:
    """A Python scalar as a 0-d numpy value of ``dtype`` with MLX's conversions."""
    if isinstance(value, np.ndarray):
        return cast_numpy(value.reshape(()), dtype)
    with np.errstate(all="ignore"):
        if isinstance(value, bool):
            return np.array(value).astype(dtype.np_dtype)
        if isinstance(value, int) and dtype.kind in "iu":
            return np.array(value % (1 << (8 * dtype.size)), dtype=np.uint64).astype(
                dtype.np_dtype)
        return cast_numpy(np.array(value), dtype)


class GatherMaps(Primitive):
    """out = x indexed by one 1-D integer map per listed axis (outer indexing): the edge,
    reflect and symmetric pads. The maps are host constants, uploaded per evaluation."""

    __slots__ = ("axes", "maps")
    name = "pad"
    gpu_kernel = True

    def __init__(self, axes: Sequence[int], maps: Sequence[np.ndarray]) -> None:
        self.axes = tuple(axes)
        self.maps = tuple(np.ascontiguousarray(m, dtype=np.int32) for m in maps)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        for ax, mp in zip(self.axes, self.maps):
            x = np.take(x, mp, axis=ax)
        return [x]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        x = inputs[0]
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        strides = list(x.strides)
        ops = []
        for ax, mp in zip(self.axes, self.maps):
            strides[ax] = 0
            view = gpu_array.from_numpy(mp, dt.int32, stream)
            istr = [0] * len(shape)
            istr[ax] = 1
            ops.append(indexing.IndexOperand(view, istr, x.strides[ax], 0, x.shape[ax] - 1))
        indexing.gather(x, out, strides, ops, stream)
        return [out]


# ----------------------------------------------------------------------------------------------
# Gathers and scatters with index arrays


def wrap_clip(idx: np.ndarray, size: int) -> np.ndarray:
    """Indices with negatives wrapped once and the rest clamped to [0, size - 1] (the dynamic
    slices' rule)."""
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + size, idx)
    return np.clip(idx, 0, max(size - 1, 0))


def wrap_valid(idx: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices with negatives wrapped once and out-of-range ones set to 0, in-range mask): the
    gathers' rule (an out-of-range index reads 0) and the scatters' (it is skipped)."""
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + size, idx)
    valid = (idx >= 0) & (idx < size)
    return np.where(valid, idx, 0), valid


def _bcast_strides(x: Any, shape: Sequence[int]) -> list[int]:
    """x's strides broadcast to ``shape`` (right-aligned; 0 where x is broadcast)."""
    lead = len(shape) - len(x.shape)
    return [0] * lead + [0 if e == 1 and t != 1 else s
                         for e, s, t in zip(x.shape, x.strides, shape[lead:])]


def _one_index_dtype(indices: Sequence[Any], stream: Any) -> Sequence[Any]:
    """The index arrays in one dtype, as the GPU gather/scatter kernels read them: int32 ones
    widened to int64 copies when int64 ones are among them (vmap and autodiff rules add int32
    position arrays to a user's int64 indices)."""
    if len({i.dtype for i in indices}) < 2:
        return indices
    return [i if i.dtype == dt.int64 else gpu_contiguous_copy(i, dt.int64, stream)
            for i in indices]


def _zero_invalid(out: np.ndarray, valid: np.ndarray) -> np.ndarray:
    if not valid.all():
        out = np.array(out, copy=True)
        out[~np.broadcast_to(valid, out.shape)] = 0
    return out


class Gather(Primitive):
    """out[b..., r...] = src[..., idx_k[b] at axes[k], ..., r at the other axes]: integer-array
    indexing with every index array first (the caller transposes the result into place).
    Inputs: src, then one integer array per axis (int32 or int64, broadcast to ``bshape``).
    Negative indices wrap once; an index still out of range reads 0 (never out of bounds)."""

    __slots__ = ("axes", "bshape")
    name = "gather"
    gpu_kernel = True

    def __init__(self, axes: Sequence[int], bshape: Shape) -> None:
        self.axes = tuple(axes)
        self.bshape = bshape

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        src = inputs[0]
        k = len(self.axes)
        src_t = np.moveaxis(src, self.axes, range(k))
        valid = np.ones(self.bshape, bool)
        idx = []
        for i, ax in zip(inputs[1:], self.axes):
            v, ok = wrap_valid(np.broadcast_to(i, self.bshape), src.shape[ax])
            valid &= ok
            idx.append(v)
        if src.size == 0:
            return [np.zeros(outs[0][0], src.dtype)]
        out = src_t[tuple(idx)]
        mask = valid.reshape(valid.shape + (1,) * (out.ndim - valid.ndim))
        return [_zero_invalid(out, mask)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        src = inputs[0]
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        if len(self.axes) == 1 and self.axes[0] == 0:
            idx = inputs[1]
            if _take_fast(indexing, src, idx, out, 0, stream):
                return [out]
        nb = len(self.bshape)
        rest = [d for d in range(len(src.shape)) if d not in self.axes]
        strides = [0] * nb + [src.strides[d] for d in rest]
        ops = [indexing.IndexOperand(i, _bcast_strides(i, self.bshape) + [0] * len(rest),
                                     src.strides[ax], src.shape[ax], src.shape[ax] - 1)
               for i, ax in zip(_one_index_dtype(inputs[1:], stream), self.axes)]
        indexing.gather(src, out, strides, ops, stream, fill=True)
        return [out]


def _take_fast(indexing: Any, src: Any, idx: Any, out: Any, axis: int, stream: Any) -> bool:
    """The contiguous take kernels for a row-contiguous src and a contiguous index array
    (out: [outer][idx...][inner]); False when the layout needs the strided gather."""
    if not (_is_row_contiguous(src.shape, src.strides)
            and _is_row_contiguous(idx.shape, idx.strides)):
        return False
    outer = _size(src.shape[:axis])
    inner = _size(src.shape[axis + 1:])
    indexing.take(src, idx, out, outer, src.shape[axis], inner, stream)
    return True


class Take(Primitive):
    """mx.take along ``axis``: out = src.shape[:axis] + idx.shape + src.shape[axis + 1:].
    Negative indices wrap once; an index still out of range reads 0 (MLX reads out of
    bounds there). Inputs: src, idx (int32 or int64)."""

    __slots__ = ("axis",)
    name = "take"
    gpu_kernel = True

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        src, idx = inputs
        ax = self.axis
        v, valid = wrap_valid(idx, src.shape[ax])
        if src.size == 0:
            return [np.zeros(outs[0][0], src.dtype)]
        out = np.take(src, v, axis=ax)
        mask = valid.reshape((1,) * ax + valid.shape + (1,) * (src.ndim - ax - 1))
        return [np.ascontiguousarray(_zero_invalid(out, mask))]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        src, idx = inputs
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        if _take_fast(indexing, src, idx, out, self.axis, stream):
            return [out]
        ax, ni = self.axis, len(idx.shape)
        strides = list(src.strides[:ax]) + [0] * ni + list(src.strides[ax + 1:])
        istr = [0] * ax + list(idx.strides) + [0] * (len(src.shape) - ax - 1)
        op = indexing.IndexOperand(idx, istr, src.strides[ax], src.shape[ax], src.shape[ax] - 1)
        indexing.gather(src, out, strides, [op], stream, fill=True)
        return [out]


class GatherAxis(Primitive):
    """take_along_axis: out[..., j, ...] = src[..., idx[..., j, ...], ...] along ``axis``, with
    src and idx broadcast against each other except along the axis (the caller broadcasts
    them to the output's shape there). Out-of-range indices read 0."""

    __slots__ = ("axis",)
    name = "take_along_axis"
    gpu_kernel = True

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        src, idx = inputs
        shape = outs[0][0]
        ax = self.axis
        v, valid = wrap_valid(np.broadcast_to(idx, shape), src.shape[ax])
        if src.size == 0:
            return [np.zeros(shape, src.dtype)]
        bshape = list(shape)
        bshape[ax] = src.shape[ax]
        out = np.take_along_axis(np.broadcast_to(src, bshape), v, axis=ax)
        return [np.ascontiguousarray(_zero_invalid(out, valid))]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        src, idx = inputs
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        ax = self.axis
        strides = list(src.strides)
        strides[ax] = 0
        op = indexing.IndexOperand(idx, list(idx.strides), src.strides[ax], src.shape[ax],
                                   src.shape[ax] - 1)
        indexing.gather(src, out, strides, [op], stream, fill=True)
        return [out]


class ScatterAxis(Primitive):
    """put_along_axis: a copy of ``a`` with out[..., idx[..., j, ...], ...] = upd[..., j, ...]
    along ``axis`` (idx and upd already broadcast to one shape that matches a's except along
    the axis). Duplicates: the last update wins; out-of-range indices are skipped."""

    __slots__ = ("axis",)
    name = "put_along_axis"
    gpu_kernel = True

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        a, idx, upd = inputs
        out = np.array(a, order="C", copy=True)
        ax = self.axis
        v, valid = wrap_valid(idx, out.shape[ax])
        grids = list(np.indices(idx.shape, sparse=True))
        grids[ax] = v
        full = [np.broadcast_to(g, idx.shape)[valid] for g in grids]
        out[tuple(full)] = np.broadcast_to(upd, idx.shape)[valid]
        return [out]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        _, _, indexing = _cuda()
        a, idx, upd = inputs
        out = gpu_contiguous_copy(a, a.dtype, stream)
        ax = self.axis
        shape = tuple(idx.shape)
        dst_strides = list(out.strides)
        dst_strides[ax] = 0
        op = indexing.IndexOperand(idx, list(idx.strides), out.strides[ax], out.shape[ax],
                                   out.shape[ax] - 1)
        indexing.scatter(upd, out, shape, dst_strides, list(upd.strides), [op], stream,
                         skip=True, unique=False)
        return [out]


def _combine_sequential(dst_t: np.ndarray, idx: list[np.ndarray], rows: np.ndarray,
                        op: str) -> None:
    """MLX's CPU scatter_max/min applied update by update (NaNs, complex): max keeps the
    current value only where it is strictly greater, min only where strictly smaller."""
    for j in range(rows.shape[0]):
        pos = tuple(v[j] for v in idx)
        cur = dst_t[pos]
        u = rows[j]
        keep = (u < cur) if op == "max" else (cur < u)
        dst_t[pos] = np.where(keep, cur, u)


_UFUNCS = {"add": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class Scatter(Primitive):
    """A copy of ``a`` with ``upd`` written at integer-array positions (a[idx] = v), or combined
    into them (``op`` "add", "prod", "max", "min": x.at[idx].add(v), ...).

    Inputs: a, upd (already a.dtype, shaped bshape + the remaining dims of the destination
    view), one integer array per axis (none: the whole view, for x.at[1:3].add(v)). ``dst`` is
    the basic-indexing view (slices, integers) of the destination inside a's shape; ``axes``
    are dimensions of that view. Duplicate positions: the last update wins (MLX's CPU result),
    or the updates combine. Out-of-range indices are skipped."""

    __slots__ = ("dst", "axes", "bshape", "op")
    name = "scatter"
    gpu_kernel = True

    def __init__(self, dst: ViewSpec, axes: Sequence[int], bshape: Shape,
                 op: str = "set") -> None:
        self.dst = dst
        self.axes = tuple(axes)
        self.bshape = bshape
        self.op = op

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        a, upd = inputs[0], inputs[1]
        out = np.array(a, order="C", copy=True)
        if out.size == 0:
            return [out]
        dst = self.dst.numpy(out, writeable=True)
        k = len(self.axes)
        dst_t = np.moveaxis(dst, self.axes, range(k))
        idx = []
        valid = np.ones(self.bshape, bool)
        for i, ax in zip(inputs[2:], self.axes):
            v, ok = wrap_valid(np.broadcast_to(i, self.bshape), dst.shape[ax])
            valid &= ok
            idx.append(v)
        nb = _size(self.bshape)
        rows = np.broadcast_to(upd, tuple(self.bshape) + dst_t.shape[k:]).reshape(
            (nb,) + dst_t.shape[k:])
        keep = valid.reshape(-1)
        flat = [v.reshape(-1)[keep] for v in idx]
        rows = rows[keep]
        op = self.op
        if op == "set":
            dst_t[tuple(flat)] = rows
            return [out]
        if k == 0:  # the whole view, once
            flat_t = dst_t.reshape((1,) + dst_t.shape)
            target, pos = flat_t, (np.zeros(rows.shape[0], np.int64),)
        else:
            target, pos = dst_t, tuple(flat)
        floating = out.dtype.kind in "fV"  # numpy's bfloat16 is kind 'V'
        if op in ("max", "min") and (out.dtype.kind == "c" or (
                floating and (np.isnan(rows).any() or np.isnan(dst_t).any()))):
            _combine_sequential(target, list(pos), rows, op)
        else:
            with np.errstate(all="ignore"):
                _UFUNCS[op].at(target, pos, rows)
        if k == 0:
            dst_t[...] = target[0]
        return [out]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        _, _, indexing = _cuda()
        a, upd = inputs[0], inputs[1]
        out = gpu_contiguous_copy(a, a.dtype, stream)
        dst = self.dst.gpu(out)
        nb = len(self.bshape)
        rest = [d for d in range(len(dst.shape)) if d not in self.axes]
        shape = tuple(self.bshape) + tuple(dst.shape[d] for d in rest)
        dst_strides = [0] * nb + [dst.strides[d] for d in rest]
        ops = [indexing.IndexOperand(i, _bcast_strides(i, self.bshape) + [0] * len(rest),
                                     dst.strides[ax], dst.shape[ax], dst.shape[ax] - 1)
               for i, ax in zip(_one_index_dtype(inputs[2:], stream), self.axes)]
        indexing.scatter(upd, dst, shape, dst_strides, _bcast_strides(upd, shape), ops, stream,
                         skip=True, unique=False, op=self.op)
        return [out]


class SliceUpdate(Primitive):
    """A copy of ``a`` with ``upd`` (a.dtype, the view's shape) written into a basic view."""

    __slots__ = ("dst",)
    name = "slice_update"
    gpu_kernel = True

    def __init__(self, dst: ViewSpec) -> None:
        self.dst = dst

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        out = np.array(inputs[0], order="C", copy=True)
        if _size(self.dst.shape):
            self.dst.numpy(out, writeable=True)[...] = inputs[1]
        return [out]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        _, launch, _ = _cuda()
        out = gpu_contiguous_copy(inputs[0], inputs[0].dtype, stream)
        if _size(self.dst.shape):
            launch.copy(broadcast_view(inputs[1], self.dst.shape), self.dst.gpu(out), stream)
        return [out]

    # A KV cache's ``keys[..., prev:offset, :] = k`` every decode step: written where the
    # cache is instead of copying the whole cache first (one launch, the update's bytes only).
    donates_first = True

    def eval_gpu_donated(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any
                         ) -> list[Any] | None:
        out = inputs[0]
        if not out.is_contiguous():
            return None
        if _size(self.dst.shape):
            _, launch, _ = _cuda()
            launch.copy(broadcast_view(inputs[1], self.dst.shape), self.dst.gpu(out), stream)
        return [out]


def _start_values(start: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(start).reshape(-1)]


class DynamicSlice(Primitive):
    """mx.slice with array start indices: out = a[start_k : start_k + size_k on axes[k]], each
    start clamped to [0, a.shape - size] (never out of bounds; MLX reads garbage there)."""

    __slots__ = ("axes",)
    name = "dynamic_slice"
    gpu_kernel = True

    def __init__(self, axes: Sequence[int]) -> None:
        self.axes = tuple(axes)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        a, start = inputs
        size = outs[0][0]
        index = [slice(0, e) for e in size]
        for ax, s in zip(self.axes, _start_values(start)):
            s = min(max(s, 0), a.shape[ax] - size[ax])
            index[ax] = slice(s, s + size[ax])
        return [np.ascontiguousarray(a[tuple(index)])]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, launch, indexing = _cuda()
        a, start = inputs
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        ops = _start_operands(indexing, start, self.axes, a, shape)
        if not ops:
            launch.copy(a.view(a.offset, shape, a.strides), out, stream)
        else:
            indexing.gather(a, out, list(a.strides), ops, stream)
        return [out]


def _start_operands(indexing: Any, start: Any, axes: Sequence[int], a: Any,
                    size: Sequence[int]) -> list[Any]:
    ops = []
    for k, ax in enumerate(axes):
        elem = start.view(start.offset + (k * start.strides[0] if start.shape else 0), (), ())
        ops.append(indexing.IndexOperand(elem, [0] * len(size), a.strides[ax], 0,
                                         a.shape[ax] - size[ax]))
    return ops


class DynamicSliceUpdate(Primitive):
    """mx.slice_update with array start indices (starts clamped as in DynamicSlice)."""

    __slots__ = ("axes",)
    name = "dynamic_slice_update"
    gpu_kernel = True

    def __init__(self, axes: Sequence[int]) -> None:
        self.axes = tuple(axes)

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        a, upd, start = inputs
        out = np.array(a, order="C", copy=True)
        index = [slice(0, e) for e in upd.shape]
        for ax, s in zip(self.axes, _start_values(start)):
            s = min(max(s, 0), a.shape[ax] - upd.shape[ax])
            index[ax] = slice(s, s + upd.shape[ax])
        out[tuple(index)] = upd
        return [out]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        _, launch, indexing = _cuda()
        a, upd, start = inputs
        out = gpu_contiguous_copy(a, a.dtype, stream)
        shape = tuple(upd.shape)
        ops = _start_operands(indexing, start, self.axes, out, shape)
        if not ops:
            launch.copy(upd, out.view(out.offset, shape, out.strides), stream)
        else:
            indexing.scatter(upd, out, shape, list(out.strides), list(upd.strides), ops, stream,
                             skip=False, unique=True)
        return [out]


# ----------------------------------------------------------------------------------------------
# tril / triu, trace


class TriSelect(Primitive):
    """tril (lower) / triu: x where the diagonal test holds, else 0 (last two dims)."""

    __slots__ = ("k", "lower", "name")
    gpu_kernel = True

    def __init__(self, k: int, lower: bool) -> None:
        self.k = k
        self.lower = lower
        self.name = "tril" if lower else "triu"

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x = inputs[0]
        rows, cols = x.shape[-2], x.shape[-1]
        c = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        keep = c <= self.k if self.lower else c >= self.k
        return [np.where(keep, x, np.zeros((), x.dtype))]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        shape, dtype = outs[0]
        out = gpu_array.empty(shape, dtype, stream)
        indexing.tri_select(inputs[0], out, self.k, self.lower, stream)
        return [out]


class Trace(Primitive):
    """Sums along a diagonal: ``diag`` views the input as (outer..., diagonal); the output is
    the sum over the last dimension, each element first converted to the output dtype."""

    __slots__ = ("diag",)
    name = "trace"
    gpu_kernel = True

    def __init__(self, diag: ViewSpec) -> None:
        self.diag = diag

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        v = self.diag.numpy(inputs[0])
        v = cast_numpy(v, dtype) if v.dtype != dtype.np_dtype else v
        with np.errstate(all="ignore"):
            if dtype.name in ("float16", "bfloat16"):  # float32 accumulator, as MLX's sum
                total = np.sum(v.astype(np.float32), axis=-1)
                return [cast_numpy(total, dtype).reshape(shape)]
            return [np.sum(v, axis=-1, dtype=dtype.np_dtype).reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        gpu_array, _, indexing = _cuda()
        shape, dtype = outs[0]
        x = inputs[0]
        offset, strides = self.diag.apply(x.offset, x.strides)
        out = gpu_array.empty(shape, dtype, stream)
        outer = x.view(offset, shape, strides[:-1])
        indexing.diag_sum(outer, out, self.diag.shape[-1], strides[-1], stream)
        return [out]
