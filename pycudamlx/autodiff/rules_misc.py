"""VJP rules of matmul, sort, mx.fast, the distributed collectives, and the primitives with no
gradient (creation, random, search, bit views).

The fused mx.fast ops are differentiated through a reference composition of public ops (the
forward formula of their CPU implementation), recomputed in the backward pass, except RoPE: a
rotation, whose transpose is the same fused op with the angle negated.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import core as mx
from .. import dtypes as dt
from ..core.array import make
from ..graph.primitives import (bitview, creation, distributed as D, fast as F, fft as FFT,
                                matmul as M, quantize as QM, random as RND, shape as SH,
                                sorting as S)
from .custom import NoDerivative
from .registry import register, register_single


def composite(fn: Callable[..., Any]) -> Callable[..., list]:
    """A rule that differentiates ``fn(prim, *inputs)`` (a composition of public ops that
    computes the primitive's output) with respect to the wanted inputs."""
    def rule(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
        from .engine import vjp_flat

        sel = [i for i, w in enumerate(wanted) if w]

        def f(leaves: list) -> list:
            args = list(inputs)
            for i, x in zip(sel, leaves):
                args[i] = x
            r = fn(prim, *args)
            return list(r) if isinstance(r, (list, tuple)) else [r]

        cts2 = [c if c is not None else mx.zeros_like(o) for c, o in zip(cts, outs)]
        _, grads = vjp_flat(f, [inputs[i] for i in sel], cts2)
        result: list[Any] = [None] * len(inputs)
        for i, g in zip(sel, grads):
            result[i] = g
        return result
    rule.__name__ = getattr(fn, "__name__", "composite")
    return rule


@register_single(M.Matmul)
def _matmul(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    if out.dtype is mx.complex64:  # conj(rule(conj(ct))): see rules_elementwise
        return [None if g is None else mx.conjugate(g)
                for g in _matmul_rule(prim, inputs, mx.conjugate(ct), wanted)]
    return _matmul_rule(prim, inputs, ct, wanted)


def _matmul_rule(prim: Any, inputs: tuple, ct: Any, wanted: list) -> list:
    a, b = inputs[0], inputs[1]
    ga = gb = gc = None
    c = ct if prim.alpha == 1.0 else ct * prim.alpha
    if wanted[0]:
        ga = mx.matmul(c, mx.swapaxes(b, -1, -2))
    if wanted[1]:
        if b.ndim == 2 and c.ndim == a.ndim and (a.ndim > 2 or _transposed(b)):
            # A weight shared by every batch entry (x (B, T, K) @ W): one product over the
            # folded batch, K = B*T, instead of B products summed afterwards (B times the
            # output written and read again, and a rounding per entry).
            a2 = mx.reshape(a, (-1, a.shape[-1]))
            c2 = mx.reshape(c, (-1, c.shape[-1]))
            if _transposed(b):
                # b is W.T (nn.Linear): the gradient in W's row-major layout, (c^T a)^T, so
                # that W's gradient (the transpose's VJP undoes the swap) is contiguous and
                # the optimizer's elementwise update reads it in rows, not down columns.
                gb = mx.swapaxes(mx.matmul(mx.swapaxes(c2, 0, 1), a2), 0, 1)
            else:
                gb = mx.matmul(mx.swapaxes(a2, 0, 1), c2)
        else:
            gb = mx.matmul(mx.swapaxes(a, -1, -2), c)
    if len(inputs) > 2 and wanted[2]:
        gc = ct if prim.beta == 1.0 else ct * prim.beta
    return [ga, gb] + ([gc] if len(inputs) > 2 else [])


def _transposed(x: Any) -> bool:
    """Whether the 2-D operand ``x`` is a transpose of another array (``W.T``), pending or
    evaluated during the trace (the tape keeps an evaluated node's primitive)."""
    if x.ndim != 2:
        return False
    prim = x._prim
    if prim is None:
        from ..graph import evaluate

        rec = evaluate.tape.get(id(x)) if evaluate.tape is not None else None
        prim = rec[1] if rec is not None else None
    return type(prim) is SH.View and prim.name == "transpose"


@register_single(S.Sort)
def _sort(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    if prim.indices:
        return [None]
    from .rules_shape import _scatter_along_axis

    x = inputs[0]
    order = make(S.Sort(prim.axis, True, prim.start, prim.kth), (x,), out.shape, dt.uint32,
                 out._stream or x._stream)
    from .custom import stop

    return [_scatter_along_axis(x.shape, prim.axis, stop(order.astype(mx.int32)), ct)]


def _no_grad(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
    return [None] * len(inputs)


register(creation.Full, creation.Arange, creation.Linspace, creation.TriMask, creation.Window,
         S.SearchSorted, S.Unique, bitview.ViewDtype, *(
             getattr(RND, n) for n in dir(RND)
             if isinstance(getattr(RND, n), type) and n[:1].isupper()
             and getattr(getattr(RND, n), "eval_cpu", None) is not None
             and getattr(RND, n).__module__ == RND.__name__))(_no_grad)


# ---- mx.fast -----------------------------------------------------------------------------


def _rms_ref(prim: Any, x: Any, w: Any = None) -> Any:
    xf = x.astype(mx.float32)
    y = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + prim.eps)
    y = y.astype(x.dtype)
    return y * w if prim.has_weight else y


def _ln_ref(prim: Any, x: Any, *params: Any) -> Any:
    xf = x.astype(mx.float32)
    mean = mx.mean(xf, axis=-1, keepdims=True)
    c = xf - mean
    y = c * mx.rsqrt(mx.mean(c * c, axis=-1, keepdims=True) + prim.eps)
    y = y.astype(x.dtype)
    i = 0
    if prim.has_weight:
        y = y * params[i]
        i += 1
    if prim.has_bias:
        y = y + params[i]
    return y


register(F.RMSNorm)(composite(_rms_ref))
register(F.LayerNorm)(composite(_ln_ref))


def _qmv_ref(prim: Any, x: Any, w: Any, scales: Any, biases: Any) -> Any:
    # quantized_matmul's composition (a gradient trace never builds the fused node itself,
    # but a compiled graph recorded outside one may be differentiated later)
    return mx.quantized_matmul(x, w, scales, biases, True, prim.group_size, prim.bits)


def _dequantize_ref(prim: Any, w: Any, scales: Any, biases: Any) -> Any:
    return mx.dequantize(w, scales, biases, prim.group_size, prim.bits)


register(QM.QuantizedMatvec)(composite(_qmv_ref))
register(QM.DequantizeAffine)(composite(_dequantize_ref))


@register_single(F.RoPE)
def _rope(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    inverse = F.RoPE(prim.dims, prim.traditional, prim.base, -prim.scale, prim.off_const,
                     prim.has_offset, prim.has_freqs)
    g = make(inverse, (ct,) + tuple(inputs[1:]), ct.shape, ct.dtype, ct._stream or out._stream)
    return [g] + [None] * (len(inputs) - 1)


def _sdpa_ref(prim: Any, q: Any, k: Any, v: Any, *extra: Any) -> Any:
    i = 0
    mask = sinks = None
    if prim.mask_kind:
        mask = extra[i]
        i += 1
    if prim.has_sinks:
        sinks = extra[i]
    B, Hq, Tq, D = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    rep = Hq // Hkv
    # MLX differentiates its fallback composition, which runs in the input's dtype: in float16
    # and bfloat16 every matmul, the mask and the (precise) softmax round there. That is what
    # a Mac trains with (Metal has no fused attention backward) and what MLX-CUDA runs when
    # cuDNN's backward does not apply; in half precision it also halves the memory traffic
    # and runs the matmuls on half-precision tensor cores instead of TF32 ones.
    work = mx.float64 if q.dtype is mx.float64 else (
        q.dtype if q.dtype in (mx.float16, mx.bfloat16) else mx.float32)
    qf = mx.array(prim.scale, work) * q.astype(work)
    kf, vf = k.astype(work), v.astype(work)
    if rep > 1:
        qf = mx.reshape(qf, (B, Hkv, rep, Tq, D))
        kf = mx.expand_dims(kf, 2)
        vf = mx.expand_dims(vf, 2)
    s = mx.matmul(qf, mx.swapaxes(kf, -1, -2))
    if rep > 1:
        s = mx.reshape(s, (B, Hq, Tq, Tk))
    lowest = mx.array(dt.finfo(q.dtype).min, work)
    if prim.causal:
        rows = mx.expand_dims(mx.arange(Tq), 1) + (Tk - Tq)
        keep = mx.less_equal(mx.expand_dims(mx.arange(Tk), 0), rows)
        s = mx.where(keep, s, lowest)
    if prim.mask_kind == 1:
        s = mx.where(mask, s, lowest)
    elif prim.mask_kind == 2:
        s = s + mask.astype(work)
    if sinks is not None:
        sk = mx.broadcast_to(mx.reshape(sinks.astype(work), (1, Hq, 1, 1)), (B, Hq, Tq, 1))
        s = mx.concatenate([sk, s], axis=-1)
    p = mx.softmax(s, axis=-1, precise=True)
    if sinks is not None:
        p = p[..., 1:]
    if rep > 1:
        p = mx.reshape(p, (B, Hkv, rep, Tq, Tk))
    o = mx.matmul(p, vf)
    if rep > 1:
        o = mx.reshape(o, (B, Hq, Tq, v.shape[-1]))
    return o.astype(q.dtype)


register(F.ScaledDotProductAttention)(composite(_sdpa_ref))


# ---- fft ---------------------------------------------------------------------------------
# MLX's convention (cotangent = dL/dRe + i dL/dIm): a complex transform's cotangent is the
# adjoint transform, i.e. the transform in the other direction with the same scale.
_ADJOINT_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


@register_single(FFT.FFT)
def _fft(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    x = inputs[0]
    s = ct._stream or out._stream
    if not prim.real:
        return [make(FFT.FFT(prim.axes, prim.n, not prim.inverse, False,
                             _ADJOINT_NORM.get(prim.norm, prim.norm)), (ct,),
                     x.shape, mx.complex64, s)]
    last = prim.axes[-1]
    n_last = prim.n[-1]
    total = 1
    for e in prim.n:
        total *= e
    m = (x if prim.inverse else ct).shape[last]
    k = mx.arange(m)
    interior = mx.logical_and(mx.greater(k, 0), mx.less(k, m - 1 + n_last % 2))
    if not prim.inverse:
        # rfft: as MLX, the unscaled inverse real transform of the cotangent with the bins
        # that the Hermitian extension counts twice halved.
        scale = {"ortho": 1.0 / total ** 0.5, "forward": 1.0 / total}.get(prim.norm, 1.0)
        w = mx.reshape(mx.where(interior, 0.5 * scale, scale), (m,) + (1,) * (ct.ndim - last - 1))
        return [make(FFT.FFT(prim.axes, prim.n, True, True, "forward"), (ct * w,), x.shape,
                     mx.float32, s)]
    # irfft: each bin but DC (and Nyquist, for even n) is used twice by the Hermitian extension.
    scale = {"backward": 1.0 / total, "ortho": 1.0 / total ** 0.5}.get(prim.norm, 1.0)
    g = make(FFT.FFT(prim.axes, prim.n, False, True, "backward"), (ct,), x.shape,
             mx.complex64, s)
    w = mx.where(interior, 2.0 * scale, scale)
    w = mx.reshape(w, (m,) + (1,) * (x.ndim - last - 1))
    return [g * w]


@register(SH.Depends)
def _depends(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
    """The outputs are the first inputs; the dependencies get no gradient."""
    return list(cts[:prim.n_out]) + [None] * (len(inputs) - prim.n_out)


@register(NoDerivative)
def _no_derivative(prim: Any, inputs: tuple, outs: list, cts: list, wanted: list) -> list:
    """The result passes through; asking for a derivative of a blocked operand is MLX's error."""
    from .engine import jvp_mode

    for i, exc, message in (prim.jvp_blocked if jvp_mode() else prim.vjp_blocked):
        if wanted[1 + i]:
            raise exc(message)
    return [cts[0]] + [None] * (len(inputs) - 1)


# ---- mx.distributed ----------------------------------------------------------------------
# MLX's rules: the vjp of all_sum/all_max/all_min is the cotangent itself and that of
# all_gather this rank's block of it; their jvps reduce (gather) the tangents. A jvp here is the
# transpose of a vjp, so its first pass builds nodes whose own vjp is the reduction (gather).


@register_single(D.AllReduce)
def _all_reduce(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    from .engine import jvp_mode

    if not (jvp_mode() or prim.jvp_transposed):
        return [ct]
    return [make(D.AllReduce(prim.comm, prim.op, True), (ct,), ct.shape, ct.dtype, out._stream)]


@register_single(D.AllGather)
def _all_gather(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    from .engine import jvp_mode

    x = inputs[0]
    if jvp_mode():
        return [make(D.RankShard(prim.comm, x.ndim == 0), (ct,), x.shape, ct.dtype, out._stream)]
    rank = prim.comm.rank()
    if x.ndim == 0:
        return [ct[rank]]
    n = x.shape[0]
    return [ct[rank * n:(rank + 1) * n]]


@register_single(D.RankShard)
def _rank_shard(prim: Any, inputs: tuple, out: Any, ct: Any, wanted: list) -> list:
    return [make(D.AllGather(prim.comm), (ct,), inputs[0].shape, ct.dtype, out._stream)]
