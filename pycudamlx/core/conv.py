"""Convolutions: conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d and convolve.

No new kernel: every convolution is a composition of existing lazy ops, so it runs wherever
those do (numpy on the CPU, NVRTC kernels + cuBLAS on the GPU). The plan, as an im2col GEMM:

1. input dilation (zero insertion) as expand_dims + pad + reshape + slice;
2. padding: positive pads through ``pad``, negative pads (transposed convs) as a slice;
3. the sliding windows as one ``as_strided`` view ``(N, O..., K..., C)`` of the padded input;
4. one ``matmul`` of the windows (made contiguous by a reshape: the im2col array) with the
   weight; groups become a batch dimension of that matmul.

Transposed convolutions are regular ones over the stride-dilated input with a flipped kernel,
as MLX builds them. The im2col array holds ``prod(K)`` copies of the input: fine for the kernel
sizes of typical networks, large for big 3-D kernels (see docs/conv.md).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from .. import dtypes as dt
from . import device as dev
from ._base import astype
from ._nanobind import argument_error, to_int, to_int_list
from .array import array
from .creation import zeros
from .matmul import matmul
from .shape import (_range_spec, as_strided, expand_dims, flip as _flip, pad, reshape,
                    transpose, view)

__all__ = ["conv1d", "conv2d", "conv3d", "conv_general", "conv_transpose1d",
           "conv_transpose2d", "conv_transpose3d", "convolve"]


def _fmt(v: Sequence[int]) -> str:
    return "(" + ",".join(str(int(x)) for x in v) + ")"


def _as_pair(v: Any) -> tuple[Any, Any] | None:
    """The two items of a length-2 sequence (conv_general's (low, high) padding), else None."""
    try:
        items = list(v)
    except Exception:  # noqa: BLE001 - not a sequence
        return None
    return (items[0], items[1]) if len(items) == 2 else None


def _require_arrays(fn: str, a: Any, b: Any) -> None:
    for x in (a, b):
        if not isinstance(x, array):
            raise argument_error(fn, f"{fn}(): incompatible function arguments: expected mlx "
                                     f"arrays, got {type(x).__name__}")


def _int_arg(fn: str, name: str, v: Any) -> int:
    i = to_int(v)
    if i is None:
        raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be an "
                                 f"int, got {type(v).__name__}")
    return i


def _tuple_arg(fn: str, name: str, v: Any, n: int) -> list[int]:
    """``int | tuple[int, ...n]`` as conv2d/conv3d's bindings accept it."""
    i = to_int(v)
    if i is not None:
        return [i] * n
    seq = to_int_list(v)
    if seq is not None and len(seq) == n:
        return seq
    raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be an int "
                             f"or a tuple of {n} ints, got {v!r}")


def _seq_arg(fn: str, name: str, v: Any) -> list[int]:
    """``int | Sequence[int]`` as conv_general's bindings accept it."""
    i = to_int(v)
    if i is not None:
        return [i]
    seq = to_int_list(v)
    if seq is not None:
        return seq
    raise argument_error(fn, f"{fn}(): incompatible function arguments: {name} must be an int "
                             f"or a sequence of ints, got {v!r}")


# ----------------------------------------------------------------------------------------------
# checks (MLX's order and messages)


def _run_checks(x: array, w: array, groups: int) -> int:
    nd = x.ndim - 2
    if nd < 1 or nd > 3:
        raise ValueError("[conv] Only works for inputs with 1-3 spatial dimensions. The inputs "
                         "must be in the format [N, ..., C_in]")
    if groups != 1 and nd == 3:
        raise ValueError("[conv] Can only handle groups != 1 in 1D or 2D convolutions.")
    if x.dtype.kind != "f":
        raise ValueError(f"[conv] Invalid input array with type {x.dtype.name}. Convolution "
                         "currently only supports floating point types")
    if w.ndim != nd + 2:
        raise ValueError(f"[conv] Invalid weight array with {w.ndim} dimensions for {nd}D "
                         f"convolution. Expected an array with {nd + 2} dimensions following "
                         "the format [C_out, ..., C_in].")
    c_in = x.shape[-1]
    if groups == 0:  # MLX 0.32.4 dies with SIGFPE (a modulo by zero)
        raise ValueError("[conv] The number of groups must not be 0.")
    if c_in % groups != 0:
        raise ValueError("[conv] The input channels must be divisible by the number of groups. "
                         f"Got input with shape {_fmt(x.shape)} and {groups} groups.")
    if groups > 1 and w.shape[0] % groups != 0:
        raise ValueError("[conv] If groups > 1, the output channels must be divisible by the "
                         f"number of groups. Got {w.shape[0]} output channels and {groups} "
                         "groups.")
    if c_in != groups * w.shape[-1]:
        if groups == 1:
            raise ValueError("[conv] Expect the input channels in the input and weight array to "
                             f"match but got shapes - input: {_fmt(x.shape)} and weight: "
                             f"{_fmt(w.shape)}")
        raise ValueError(f"Given groups={groups} and weights of shape {_fmt(w.shape)}, expected "
                         f"to have {groups * w.shape[-1]} input channels but got {c_in} input "
                         "channels instead.")
    return nd


def _per_dim(v: list[int], nd: int, what: str, default: int) -> list[int]:
    """MLX's rule: one value (or none: the default) applies to every spatial dimension."""
    if len(v) <= 1:
        return (v or [default]) * nd
    if len(v) != nd:
        raise ValueError(f"[conv] Invalid {what} {_fmt(v)} for {nd}D convolution.")
    return v


# ----------------------------------------------------------------------------------------------
# the composition


def _crop(a: array, axis: int, start: int, stop: int, s: dev.Stream) -> array:
    stop = max(start, stop)
    return view(a, _range_spec(a.shape, axis, start, stop), "slice", s)


def _dilate(x: array, axis: int, d: int, s: dev.Stream) -> array:
    """Zero insertion: ``d - 1`` zeros between neighbours along ``axis``."""
    n = x.shape[axis]
    if d == 1 or n <= 1:
        return x
    y = expand_dims(x, axis + 1, stream=s)
    pw = [(0, 0)] * y.ndim
    pw[axis + 1] = (0, d - 1)
    y = pad(y, pw, stream=s)
    shape = list(x.shape)
    shape[axis] = n * d
    y = reshape(y, shape, stream=s)
    return _crop(y, axis, 0, (n - 1) * d + 1, s)


def _conv(x: array, w: array, stride: list[int], lo: list[int], hi: list[int],
          kdil: list[int], idil: list[int], groups: int, flip: bool, s: dev.Stream) -> array:
    nd = x.ndim - 2
    dtype = dt.promote_types(x.dtype, w.dtype)
    if any(v < 0 for v in lo + hi):
        # MLX crops a negative padding off the input before the input dilation (in input
        # elements, not dilated ones: what transposed convs with padding > dilation * (K - 1)
        # give in MLX, shorter than torch's), then pads by 0 there.
        for i in range(nd):
            if lo[i] < 0 or hi[i] < 0:
                m = x.shape[1 + i]
                x = _crop(x, 1 + i, min(m, max(0, -lo[i])), m - max(0, -hi[i]), s)
        lo = [max(0, v) for v in lo]
        hi = [max(0, v) for v in hi]
    n, c_in, c_out = x.shape[0], x.shape[-1], w.shape[0]
    ksz = list(w.shape[1:-1])
    # output shape first (MLX's error: the input size after dilation and padding vs the kernel)
    out_sp = []
    for i in range(nd):
        in_size = max(0, 1 + idil[i] * (x.shape[1 + i] - 1)) if x.shape[1 + i] else 0
        wt_size = 1 + kdil[i] * (ksz[i] - 1)
        o = (in_size + lo[i] + hi[i] - wt_size) // stride[i] + 1
        if o <= 0:
            raise ValueError(
                "[conv] Spatial dimensions of input after padding cannot be smaller than weight "
                f"spatial dimensions. Got error at axis {i + 1} for input with shape "
                f"{_fmt(x.shape)}, padding low {_fmt(lo)}, padding high {_fmt(hi)}, and weight "
                f"of shape {_fmt(w.shape)}.")
        out_sp.append(o)
    out_shape = (n, *out_sp, c_out)
    kprod = math.prod(ksz)
    if math.prod(out_shape) == 0 or kprod * c_in == 0:
        return zeros(out_shape, dtype, stream=s)
    # MLX's CPU convolves float16/bfloat16 with float32 sums rounded once, and so are its
    # gradients (each one convolution). Composed in the half dtype, the input gradient rounded
    # twice (the windows' matmul, then their overlap sum): so compute in float32 and round at
    # the end; the forward value is the same. The GPU keeps its half-precision GEMM.
    final = dtype
    if dtype in (dt.float16, dt.bfloat16) and s.device.type == dev.cpu:
        dtype = dt.float32
    x = astype(x, dtype, s)
    w = astype(w, dtype, s)
    if flip:
        w = _flip(w, list(range(1, nd + 1)), stream=s)
    for i in range(nd):
        ax = 1 + i
        x = _dilate(x, ax, idil[i], s)
    pw = [(0, 0)] + [(max(0, lo[i]), max(0, hi[i])) for i in range(nd)] + [(0, 0)]
    x = pad(x, pw, stream=s)
    sp = x.shape[1:-1]
    # row-major element strides of the padded input
    rs = [c_in] * (nd + 1)
    for i in range(nd - 1, -1, -1):
        rs[i] = rs[i + 1] * sp[i]
    rows = n * math.prod(out_sp)
    cg, og = c_in // groups, c_out // groups
    # the windows (groups, N, O..., K..., C_in / groups): a view; its reshape is the one copy
    win_shape = [groups, n, *out_sp, *ksz, cg]
    win_strides = ([cg, rs[0]] + [stride[i] * rs[i + 1] for i in range(nd)]
                   + [kdil[i] * rs[i + 1] for i in range(nd)] + [1])
    if groups == 1:  # no group dim: a 3-D conv's windows stay within the kernels' 8 dims
        win_shape, win_strides = win_shape[1:], win_strides[1:]
    win = as_strided(x, win_shape, win_strides, 0, stream=s)
    if groups == 1:
        cols = reshape(win, [rows, kprod * c_in], stream=s)
        wm = transpose(reshape(w, [c_out, kprod * c_in], stream=s), [1, 0], stream=s)
        out = matmul(cols, wm, stream=s)
    else:
        cols = reshape(win, [groups, rows, kprod * cg], stream=s)
        wm = transpose(reshape(w, [groups, og, kprod * cg], stream=s), [0, 2, 1], stream=s)
        out = transpose(matmul(cols, wm, stream=s), [1, 0, 2], stream=s)
    return astype(reshape(out, list(out_shape), stream=s), final, s)


# ----------------------------------------------------------------------------------------------
# public ops


def conv_general(input: array, weight: array, /, stride: int | Sequence[int] = 1,
                 padding: int | Sequence[int] | tuple[Sequence[int], Sequence[int]] = 0,
                 kernel_dilation: int | Sequence[int] = 1, input_dilation: int | Sequence[int] = 1,
                 groups: int = 1, flip: bool = False, *, stream: Any = None) -> array:
    """General N-D (1-3) convolution, channels last: input (N, ..., C_in), weight
    (C_out, ..., C_in / groups). ``padding`` is an int, a list (symmetric per dimension) or a
    pair of lists (low, high); ``flip`` makes it a true convolution instead of a correlation."""
    fn = "conv_general"
    _require_arrays(fn, input, weight)
    stride_l = _seq_arg(fn, "stride", stride)
    # nanobind's variant tries int, then Sequence[int], then a (low, high) pair of them
    lo_l = to_int_list(padding) if to_int(padding) is None else [to_int(padding)]
    if lo_l is not None:
        hi_l = list(lo_l)
    else:
        pair = None if isinstance(padding, (str, bytes)) else _as_pair(padding)
        if pair is None:
            _seq_arg(fn, "padding", padding)  # raises nanobind's TypeError
        lo_l = _seq_arg(fn, "padding", pair[0])
        hi_l = _seq_arg(fn, "padding", pair[1])
    kd_l = _seq_arg(fn, "kernel_dilation", kernel_dilation)
    id_l = _seq_arg(fn, "input_dilation", input_dilation)
    groups = _int_arg(fn, "groups", groups)
    if type(flip) is not bool:  # nanobind's bool takes True / False only
        raise argument_error(fn, f"{fn}(): incompatible function arguments: flip must be a "
                                 f"bool, got {type(flip).__name__}")
    return _general(input, weight, stride_l, lo_l, hi_l, kd_l, id_l, groups, flip,
                    dev.resolve_stream(stream))


def _general(x: array, w: array, stride: list[int], lo: list[int], hi: list[int],
             kd: list[int], idl: list[int], groups: int, flip: bool, s: dev.Stream,
             transpose_pads: list[int] | None = None) -> array:
    """MLX's conv_general: its checks in its order, then the composition. With
    ``transpose_pads`` (output_padding), ``lo`` is the transposed conv's padding and the
    conv's own pads are derived here, after the checks (MLX's conv_transpose_general)."""
    nd = _run_checks(x, w, groups)
    stride = _per_dim(stride, nd, "strides", 1)
    if len(lo) > 1 and len(lo) != nd or len(hi) > 1 and len(hi) != nd:
        raise ValueError(f"[conv] Invalid padding {_fmt(lo)} | {_fmt(hi)} for {nd}D "
                         "convolution.")
    lo, hi = _per_dim(lo, nd, "padding", 0), _per_dim(hi, nd, "padding", 0)
    kd = _per_dim(kd, nd, "kernel dilation", 1)
    idl = _per_dim(idl, nd, "input dilation", 1)
    if any(v <= 0 for v in kd):
        raise ValueError("[conv] Kernel dilation sizes must be positive. Got kernel dilation "
                         f"{_fmt(kd)}.")
    if any(v <= 0 for v in idl):
        raise ValueError("[conv] Input dilation sizes must be positive. Got input dilation "
                         f"{_fmt(idl)}.")
    if any(v <= 0 for v in stride):
        raise ValueError(f"[conv] Stride sizes must be positive. Got strides {_fmt(stride)}.")
    if transpose_pads is not None:
        # a stride-dilated input (idl = the transposed stride), a flipped kernel, stride 1
        op = _per_dim(transpose_pads, nd, "output padding", 0)
        pd = lo
        lo, hi = [], []
        for i in range(nd):
            wt_size = 1 + kd[i] * (w.shape[1 + i] - 1)
            lo.append(wt_size - pd[i] - 1)
            conv_out = (x.shape[1 + i] - 1) * idl[i] - 2 * pd[i] + wt_size
            out_size = 1 + idl[i] * (x.shape[1 + i] - 1)
            hi.append(conv_out - out_size + pd[i] + op[i])
    return _conv(x, w, stride, lo, hi, kd, idl, groups, flip, s)


def _nd_args(fn: str, nd: int, named: dict[str, Any]) -> list[list[int]]:
    if nd == 1:
        return [[_int_arg(fn, k, v)] for k, v in named.items()]
    return [_tuple_arg(fn, k, v, nd) for k, v in named.items()]


def _conv_nd(fn: str, nd: int, x: Any, w: Any, stride: Any, padding: Any, dilation: Any,
             groups: Any, stream: Any) -> array:
    _require_arrays(fn, x, w)
    st, pd, dl = _nd_args(fn, nd, {"stride": stride, "padding": padding, "dilation": dilation})
    groups = _int_arg(fn, "groups", groups)
    return _general(x, w, st, pd, list(pd), dl, [1], groups, False, dev.resolve_stream(stream))


def conv1d(input: array, weight: array, /, stride: int = 1, padding: int = 0, dilation: int = 1,
           groups: int = 1, *, stream: Any = None) -> array:
    """1-D convolution (cross-correlation): input (N, L, C_in), weight (C_out, K, C_in/groups)."""
    return _conv_nd("conv1d", 1, input, weight, stride, padding, dilation, groups, stream)


def conv2d(input: array, weight: array, /, stride: int | tuple[int, int] = 1,
           padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
           groups: int = 1, *, stream: Any = None) -> array:
    """2-D convolution: input (N, H, W, C_in), weight (C_out, KH, KW, C_in/groups)."""
    return _conv_nd("conv2d", 2, input, weight, stride, padding, dilation, groups, stream)


def conv3d(input: array, weight: array, /, stride: int | tuple[int, int, int] = 1,
           padding: int | tuple[int, int, int] = 0, dilation: int | tuple[int, int, int] = 1,
           groups: int = 1, *, stream: Any = None) -> array:
    """3-D convolution: input (N, D, H, W, C_in), weight (C_out, KD, KH, KW, C_in); as in MLX
    only ``groups=1``."""
    return _conv_nd("conv3d", 3, input, weight, stride, padding, dilation, groups, stream)


def _conv_transpose_nd(fn: str, nd: int, x: Any, w: Any, stride: Any, padding: Any,
                       dilation: Any, output_padding: Any, groups: Any, stream: Any) -> array:
    _require_arrays(fn, x, w)
    st, pd, dl, op = _nd_args(fn, nd, {"stride": stride, "padding": padding,
                                       "dilation": dilation, "output_padding": output_padding})
    groups = _int_arg(fn, "groups", groups)
    return _general(x, w, [1] * nd, pd, list(pd), dl, st, groups, True,
                    dev.resolve_stream(stream), transpose_pads=op)


def conv_transpose1d(input: array, weight: array, /, stride: int = 1, padding: int = 0,
                     dilation: int = 1, output_padding: int = 0, groups: int = 1, *,
                     stream: Any = None) -> array:
    """1-D transposed convolution: input (N, L, C_in), weight (C_out, K, C_in/groups)."""
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, stride, padding, dilation,
                              output_padding, groups, stream)


def conv_transpose2d(input: array, weight: array, /, stride: int | tuple[int, int] = 1,
                     padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
                     output_padding: int | tuple[int, int] = 0, groups: int = 1, *,
                     stream: Any = None) -> array:
    """2-D transposed convolution: input (N, H, W, C_in), weight (C_out, KH, KW, C_in/groups)."""
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, stride, padding, dilation,
                              output_padding, groups, stream)


def conv_transpose3d(input: array, weight: array, /, stride: int | tuple[int, int, int] = 1,
                     padding: int | tuple[int, int, int] = 0,
                     dilation: int | tuple[int, int, int] = 1,
                     output_padding: int | tuple[int, int, int] = 0, groups: int = 1, *,
                     stream: Any = None) -> array:
    """3-D transposed convolution: input (N, D, H, W, C_in), weight (C_out, KD, KH, KW, C_in);
    as in MLX only ``groups=1``."""
    return _conv_transpose_nd("conv_transpose3d", 3, input, weight, stride, padding, dilation,
                              output_padding, groups, stream)


def convolve(a: array, v: array, /, mode: str = "full", *, stream: Any = None) -> array:
    """numpy.convolve for 1-D float arrays (the longer one is the signal), through conv1d."""
    _require_arrays("convolve", a, v)
    if not isinstance(mode, str):
        raise argument_error("convolve", "convolve(): incompatible function arguments: mode "
                                         f"must be a str, got {type(mode).__name__}")
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError("[convolve] Inputs must be 1D.")
    if a.size == 0 or v.size == 0:
        raise ValueError("[convolve] Inputs cannot be empty.")
    s = dev.resolve_stream(stream)
    sig, ker = (v, a) if a.size < v.size else (a, v)
    k = ker.size
    x = reshape(sig, [1, -1, 1], stream=s)
    w = reshape(ker, [1, -1, 1], stream=s)
    if mode == "full":
        lo = hi = k - 1
    elif mode == "valid":
        lo = hi = 0
    elif mode == "same":
        lo = k // 2
        hi = lo if k % 2 else max(0, lo - 1)
    else:
        raise ValueError("[convolve] Invalid mode.")
    out = _general(x, w, [1], [lo], [hi], [1], [1], 1, True, s)
    return reshape(out, [-1], stream=s)
