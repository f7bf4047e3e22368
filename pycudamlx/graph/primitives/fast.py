"""mx.fast primitives: RMSNorm, LayerNorm, RoPE, ScaledDotProductAttention, CustomKernel.

CPU implementations are numpy with float32 accumulation, in the order of MLX's own fallback
compositions (mlx/fast.cpp), so rounding matches MLX's CPU build: the normalisation in float32,
rounded to the output dtype, then weight and bias in the output dtype. GPU implementations are
the fused kernels in backend/cuda/kernels/fast_norm.cu and sdpa.cu.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ... import dtypes as dt
from ..primitive import OutSpec, Primitive, cuda_modules
from .matmul import host_matmul


_cuda_fast = cuda_modules("fast")


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _row_mean(v: np.ndarray) -> np.ndarray:
    """Float32 mean over the last axis, keepdims, summed in the order of ``mx.mean`` on the
    CPU (MLX's fast norms on the CPU are its composition of mean/rsqrt, so a numpy pairwise
    mean differed from MLX by up to 8 ulps for 4099-wide rows)."""
    from .reduce import _mean

    return _mean(v, (v.ndim - 1,), True, dt.float32, None)


def _to(x: np.ndarray, dtype: dt.Dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(x).astype(dtype.np_dtype)


class RMSNorm(Primitive):
    """inputs: x (out dtype), weight (1-D, out dtype) when has_weight."""

    __slots__ = ("eps", "has_weight")
    name = "rms_norm"
    gpu_kernel = True

    def __init__(self, eps: float, has_weight: bool) -> None:
        self.eps = float(eps)
        self.has_weight = has_weight

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        dtype = outs[0][1]
        x = _f32(inputs[0])
        if x.size == 0:
            return [np.empty(x.shape, dtype.np_dtype)]
        with np.errstate(all="ignore"):
            ms = _row_mean(np.square(x))
            y = _to(x * (np.float32(1) / np.sqrt(ms + np.float32(self.eps))), dtype)
            if self.has_weight:
                y = _to(y * inputs[1], dtype)
        return [y]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        w = inputs[1] if self.has_weight else None
        return [_cuda_fast().norm(inputs[0], w, None, self.eps, False, outs[0][1], stream)]


class LayerNorm(Primitive):
    """inputs: x, then weight and/or bias (1-D, out dtype) as flagged."""

    __slots__ = ("eps", "has_weight", "has_bias")
    name = "layer_norm"
    gpu_kernel = True

    def __init__(self, eps: float, has_weight: bool, has_bias: bool) -> None:
        self.eps = float(eps)
        self.has_weight = has_weight
        self.has_bias = has_bias

    def _wb(self, inputs: Sequence[Any]) -> tuple[Any, Any]:
        i = 1
        w = b = None
        if self.has_weight:
            w = inputs[i]
            i += 1
        if self.has_bias:
            b = inputs[i]
        return w, b

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        dtype = outs[0][1]
        x = _f32(inputs[0])
        if x.size == 0:
            return [np.empty(x.shape, dtype.np_dtype)]
        w, b = self._wb(inputs)
        with np.errstate(all="ignore"):
            xc = x - _row_mean(x)
            var = _row_mean(np.square(xc))
            y = _to(xc * (np.float32(1) / np.sqrt(var + np.float32(self.eps))), dtype)
            if w is not None:
                y = _to(y * w, dtype)
            if b is not None:
                y = _to(y + b, dtype)
        return [y]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        w, b = self._wb(inputs)
        return [_cuda_fast().norm(inputs[0], w, b, self.eps, True, outs[0][1], stream)]


class RoPE(Primitive):
    """inputs: x, then the int32 offset array (when not a constant), then float32 freqs."""

    __slots__ = ("dims", "traditional", "base", "scale", "off_const", "has_offset",
                 "has_freqs")
    name = "rope"
    gpu_kernel = True

    def __init__(self, dims: int, traditional: bool, base: float, scale: float,
                 off_const: int, has_offset: bool, has_freqs: bool) -> None:
        self.dims = dims
        self.traditional = bool(traditional)
        self.base = float(base)
        self.scale = float(scale)
        self.off_const = off_const
        self.has_offset = has_offset
        self.has_freqs = has_freqs

    def _split(self, inputs: Sequence[Any]) -> tuple[Any, Any, Any]:
        i = 1
        off = freqs = None
        if self.has_offset:
            off = inputs[i]
            i += 1
        if self.has_freqs:
            freqs = inputs[i]
        return inputs[0], off, freqs

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        x, off, freqs = self._split(inputs)
        dtype = outs[0][1]
        shape = x.shape
        B, T, D = shape[0], shape[-2], shape[-1]
        H = math.prod(shape[1:-2])
        x4 = np.asarray(x).reshape(B, H, T, D)
        if x4.size == 0:
            return [np.array(x4, dtype=dtype.np_dtype).reshape(shape)]
        half = self.dims // 2
        if off is None:
            offset = np.full((1, 1, 1), self.off_const, np.float32)
        else:
            offset = np.asarray(off).reshape(-1, 1, 1).astype(np.float32)
        positions = (np.arange(T, dtype=np.float32)[None, None, :] + offset) * np.float32(
            self.scale)                                            # (B or 1, 1, T)
        if freqs is None:
            inv = np.exp(np.arange(0, -half, -1, dtype=np.float32)
                         * np.float32(math.log(self.base) / half))
        else:
            inv = np.float32(1) / _f32(freqs)
        theta = positions[..., None] * inv                         # (B or 1, 1, T, half)
        ct = np.float64 if dtype is dt.float64 else np.float32
        cos, sin = np.cos(theta).astype(ct), np.sin(theta).astype(ct)
        if dtype in (dt.float16, dt.bfloat16):
            # MLX rounds cos/sin and each product to the half dtype (x1 * cos - x2 * sin is
            # computed in the input's type after the angle in float32)
            def rnd(v: np.ndarray) -> np.ndarray:
                return v.astype(dtype.np_dtype).astype(np.float32)
        else:
            def rnd(v: np.ndarray) -> np.ndarray:
                return v
        cos, sin = rnd(cos), rnd(sin)
        xc = x4.astype(ct)
        out = np.array(x4, copy=True)
        if self.traditional:
            x1, x2 = xc[..., 0:self.dims:2], xc[..., 1:self.dims:2]
            first, second = slice(0, self.dims, 2), slice(1, self.dims, 2)
        else:
            x1, x2 = xc[..., :half], xc[..., half:self.dims]
            first, second = slice(0, half), slice(half, self.dims)
        out[..., first] = _to(rnd(x1 * cos) - rnd(x2 * sin), dtype)
        out[..., second] = _to(rnd(x1 * sin) + rnd(x2 * cos), dtype)
        return [out.reshape(shape)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        x, off, freqs = self._split(inputs)
        return [_cuda_fast().rope(x, off, freqs, self.dims, self.traditional, self.base,
                                  self.scale, self.off_const, stream)]


class ScaledDotProductAttention(Primitive):
    """inputs: q, k, v (out dtype), then the mask (bool, or additive in the out dtype;
    broadcastable to (B, Hq, Tq, Tk)) and the sinks (1-D, Hq) as flagged."""

    __slots__ = ("scale", "causal", "mask_kind", "has_sinks")
    name = "scaled_dot_product_attention"
    gpu_kernel = True

    def __init__(self, scale: float, causal: bool, mask_kind: int, has_sinks: bool) -> None:
        self.scale = float(scale)
        self.causal = causal
        self.mask_kind = mask_kind  # 0 none, 1 bool, 2 additive
        self.has_sinks = has_sinks

    def _split(self, inputs: Sequence[Any]) -> tuple[Any, Any]:
        i = 3
        mask = sinks = None
        if self.mask_kind:
            mask = inputs[i]
            i += 1
        if self.has_sinks:
            sinks = inputs[i]
        return mask, sinks

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        shape, dtype = outs[0]
        q, k, v = inputs[:3]
        mask, sinks = self._split(inputs)
        B, Hq, Tq, _ = q.shape
        Hkv, Tk = k.shape[1], k.shape[2]
        if Tk == 0 or 0 in shape:
            return [np.zeros(shape, dtype.np_dtype)]
        ct = np.float64 if dtype is dt.float64 else np.float32
        if dtype in (dt.float16, dt.bfloat16):
            # MLX's CPU composes the attention from ops in the half dtype: the scaled queries,
            # the scores (after the mask) and the probabilities round to it (softmax itself is
            # the precise one, in float32)
            def rnd(a: np.ndarray) -> np.ndarray:
                return np.asarray(a, np.float32).astype(dtype.np_dtype).astype(np.float32)
        else:
            def rnd(a: np.ndarray) -> np.ndarray:
                return a
        rep = Hq // Hkv
        with np.errstate(all="ignore"):
            qf = rnd(q.astype(ct) * rnd(np.asarray(self.scale, ct)))
            kf, vf = k.astype(ct), v.astype(ct)
            if rep > 1:
                kf, vf = np.repeat(kf, rep, axis=1), np.repeat(vf, rep, axis=1)
            s = rnd(host_matmul(qf, np.swapaxes(kf, -1, -2)).astype(ct))  # (B, Hq, Tq, Tk)
            lowest = ct(dt.finfo(dtype).min)
            if self.causal:
                i = np.arange(Tq)[:, None] + (Tk - Tq)
                s = np.where(np.arange(Tk)[None, :] <= i, s, lowest)
            if self.mask_kind == 1:
                s = np.where(mask, s, lowest)
            elif self.mask_kind == 2:
                s = rnd(s + np.asarray(mask).astype(ct))
            if sinks is not None:
                sk = np.broadcast_to(sinks.astype(ct).reshape(1, Hq, 1, 1), (B, Hq, Tq, 1))
                s = np.concatenate([sk, s], axis=-1)
            m = np.max(s, axis=-1, keepdims=True)
            e = np.exp(s - m)
            p = rnd(e / np.sum(e, axis=-1, keepdims=True))
            if sinks is not None:
                p = p[..., 1:]
            out = host_matmul(p, vf)
        return [_to(out, dtype)]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        from .elementwise import broadcast_view

        shape, dtype = outs[0]
        q, k, v = inputs[:3]
        mask, sinks = self._split(inputs)
        if mask is not None:
            mask = broadcast_view(mask, (q.shape[0], q.shape[1], q.shape[2], k.shape[2]))
        lowest = float(dt.finfo(dtype).min)
        return [_cuda_fast().sdpa(q, k, v, mask, self.mask_kind, sinks, self.scale,
                                  self.causal, lowest, dtype, stream)]
