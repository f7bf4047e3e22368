"""``mx.fft``: MLX 0.32.4's discrete Fourier transforms, shifts and sample frequencies.

Transforms return complex64 (irfft*: float32) whatever the input type (bool, integer, float16,
bfloat16 and float64 are converted: MLX has no complex128). ``n``/``s`` crop or zero-pad the
input along the transformed axes first. The transforms run numpy.fft on the CPU and cuFFT on a
GPU stream (the host view of managed memory where cuFFT is missing or disabled; docs/fft.md).
fftshift/ifftshift (rolls) and fftfreq/rfftfreq (arange arithmetic) are lazy-op compositions
and run natively on both devices.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitives.fft import FFT
from . import creation as C
from . import device as dev
from . import elementwise as E
from . import shape as S
from ._base import AxisError, astype as _astype
from .array import array, make

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq", "stft", "istft"]

_STREAM = ("mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | "
           "mlx.core.DeviceType | None = None")
_NORMS = ("backward", "ortho", "forward")


def _sig(fn: str) -> str:
    if fn in ("fft", "ifft", "rfft", "irfft"):
        return (f"{fn}(a: mlx.core.array, n: int | None = None, axis: int = -1, norm: str = "
                f"'backward', stream: {_STREAM}) -> mlx.core.array")
    if fn in ("fftshift", "ifftshift"):
        return (f"{fn}(a: mlx.core.array, axes: int | collections.abc.Sequence[int] | None = "
                f"None, stream: {_STREAM}) -> mlx.core.array")
    if fn in ("fftfreq", "rfftfreq"):
        return f"{fn}(n: int, d: float = 1.0, stream: {_STREAM}) -> mlx.core.array"
    default = "[-2, -1]" if fn.endswith("2") else "None"
    return (f"{fn}(a: mlx.core.array, s: tuple[int, ...] | None = None, axes: "
            f"collections.abc.Sequence[int] | None = {default}, norm: str = 'backward', "
            f"stream: {_STREAM}) -> mlx.core.array")


def _signature_error(fn: str, *args: Any) -> TypeError:
    types = ", ".join("mlx.core.array" if isinstance(a, array) else type(a).__name__
                      for a in args)
    return TypeError(f"{fn}(): incompatible function arguments. The following argument types "
                     f"are supported:\n    1. {_sig(fn)}\n\nInvoked with types: {types}")


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _fmt(shape: Sequence[int]) -> str:
    return "(" + ",".join(str(s) for s in shape) + ")"


def _dim(a: array, axis: int) -> int:
    """``a.shape(axis)`` as MLX's bindings read it (IndexError when out of range)."""
    if not -a.ndim <= axis < a.ndim:
        raise AxisError(f"SmallVector out of range: axis {axis} for array with {a.ndim} "
                         "dimensions.")
    return a.shape[axis]


def _check_norm(fn: str, norm: str) -> None:
    if norm not in _NORMS:
        raise ValueError(f"[{fn}] Invalid norm. Expected one of {{'backward', 'ortho', "
                         "'forward'}.")


def _fft_impl(a: array, n: list[int], axes: list[int], real: bool, inverse: bool, norm: str,
              s: dev.Stream, fn: str) -> array:
    if a.ndim < 1:
        raise ValueError("[fftn] Requires array with at least one dimension.")
    if len(n) != len(axes):
        raise ValueError("[fftn] Shape and axes have different sizes.")
    if not axes:
        return a
    valid = []
    for ax in axes:
        if not -a.ndim <= ax < a.ndim:
            raise AxisError(f"[fftn] Invalid axis {ax} for array with {a.ndim} dimensions.")
        valid.append(ax + a.ndim if ax < 0 else ax)
    if len(set(valid)) != len(valid):
        raise ValueError(f"[fftn] Duplicated axis received {_fmt(axes)}")
    if any(v <= 0 for v in n):
        raise ValueError(f"[fftn] Invalid FFT output size requested {_fmt(n)}")
    in_shape = list(a.shape)
    for ax, v in zip(valid, n):
        in_shape[ax] = v
    if real and inverse:
        in_shape[valid[-1]] = n[-1] // 2 + 1
    in_type = dt.float32 if real and not inverse else dt.complex64
    out_type = dt.float32 if real and inverse else dt.complex64
    x = a
    if real and not inverse and x.dtype is dt.complex64:
        x = E.real(x, stream=s)
    x = _astype(x, in_type, s)
    # Crop, then zero-pad, to the transform's input extents.
    if any(t < c for t, c in zip(in_shape, x.shape)):
        key = tuple(slice(0, min(t, c)) for t, c in zip(in_shape, x.shape))
        with dev.StreamContext(s):
            x = x[key]
    if any(t > c for t, c in zip(in_shape, x.shape)):
        widths = [(0, max(t - c, 0)) for t, c in zip(in_shape, x.shape)]
        x = S.pad(x, widths, stream=s)
    out_shape = list(in_shape)
    if real and not inverse:
        out_shape[valid[-1]] = n[-1] // 2 + 1
    elif real:
        out_shape[valid[-1]] = n[-1]
    return make(FFT(tuple(valid), tuple(n), inverse, real, norm), (x,), tuple(out_shape),
                out_type, s)


def _one(fn: str, a: Any, n: Any, axis: Any, norm: Any, stream: Any, real: bool,
         inverse: bool) -> array:
    if not isinstance(a, array) or not (n is None or _is_int(n)) or not _is_int(axis) or \
            not isinstance(norm, str):
        raise _signature_error(fn, a)
    _check_norm(fn, norm)
    s = dev.resolve_stream(stream)
    if n is None:
        n = _dim(a, axis)
        if real and inverse:
            n = 2 * (n - 1)
    else:
        _dim(a, axis)
    return _fft_impl(a, [int(n)], [int(axis)], real, inverse, norm, s, fn)


def _many(fn: str, a: Any, s_: Any, axes: Any, norm: Any, stream: Any, real: bool,
          inverse: bool) -> array:
    ok_s = s_ is None or (isinstance(s_, (tuple, list)) and all(_is_int(v) for v in s_))
    ok_ax = axes is None or (isinstance(axes, (tuple, list)) and all(_is_int(v) for v in axes))
    if not isinstance(a, array) or not ok_s or not ok_ax or not isinstance(norm, str):
        raise _signature_error(fn, a)
    _check_norm(fn, norm)
    st = dev.resolve_stream(stream)
    if axes is None:
        if s_ is not None:
            raise ValueError(f"[{fn}] `axes` should not be `None` if `s` is not `None`.")
        axes = list(range(a.ndim))
    axes = [int(v) for v in axes]
    if s_ is None:
        n = [_dim(a, ax) for ax in axes]
        if real and inverse and n:
            n[-1] = 2 * (n[-1] - 1)
    else:
        n = [int(v) for v in s_]
    return _fft_impl(a, n, axes, real, inverse, norm, st, fn)


def fft(a: array, n: int | None = None, axis: int = -1, norm: str = "backward",
        stream: Any = None) -> array:
    """One-dimensional discrete Fourier transform along ``axis`` (complex64)."""
    return _one("fft", a, n, axis, norm, stream, False, False)


def ifft(a: array, n: int | None = None, axis: int = -1, norm: str = "backward",
         stream: Any = None) -> array:
    """One-dimensional inverse discrete Fourier transform along ``axis`` (complex64)."""
    return _one("ifft", a, n, axis, norm, stream, False, True)


def rfft(a: array, n: int | None = None, axis: int = -1, norm: str = "backward",
         stream: Any = None) -> array:
    """Real-input FFT: n//2 + 1 complex64 bins (complex input: its real part)."""
    return _one("rfft", a, n, axis, norm, stream, True, False)


def irfft(a: array, n: int | None = None, axis: int = -1, norm: str = "backward",
          stream: Any = None) -> array:
    """Inverse of rfft: ``n`` (default 2*(m-1)) float32 samples."""
    return _one("irfft", a, n, axis, norm, stream, True, True)


def fft2(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
         norm: str = "backward", stream: Any = None) -> array:
    """Two-dimensional FFT over ``axes`` (default the last two)."""
    return _many("fft2", a, s, axes, norm, stream, False, False)


def ifft2(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: str = "backward", stream: Any = None) -> array:
    """Two-dimensional inverse FFT over ``axes`` (default the last two)."""
    return _many("ifft2", a, s, axes, norm, stream, False, True)


def rfft2(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
          norm: str = "backward", stream: Any = None) -> array:
    """Two-dimensional real FFT (last axis halved to n//2 + 1 bins)."""
    return _many("rfft2", a, s, axes, norm, stream, True, False)


def irfft2(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1),
           norm: str = "backward", stream: Any = None) -> array:
    """Inverse of rfft2 (float32)."""
    return _many("irfft2", a, s, axes, norm, stream, True, True)


def fftn(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward", stream: Any = None) -> array:
    """n-dimensional FFT over ``axes`` (default all)."""
    return _many("fftn", a, s, axes, norm, stream, False, False)


def ifftn(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward", stream: Any = None) -> array:
    """n-dimensional inverse FFT over ``axes`` (default all)."""
    return _many("ifftn", a, s, axes, norm, stream, False, True)


def rfftn(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward", stream: Any = None) -> array:
    """n-dimensional real FFT (the last transformed axis halved)."""
    return _many("rfftn", a, s, axes, norm, stream, True, False)


def irfftn(a: array, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward", stream: Any = None) -> array:
    """Inverse of rfftn (float32)."""
    return _many("irfftn", a, s, axes, norm, stream, True, True)


def _shift(fn: str, a: Any, axes: Any, stream: Any, inverse: bool) -> array:
    ok = axes is None or _is_int(axes) or (isinstance(axes, (tuple, list)) and all(
        _is_int(v) for v in axes))
    if not isinstance(a, array) or not ok:
        raise _signature_error(fn, a)
    s = dev.resolve_stream(stream)
    if axes is None:
        axes = list(range(a.ndim))
    elif _is_int(axes):
        axes = [int(axes)]
    axes = [int(v) for v in axes]
    if not axes:
        return a
    shifts = []
    for ax in axes:
        if not -a.ndim <= ax < a.ndim:
            raise AxisError(f"[{fn}] Invalid axis {ax} for array with {a.ndim} dimensions.")
        size = a.shape[ax]
        shifts.append(-(size // 2) if inverse else size // 2)
    return S.roll(a, shifts, axes, stream=s)


def fftshift(a: array, axes: int | Sequence[int] | None = None, stream: Any = None) -> array:
    """Move the zero-frequency bin to the centre (a roll by n//2 on each axis)."""
    return _shift("fftshift", a, axes, stream, False)


def ifftshift(a: array, axes: int | Sequence[int] | None = None, stream: Any = None) -> array:
    """Undo fftshift (a roll by -(n//2) on each axis)."""
    return _shift("ifftshift", a, axes, stream, True)


def _check_freq(fn: str, n: Any, d: Any) -> None:
    if not _is_int(n) or not isinstance(d, (int, float, np.integer, np.floating)) or \
            isinstance(d, bool):
        raise _signature_error(fn, n)
    if n <= 0:
        raise ValueError(f"[{fn}] `n` must be greater than 0.")
    if d == 0:
        raise ValueError(f"[{fn}] `d` must be non-zero.")


def fftfreq(n: int, d: float = 1.0, stream: Any = None) -> array:
    """Sample frequencies [0, 1, ..., -(n//2), ..., -1] / (d*n), float32."""
    _check_freq("fftfreq", n, d)
    s = dev.resolve_stream(stream)
    n = int(n)
    i = C.arange(0, n, dtype=dt.int32, stream=s)
    k = E.where(E.less(i, array((n + 1) // 2, dt.int32), stream=s), i,
                E.subtract(i, array(n, dt.int32), stream=s), stream=s)
    return E.divide(_astype(k, dt.float32, s), array(float(d) * n, dt.float32), stream=s)


def rfftfreq(n: int, d: float = 1.0, stream: Any = None) -> array:
    """Sample frequencies [0, 1, ..., n//2] / (d*n) of rfft, float32."""
    _check_freq("rfftfreq", n, d)
    s = dev.resolve_stream(stream)
    n = int(n)
    i = C.arange(0, n // 2 + 1, dtype=dt.float32, stream=s)
    return E.divide(i, array(float(d) * n, dt.float32), stream=s)


def _window(window: array | None, win_length: int, n_fft: int, s: dev.Stream, fn: str
            ) -> array:
    """The analysis window (rectangular by default), centred and zero-padded to ``n_fft``."""
    if window is None:
        w = C.ones((win_length,), dtype=dt.float32, stream=s)
    else:
        if not isinstance(window, array):
            raise TypeError(f"[{fn}] window must be an array.")
        w = window
        if w.ndim != 1:
            raise ValueError(f"[{fn}] window must be a one-dimensional array.")
        if w.shape[0] > n_fft:
            raise ValueError(f"[{fn}] window length must not exceed n_fft.")
    left = (n_fft - w.shape[0]) // 2
    right = n_fft - w.shape[0] - left
    if left or right:
        w = S.pad(w, [(left, right)], stream=s)
    return w


def stft(x: array, n_fft: int = 2048, hop_length: int | None = None,
         win_length: int | None = None, window: array | None = None, center: bool = True,
         pad_mode: str = "reflect", norm: str = "backward", onesided: bool | None = None,
         stream: Any = None) -> array:
    """Short-time Fourier transform: frames of the last axis, windowed, transformed;
    (..., n_freq, n_frames) complex64. Composed of pad, take, multiply and rfft/fft."""
    if not isinstance(x, array):
        raise _signature_error("fft", x)
    s = dev.resolve_stream(stream)
    if x.ndim < 1:
        raise ValueError("[stft] Input must have at least one dimension.")
    _check_norm("stft", norm)
    if n_fft <= 0:
        raise ValueError("[stft] n_fft must be positive.")
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    if hop <= 0:
        raise ValueError("[stft] hop_length must be positive.")
    wl = n_fft if win_length is None else int(win_length)
    if window is not None and win_length is None:
        wl = window.shape[0] if isinstance(window, array) and window.ndim == 1 else wl
    if wl > n_fft:
        raise ValueError("[stft] window length must not exceed n_fft.")
    if wl < 0 and window is None:
        raise ValueError("[full] Negative dimensions not allowed.")
    w = _window(window, wl, n_fft, s, "stft")
    is_complex = x.dtype is dt.complex64
    if onesided is None:
        onesided = not is_complex
    if center:
        p = n_fft // 2
        x = S.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode=pad_mode, stream=s)
    length = x.shape[-1]
    if length < n_fft:
        raise ValueError("[stft] Input is too short for the given n_fft.")
    n_frames = 1 + (length - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(n_frames)[:, None]
    from .indexing import take

    frames = take(x, array(idx.astype(np.int32)), axis=-1, stream=s)  # (..., frames, n_fft)
    frames = E.multiply(frames, w, stream=s)
    if onesided:  # MLX's rfft: a complex input contributes its real part
        spec = rfft(frames, n_fft, -1, norm, stream=s)
    else:
        spec = fft(frames, n_fft, -1, norm, stream=s)
    return S.swapaxes(spec, -1, -2, stream=s)


def _overlap_add(frames: array, hop: int, s: dev.Stream) -> array:
    """Sum frames (..., F, n) placed ``hop`` apart: (..., n + hop*(F-1)), by r block pads."""
    n_frames, n = frames.shape[-2:]
    r = -(-n // hop)
    total = n + hop * (n_frames - 1)
    if r * hop != n:
        frames = S.pad(frames, [(0, 0)] * (frames.ndim - 1) + [(0, r * hop - n)], stream=s)
    lead = frames.shape[:-2]
    blocks = S.reshape(frames, lead + (n_frames, r, hop), stream=s)
    out = None
    for j in range(r):
        with dev.StreamContext(s):
            chunk = blocks[..., j, :]  # (..., F, hop): lands on blocks f + j
        chunk = S.pad(chunk, [(0, 0)] * len(lead) + [(j, r - 1 - j), (0, 0)], stream=s)
        out = chunk if out is None else E.add(out, chunk, stream=s)
    out = S.reshape(out, lead + ((n_frames + r - 1) * hop,), stream=s)
    with dev.StreamContext(s):
        return out[..., :total]


def istft(stft_matrix: array, n_fft: int | None = None, hop_length: int | None = None,
          win_length: int | None = None, window: array | None = None, center: bool = True,
          norm: str = "backward", onesided: bool | None = None, length: int | None = None,
          stream: Any = None) -> array:
    """Inverse STFT: inverse transform of each frame, windowed overlap-add, divided by the
    squared-window envelope; float32 (..., samples)."""
    if not isinstance(stft_matrix, array):
        raise _signature_error("ifft", stft_matrix)
    s = dev.resolve_stream(stream)
    X = stft_matrix
    if X.ndim < 2:
        raise ValueError("[istft] Input must have at least two dimensions (freq, frames).")
    _check_norm("istft", norm)
    if onesided is None:
        onesided = True
    n_freq = X.shape[-2]
    if n_fft is None:
        n_fft = 2 * (n_freq - 1) if onesided else n_freq
    if n_fft <= 0:
        raise ValueError("[istft] n_fft must be positive.")
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    if hop <= 0:
        raise ValueError("[istft] hop_length must be positive.")
    wl = n_fft if win_length is None else int(win_length)
    if window is not None and win_length is None and isinstance(window, array) and \
            window.ndim == 1:
        wl = window.shape[0]
    if wl > n_fft:
        raise ValueError("[istft] window length must not exceed n_fft.")
    if wl < 0 and window is None:
        raise ValueError("[full] Negative dimensions not allowed.")
    w = _astype(_window(window, wl, n_fft, s, "istft"), dt.float32, s)
    frames = S.swapaxes(X, -1, -2, stream=s)  # (..., F, n_freq)
    if onesided:
        frames = irfft(frames, n_fft, -1, norm, stream=s)
    else:
        frames = E.real(ifft(frames, n_fft, -1, norm, stream=s), stream=s)
    n_frames = frames.shape[-2]
    y = _overlap_add(E.multiply(frames, w, stream=s), hop, s)
    w2 = S.broadcast_to(E.square(w, stream=s), (n_frames, n_fft), stream=s)
    env = _overlap_add(w2, hop, s)
    tiny = array(1e-11, dt.float32)
    ok = E.greater(env, tiny, stream=s)
    y = E.where(ok, E.divide(y, E.where(ok, env, array(1.0, dt.float32), stream=s), stream=s),
                array(0.0, dt.float32), stream=s)
    start = n_fft // 2 if center else 0
    end = y.shape[-1] - (n_fft // 2 if center else 0)
    if length is not None:
        end = start + int(length)
    with dev.StreamContext(s):
        y = y[..., start:min(end, y.shape[-1])]
    if length is not None and y.shape[-1] < length:
        y = S.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, int(length) - y.shape[-1])], stream=s)
    return y


def __dir__() -> list[str]:
    # dir(mx.fft) as MLX shows it: MLX lists only the public functions, not our helpers
    return [n for n in ("__doc__", "__loader__", "__name__", "__package__", "__spec__")
            if n in globals()] + sorted(__all__)


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.core.fft', not our module path
    raise AttributeError(f"module 'mlx.core.fft' has no attribute {name!r}")
