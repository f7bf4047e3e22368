"""``mx.fast``: fused rms_norm, layer_norm, rope, scaled_dot_product_attention and cuda_kernel.

Signatures, result dtypes, argument checks and error messages are MLX 0.32.4's (mlx/fast.cpp).
Each op is one graph node: fused NVRTC kernels on a GPU stream (backend/cuda/kernels/
fast_norm.cu, sdpa.cu), numpy with float32 accumulation on the CPU.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

from .. import dtypes as dt
from ..graph.primitives import fast as P
from . import device as dev
from ._base import as_array, astype
from .array import array, make
from .shape import broadcast_to, fmt_shape

__all__ = ["rms_norm", "layer_norm", "rope", "scaled_dot_product_attention", "cuda_kernel",
           "metal_kernel", "precompiled_cuda_kernel", "cross_entropy", "gated_delta_update"]

_SDPA = "[scaled_dot_product_attention]"


def _incompatible(fn: str, signature: str, args: Sequence[Any]) -> TypeError:
    types = ", ".join(_type_name(a) for a in args)
    return TypeError(f"{fn}(): incompatible function arguments. The following argument types "
                     f"are supported:\n    1. {signature}\n\nInvoked with types: {types}")


def _type_name(a: Any) -> str:
    if isinstance(a, array):
        return "mlx.core.array"
    return type(a).__name__


def _opt_array(value: Any, fn: str, signature: str, args: Sequence[Any]) -> array | None:
    if value is None or isinstance(value, array):
        return value
    raise _incompatible(fn, signature, args)


def _float(value: Any, fn: str, signature: str, args: Sequence[Any]) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, complex):
        return float(value)
    try:
        import numpy as np

        if isinstance(value, (np.integer, np.floating)):
            return float(value)
    except ImportError:  # pragma: no cover
        pass
    raise _incompatible(fn, signature, args)


# ------------------------------------------------------------------------------------------------
# Norms

_RMS_SIG = ("rms_norm(x: array, weight: array | None, eps: float, *, stream: StreamOrDevice = "
            "None) -> array")
_LN_SIG = ("layer_norm(x: array, weight: array | None, bias: array | None, eps: float, *, "
           "stream: StreamOrDevice = None) -> array")


def _check_param(p: array, x: array, fn: str, what: str) -> None:
    if p.ndim != 1:
        raise ValueError(f"[{fn}] {what} must have 1 dimension but has {p.ndim} dimensions.")
    if p.size != x.shape[-1]:
        raise ValueError(f"[{fn}] {what} must have the same size as the last dimension of x "
                         f"but has {p.size} elements.")


def cross_entropy(logits: array, targets: array, *, stream: Any = None) -> array:
    """``logsumexp(logits, -1) - logits[..., target]`` per element, float32 (MLX's fused loss).

    As in MLX, a GPU stream accumulates in float32 and the CPU stream reduces in the logits'
    dtype before the float32 result; built from the lazy ops, so it is differentiable."""
    from .indexing import take_along_axis
    from .reduce import logsumexp
    from .shape import expand_dims, squeeze

    if not isinstance(logits, array) or not isinstance(targets, array):
        raise dt._incompatible_arguments(
            "cross_entropy(logits: array, targets: array, *, stream: StreamOrDevice = None) "
            "-> array", logits, targets)
    if logits.dtype.kind != "f":
        raise ValueError(f"[cross_entropy] Received unsupported logits type {logits.dtype.name}.")
    if targets.dtype.kind not in "iu":
        raise ValueError("[cross_entropy] targets must be integer class indices but got "
                         f"{targets.dtype.name}.")
    if logits.ndim == 0 or tuple(targets.shape) != tuple(logits.shape[:-1]):
        raise ValueError(f"[cross_entropy] targets shape {fmt_shape(targets.shape)} does not "
                         f"match logits shape {fmt_shape(logits.shape)} with the last axis "
                         "removed.")
    s = dev.resolve_stream(stream)
    x = logits if not s.is_gpu else astype(logits, dt.float32, stream=s)
    picked = squeeze(take_along_axis(x, expand_dims(targets, -1, stream=s), -1, stream=s), -1,
                     stream=s)
    return astype(logsumexp(x, -1, stream=s) - picked, dt.float32, stream=s)


def rms_norm(x: array, weight: array | None, eps: float, *, stream: Any = None) -> array:
    """Root-mean-square normalisation over the last axis, times ``weight`` (one fused kernel)."""
    args = (x, weight, eps)
    if not isinstance(x, array):
        raise _incompatible("rms_norm", _RMS_SIG, args)
    weight = _opt_array(weight, "rms_norm", _RMS_SIG, args)
    eps = _float(eps, "rms_norm", _RMS_SIG, args)
    if x.ndim == 0:
        raise ValueError("[rms_norm] Input must have at least 1 dimension but got input with "
                         "0 dimensions.")
    if weight is not None:
        _check_param(weight, x, "rms_norm", "(*weight)")
    out_type = dt.promote_types(x.dtype, weight.dtype) if weight is not None else x.dtype
    if not dt.issubdtype(out_type, dt.floating):
        raise ValueError(f"[rms_norm] Received unsupported type {out_type.name}.")
    s = dev.resolve_stream(stream)
    inputs: tuple = (astype(x, out_type, s),)
    if weight is not None:
        inputs += (astype(weight, out_type, s),)
    return make(P.RMSNorm(eps, weight is not None), inputs, x.shape, out_type, s)


def layer_norm(x: array, weight: array | None, bias: array | None, eps: float, *,
               stream: Any = None) -> array:
    """Layer normalisation over the last axis, then ``* weight + bias`` (one fused kernel)."""
    args = (x, weight, bias, eps)
    if not isinstance(x, array):
        raise _incompatible("layer_norm", _LN_SIG, args)
    weight = _opt_array(weight, "layer_norm", _LN_SIG, args)
    bias = _opt_array(bias, "layer_norm", _LN_SIG, args)
    eps = _float(eps, "layer_norm", _LN_SIG, args)
    if x.ndim == 0:
        raise ValueError("[layer_norm] Input must have at least 1 dimension but got input with "
                         "0 dimensions.")
    if weight is not None:
        _check_param(weight, x, "layer_norm", "weight")
    if bias is not None:
        _check_param(bias, x, "layer_norm", "bias")
    # MLX: the bias takes part in promotion only together with a weight.
    if weight is None:
        out_type = x.dtype
    elif bias is None:
        out_type = dt.promote_types(x.dtype, weight.dtype)
    else:
        out_type = dt.promote_types(dt.promote_types(x.dtype, weight.dtype), bias.dtype)
    if not dt.issubdtype(out_type, dt.floating):
        raise ValueError(f"[layer_norm] Received unsupported type {out_type.name}.")
    s = dev.resolve_stream(stream)
    inputs: tuple = (astype(x, out_type, s),)
    if weight is not None:
        inputs += (astype(weight, out_type, s),)
    if bias is not None:
        inputs += (astype(bias, out_type, s),)
    return make(P.LayerNorm(eps, weight is not None, bias is not None), inputs, x.shape,
                out_type, s)


# ------------------------------------------------------------------------------------------------
# RoPE

_ROPE_SIG = ("rope(a: array, dims: int, *, traditional: bool, base: float | None, scale: "
             "float, offset: int | array, freqs: array | None = None, stream: StreamOrDevice "
             "= None) -> array")


def rope(a: array, dims: int, *, traditional: bool, base: float | None, scale: float,
         offset: int | array, freqs: array | None = None, stream: Any = None) -> array:
    """Rotary positional encoding of the last axis of a (B, *, T, D) array.

    ``offset`` may be an int or an integer array (a scalar or one offset per batch entry);
    an array offset stays on the device, so a decoding loop needs no host synchronisation.
    """
    args = (a, dims, traditional, base, scale, offset, freqs)
    if not isinstance(a, array) or isinstance(dims, float) or not isinstance(
            traditional, (bool, int)):
        raise _incompatible("rope", _ROPE_SIG, args)
    try:
        dims = operator.index(dims)
    except TypeError:
        raise _incompatible("rope", _ROPE_SIG, args) from None
    if base is not None:
        base = _float(base, "rope", _ROPE_SIG, args)
    scale = _float(scale, "rope", _ROPE_SIG, args)
    freqs = _opt_array(freqs, "rope", _ROPE_SIG, args)
    s = dev.resolve_stream(stream)
    off_const = 0
    off_arr: array | None = None
    if isinstance(offset, array):
        off_arr = offset
    elif isinstance(offset, (bool, int)):
        off_const = int(offset)
    elif isinstance(offset, float):
        off_arr = as_array(offset)  # MLX converts it, then rejects the float32 array below
    else:
        try:
            off_const = operator.index(offset)
        except TypeError:
            raise _incompatible("rope", _ROPE_SIG, args) from None
    if freqs is not None:
        if base is not None:
            raise ValueError("[rope] Only one of base or freqs can have a value.")
    elif base is None:
        raise ValueError("[rope] Neither base nor freqs has a value.")
    if a.ndim < 3:
        raise ValueError(f"[rope] Input must have at least 3 dimensions but got input with "
                         f"{a.ndim} dimensions.")
    if not dt.issubdtype(a.dtype, dt.floating):
        raise ValueError(f"[rope] Input must be a floating type but got {a.dtype.name}.")
    if off_arr is not None:
        if off_arr.ndim > 1:
            raise ValueError(f"[rope] offset must have at most one dimension but has shape "
                             f"{fmt_shape(off_arr.shape)}.")
        if off_arr.size != 1 and off_arr.size != a.shape[0]:
            raise ValueError(f"[rope] offset must be a scalar or vector with {a.shape[0]} "
                             f"elements but has shape {fmt_shape(off_arr.shape)}.")
        if not dt.issubdtype(off_arr.dtype, dt.integer):
            raise ValueError(f"[rope] offset must be an integer but got type "
                             f"{off_arr.dtype.name}.")
        if off_arr.dtype is not dt.int32:
            off_arr = astype(off_arr, dt.int32, s)
    if dims <= 0:
        raise ValueError(f"[rope] dims must be positive but got {dims}.")
    if dims % 2:
        raise ValueError(f"[rope] dims must be even but got {dims}.")
    if dims > a.shape[-1]:
        raise ValueError(f"[rope] dims must not exceed the input's last dimension "
                         f"({a.shape[-1]}) but got {dims}.")
    if freqs is not None and (freqs.ndim != 1 or freqs.shape[0] != dims // 2):
        raise ValueError(f"[rope] freqs must be one dimensional with size {dims // 2} but got "
                         f"shape {fmt_shape(freqs.shape)}.")
    if not -2**31 <= off_const < 2**31:
        raise OverflowError(f"[rope] offset {off_const} does not fit in int32.")
    inputs: tuple = (a,)
    if off_arr is not None:
        inputs += (off_arr,)
    if freqs is not None:
        inputs += (astype(freqs, dt.float32, s),)
    prim = P.RoPE(dims, bool(traditional), base if base is not None else 1.0, scale, off_const,
                  off_arr is not None, freqs is not None)
    return make(prim, inputs, a.shape, a.dtype, s)


# ------------------------------------------------------------------------------------------------
# Attention


def scaled_dot_product_attention(q: array, k: array, v: array, *, scale: float,
                                 mask: None | str | array = None, sinks: array | None = None,
                                 force_fused: bool = False, stream: Any = None) -> array:
    """``softmax(q @ k.T * scale + mask) @ v`` in one fused kernel (online softmax).

    q: (B, Hq, Tq, D); k: (B, Hkv, Tk, D); v: (B, Hkv, Tk, Dv), Hq a multiple of Hkv
    (grouped-query attention: k and v are not tiled). ``mask`` is "causal" (lower-right
    aligned), a boolean mask (True keeps) or an additive mask, broadcastable to
    (B, Hq, Tq, Tk). ``sinks`` (Hq,) adds one logit per head that takes probability mass.
    """
    sig = ("scaled_dot_product_attention(q: array, k: array, v: array, *, scale: float,  mask: "
           "None | str | array = None, sinks: array | None = None, force_fused: bool = False, "
           "stream: StreamOrDevice = None) -> array")
    args = (q, k, v)
    if not all(isinstance(t, array) for t in (q, k, v)):
        raise _incompatible("scaled_dot_product_attention", sig, args)
    scale = _float(scale, "scaled_dot_product_attention", sig, args)
    if mask is not None and not isinstance(mask, (str, array)):
        raise _incompatible("scaled_dot_product_attention", sig, args + (mask,))
    sinks = _opt_array(sinks, "scaled_dot_product_attention", sig, args)
    causal = False
    mask_arr: array | None = None
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"{_SDPA} invalid mask option '{mask}'. Must be 'causal', or an "
                             "array.")
        causal = True
    elif mask is not None:
        mask_arr = mask
    for t in (q, k, v):
        if t.ndim != 4:
            raise ValueError(f"{_SDPA} input with shape {fmt_shape(t.shape)} expected to be "
                             "rank 4")
    if mask_arr is not None and mask_arr.ndim > 4:
        raise ValueError(f"{_SDPA} the mask with shape {fmt_shape(mask_arr.shape)} expected to "
                         "have at most rank 4.")
    B = q.shape[0]
    for t in (k, v):
        if t.shape[0] != B:
            raise ValueError(f"{_SDPA} mismatching batch dimension for input with shape "
                             f"{fmt_shape(t.shape)}.")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{_SDPA} query, keys expected to have matching last dimension; found "
                         f"query shape {fmt_shape(q.shape)} for keys shape "
                         f"{fmt_shape(k.shape)}.")
    hq, hkv = q.shape[1], k.shape[1]
    if hkv != v.shape[1]:
        raise ValueError(f"{_SDPA} keys, values expected to have matching n_kv_heads; found "
                         f"keys with n_heads {hkv} for values with n_heads {v.shape[1]}.")
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{_SDPA} n_heads must be a multiple of n_kv_heads, found n_heads {hq} "
                         f"for n_kv_heads {hkv}.")
    final = dt.promote_types(dt.promote_types(q.dtype, k.dtype), v.dtype)
    if not dt.issubdtype(final, dt.floating):
        raise ValueError(f"{_SDPA} Received unsupported type {final.name}.")
    if v.shape[2] != k.shape[2]:  # MLX's fallback fails in its scores @ v matmul
        rep = hq // hkv
        if rep > 1:
            first = (B, hkv, rep, q.shape[2], k.shape[2])
            second = (B, hkv, 1) + v.shape[2:]
        else:
            first, second = (B, hq, q.shape[2], k.shape[2]), v.shape
        raise ValueError(f"[matmul] Last dimension of first input with shape "
                         f"{fmt_shape(first)} must match second to last dimension of second "
                         f"input with shape {fmt_shape(second)}.")
    s = dev.resolve_stream(stream)
    if force_fused and not s.is_gpu:
        raise ValueError(f"{_SDPA} force_fused=True but no fused kernel is available in CPU "
                         "backend.")
    inputs: tuple = (astype(q, final, s), astype(k, final, s), astype(v, final, s))
    mask_kind = 0
    if mask_arr is not None:
        if dt.promote_types(mask_arr.dtype, final) is not final:
            raise ValueError(f"{_SDPA} Mask type must promote to output type {final.name}.")
        if mask_arr.dtype is dt.bool_:
            mask_kind = 1
        else:
            mask_kind = 2
            mask_arr = astype(mask_arr, final, s)
        target = q.shape[:3] + (k.shape[2],)
        if mask_arr.shape != target:
            mask_arr = broadcast_to(mask_arr, target, stream=s)
        inputs += (mask_arr,)
    if sinks is not None:
        if dt.promote_types(sinks.dtype, final) is not final:
            raise ValueError(f"{_SDPA} Type of sinks must promote to output type {final.name}.")
        if sinks.ndim != 1 or sinks.shape[0] != hq:
            raise ValueError(f"{_SDPA} Received invalid shape for sinks "
                             f"{fmt_shape(sinks.shape)}.")
        inputs += (astype(sinks, final, s),)
    out_shape = (B, hq, q.shape[2], v.shape[3])
    prim = P.ScaledDotProductAttention(scale, causal, mask_kind, sinks is not None)
    return make(prim, inputs, out_shape, final, s)


# ------------------------------------------------------------------------------------------------
# Custom kernels


def cuda_kernel(name: str, input_names: Sequence[str], output_names: Sequence[str],
                source: str, header: str = "", ensure_row_contiguous: bool = True,
                shared_memory: int = 0) -> Any:
    """A custom CUDA kernel from the body of a ``__global__`` function (MLX's cuda_kernel).

    Compiled through NVRTC with our disk cache; see docs/fast.md for the generated signature.
    """
    from .custom_kernel import CudaKernel

    return CudaKernel(name, input_names, output_names, source, header,
                      ensure_row_contiguous, shared_memory)


def metal_kernel(name: str = None, input_names: Sequence[str] = None,  # type: ignore[assignment]
                 output_names: Sequence[str] = None, source: str = None,  # type: ignore[assignment]
                 header: str = "", ensure_row_contiguous: bool = True,
                 atomic_outputs: bool = False, compile_options: Any = None) -> Any:
    """A Metal kernel object, as MLX's non-Metal builds make it: building one succeeds (model
    code builds its kernels at import time and only calls them on Metal), calling it raises MLX's
    RuntimeError. On NVIDIA GPUs write the body in CUDA and use ``cuda_kernel``."""
    args = (name, input_names, output_names, source, header)
    if not (isinstance(name, str) and isinstance(source, str) and isinstance(header, str)
            and all(isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names)
                    for names in (input_names, output_names))):
        raise _incompatible("metal_kernel", _METAL_SIG, args)

    def no_metal(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("[metal_kernel] No Metal back-end.")

    no_metal.__name__ = name
    return no_metal


_METAL_SIG = ("metal_kernel(name: str, input_names: collections.abc.Sequence[str], output_names: "
              "collections.abc.Sequence[str], source: str, header: str = '', "
              "ensure_row_contiguous: bool = True, atomic_outputs: bool = False, compile_options: "
              "object | None = None) -> object")


def precompiled_cuda_kernel(*args: Any, **kwargs: Any) -> Any:
    """MLX's precompiled_cuda_kernel (a PTX/CUBIN string) is not supported yet."""
    raise NotImplementedError("[precompiled_cuda_kernel] is not supported by pycudamlx yet; "
                              "use mx.fast.cuda_kernel with the CUDA source.")


_GDU_SIG = ("gated_delta_update(q: array, k: array, v: array, gamma: array, beta: array, "
            "initial_state: array | None = None, mask: array | None = None, stream: "
            "StreamOrDevice = None) -> list[array]")


def gated_delta_update(q: array, k: array, v: array, gamma: array, beta: array,
                       initial_state: array | None = None, mask: array | None = None,
                       stream: Any = None) -> list[array]:
    """The gated delta rule (Qwen3-Next's linear attention), MLX 0.32.4's
    ``mx.fast.gated_delta_update``: ``[y, state]`` for q, k ``[B, T, Hk, Dk]``, v
    ``[B, T, Hv, Dv]``, gamma (decay, linear space) and beta ``[B, T, Hv]``, an optional state
    ``[B, Hv, Dv, Dk]`` (zeros by default) and an optional bool mask ``[B, T]``. Per step t, with
    q and k repeated to Hv heads: ``S = gamma_t * S``; ``S += outer(beta_t * (v_t - S k_t),
    k_t)``; ``y_t = S q_t``. A masked-out step keeps the state and gives ``y_t = 0``.

    A composition of existing ops (one short chain per step), so it runs on both backends and
    differentiates; MLX fuses it into one kernel.
    """
    args = (q, k, v, gamma, beta, initial_state, mask)
    for x in (q, k, v, gamma, beta):
        if not isinstance(x, array):
            raise _incompatible("gated_delta_update", _GDU_SIG, args)
    for x in (initial_state, mask):
        if x is not None and not isinstance(x, array):
            raise _incompatible("gated_delta_update", _GDU_SIG, args)
    from . import elementwise as E, reduce as R, shape as S
    from .creation import repeat, zeros

    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or gamma.ndim < 3 or beta.ndim < 3:
        raise IndexError("[gated_delta_update] q, k and v must be [B, T, H, D] and gamma, beta "
                         f"[B, T, Hv]; got q {fmt_shape(q.shape)}, k {fmt_shape(k.shape)}, v "
                         f"{fmt_shape(v.shape)}, gamma {fmt_shape(gamma.shape)}, beta "
                         f"{fmt_shape(beta.shape)}.")
    b, t, hk, dk = q.shape
    hv, dv = v.shape[2], v.shape[3]
    if k.shape != q.shape or v.shape[:2] != (b, t) or hk == 0 or hv % hk:
        raise ValueError("[gated_delta_update] q and k must share their shape [B, T, Hk, Dk], v "
                         "be [B, T, Hv, Dv] with Hv a multiple of Hk; got q "
                         f"{fmt_shape(q.shape)}, k {fmt_shape(k.shape)}, v {fmt_shape(v.shape)}.")
    s = dev.resolve_stream(stream)
    if hv != hk:
        q = repeat(q, hv // hk, axis=2, stream=s)
        k = repeat(k, hv // hk, axis=2, stream=s)
    state = initial_state
    if state is None:
        dtype = dt.promote_types(dt.promote_types(q.dtype, k.dtype), v.dtype)
        dtype = dt.promote_types(dtype, dt.promote_types(gamma.dtype, beta.dtype))
        state = zeros((b, hv, dv, dk), dtype, stream=s)
    ys = []
    for i in range(t):
        qt, kt, vt = q[:, i], k[:, i], v[:, i]                       # [B, Hv, D]
        g = S.expand_dims(gamma[:, i], (-2, -1), stream=s) if gamma.ndim == 3 else \
            S.expand_dims(gamma[:, i], -2, stream=s)                 # [B, Hv, 1, 1 | Dk]
        old = state
        st = E.multiply(state, g, stream=s)
        k4 = S.expand_dims(kt, -2, stream=s)                         # [B, Hv, 1, Dk]
        kv = R.sum(E.multiply(st, k4, stream=s), axis=-1, stream=s)  # [B, Hv, Dv]
        delta = E.multiply(E.subtract(vt, kv, stream=s),
                           S.expand_dims(beta[:, i], -1, stream=s), stream=s)
        st = E.add(st, E.multiply(k4, S.expand_dims(delta, -1, stream=s), stream=s), stream=s)
        yt = R.sum(E.multiply(st, S.expand_dims(qt, -2, stream=s), stream=s), axis=-1,
                   stream=s)
        if mask is not None:
            m = mask[:, i]
            st = E.where(S.reshape(m, (b, 1, 1, 1), stream=s), st, old, stream=s)
            yt = E.where(S.reshape(m, (b, 1, 1), stream=s), yt, E.multiply(yt, 0, stream=s),
                         stream=s)
        state = st
        ys.append(yt)
    y = S.stack(ys, axis=1, stream=s) if ys else zeros((b, 0, hv, dv), v.dtype, stream=s)
    return [y, state]


def __getattr__(name: str):
    # a missing name reads as in MLX (programs print it): module 'mlx.core.fast', not our module path
    raise AttributeError(f"module 'mlx.core.fast' has no attribute {name!r}")
