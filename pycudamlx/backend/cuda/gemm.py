"""The GEMM launcher: ``out = alpha * (a @ b) + beta * c`` on the GPU, batched.

``a`` is a GpuArray (..., M, K), ``b`` (..., K, N), ``c`` None or already of the output shape
(a broadcast view). Batch dimensions broadcast as stride-0 views and collapse where the three
operands allow; what stays beyond one batch dimension is looped here (rare: broadcasts like
(2, 1) x (1, 5)). Per batch run:

- cuBLAS (``cublas.py``) when it is installed and the dtype is a floating one: the row-major
  product is cuBLAS's column-major ``C^T = B^T A^T``; a plain or transposed view is passed with
  its leading dimension (no copy); any other layout is copied to contiguous first.
- a product of at most GEMV_MAX_ROWS rows by a transposed weight (``x @ W.T``, nn.Linear in a
  decode step) of float16/bfloat16/float32 in 16-byte aligned rows: ``kernels/gemv.cu``, one
  launch (cuBLAS's host time per call is several launches', and decode is bound by the host).
- otherwise the NVRTC GEMM (``kernels/gemm.cu``), which reads any strided view in place:
  tensor cores (mma.sync) for float16/bfloat16 and TF32 float32 on sm_80+, a tiled FMA kernel
  for the rest (float64, complex64, integers, sm_70, float32 with TF32 off).

Launch plans (what depends only on shapes, strides, dtype and the path) are cached.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from ... import dtypes as dt
from . import array as gpu_array, compiler, cublas, elementwise, registry
from .elementwise import _ptr, _record_write, collapse
from .launch import k_slices
from .stream import CudaStream

log = logging.getLogger(__name__)

#: Integer dtypes computed by the same-width signed kernel (wrapping arithmetic: same bits).
_ALIAS = {"uint32": "int32", "uint64": "int64"}
_MAX_GRID_YZ = 65535
#: The GEMM kernels' output tile edge (gemm.cu GEMM_BM = GEMM_BN).
TILE = 64
_INT32_MAX = 2**31 - 1

#: Tests set this to run the FMA kernel where the tensor-core one would be picked.
FORCE_FMA = False
#: Tests clear this to keep few-row products on the path they test (cuBLAS, the NVRTC GEMM).
GEMV = True
#: gemv.cu's MAX_ROWS: products with more rows of x go to cuBLAS or the NVRTC GEMM.
GEMV_MAX_ROWS = 8
_GEMV_WARPS = 8
#: Two output columns per warp from this width on (each lane's x values serve both; as qmv.cu).
_GEMV_TWO_COLUMNS_FROM = 2048

_plans: dict[tuple, tuple] = {}
_gemv_plans: dict[tuple, Any] = {}
_kernels: dict[tuple, tuple] = {}
_MAX_PLANS = 4096


def use_cublas(dtype: dt.Dtype) -> bool:
    """Whether a GEMM of ``dtype`` goes to cuBLAS now."""
    return dtype.name in cublas.DTYPES and cublas.available()


def _batch_strides(xshape: tuple[int, ...], xstrides: tuple[int, ...], batch: tuple[int, ...]
                   ) -> tuple[int, ...]:
    """An operand's strides over the output's batch dimensions (0 where it broadcasts)."""
    nb = len(xshape) - 2
    lead = len(batch) - nb
    out = [0] * lead
    for e, s, t in zip(xshape[:nb], xstrides[:nb], batch[lead:]):
        out.append(0 if (e == 1 and t != 1) else s)
    return tuple(out)


def _layout(rows: int, cols: int, srow: int, scol: int) -> tuple[int, int] | None:
    """(cuBLAS-side op, leading dimension) for a (rows, cols) view read in place: OP_N for a
    row-major one, OP_T for a column-major one; None when it must be copied."""
    if cols == 1 or scol == 1:
        ld = srow if rows > 1 else cols
        if ld >= max(1, cols):
            return cublas.OP_N, ld
    if rows == 1 or srow == 1:
        ld = scol if cols > 1 else rows
        if ld >= max(1, rows):
            return cublas.OP_T, ld
    return None


def _broadcast(x: Any, shape: tuple[int, ...]) -> Any:
    """A stride-0 view of ``x`` broadcast to ``shape`` (numpy's rules; ``x`` itself if equal)."""
    if tuple(x.shape) == shape:
        return x
    lead = len(shape) - len(x.shape)
    strides = [0] * lead + [0 if e == 1 and t != 1 else s
                            for e, t, s in zip(x.shape, shape[lead:], x.strides)]
    return x.view(x.offset, shape, tuple(strides))


def _contiguous(x: Any, stream: CudaStream) -> Any:
    out = gpu_array.empty(x.shape, x.dtype, stream)
    elementwise.copy(x, out, stream)
    out.buffer.last_use = stream  # a temporary: freed in stream order, after the GEMM
    return out


def matmul(a: Any, b: Any, c: Any | None, shape: tuple[int, ...], dtype: dt.Dtype,
           alpha: float, beta: float, stream: CudaStream) -> Any:
    """A new contiguous array ``alpha * (a @ b) + beta * c`` of ``shape``."""
    out = gpu_array.empty(shape, dtype, stream)
    if c is not None and beta != 0.0:
        # cuBLAS's beta reads C in place; c may broadcast (vmap batches a and b but not c)
        elementwise.copy(_broadcast(c, tuple(shape)), out, stream)
    else:
        beta = 0.0
    run(a, b, out, alpha, beta, stream)
    return out


def run(a: Any, b: Any, out: Any, alpha: float, beta: float, stream: CudaStream,
        force_fallback: bool = False, force_fma: bool = False) -> None:
    """out = alpha * a @ b + beta * out, over out's batch (a and b broadcast to it).
    ``force_fallback`` skips cuBLAS, ``force_fma`` the tensor-core kernel (tests)."""
    shape = out.shape
    m, n = shape[-2], shape[-1]
    k = a.shape[-1]
    if k == 0:  # the op functions never send this; keep the contract anyway
        if beta == 0.0 and out.size:
            elementwise.fill(out, bytes(out.dtype.size), stream)
        return
    if (m <= GEMV_MAX_ROWS and alpha == 1.0 and beta == 0.0 and GEMV and not force_fallback
            and _gemv(a, b, out, stream)):
        return
    cub = not force_fallback and use_cublas(out.dtype) and max(m, n, k) <= _INT32_MAX
    key = (a.shape, a.strides, b.shape, b.strides, shape, out.strides, cub)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= _MAX_PLANS:
            _plans.clear()
        plan = _plans[key] = _plan(a.shape, a.strides, b.shape, b.strides, shape, out.strides,
                                   cub)
    copy_a, copy_b, chunks, sa, sb, inner = plan
    if inner == 0:
        return  # an empty output
    if copy_a:
        a = _contiguous(a, stream)
    if copy_b:
        b = _contiguous(b, stream)
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(out)
    isz = out.dtype.size
    for oa, ob, oc in chunks:
        if cub:
            _cublas_call(a, b, out.dtype, pa + oa * isz, pb + ob * isz, pc + oc * isz, m, n, k,
                         sa, sb, inner, alpha, beta, stream)
        else:
            _fallback_call(a, b, out.dtype, pa + oa * isz, pb + ob * isz, pc + oc * isz, m, n,
                           k, sa, sb, inner, alpha, beta, stream, force_fma)
    _record_write(out, stream)


def _gemv(a: Any, b: Any, out: Any, stream: CudaStream) -> bool:
    """out = a @ b through gemv.cu where it applies (see _gemv_plan); False where it does not."""
    key = (a.shape, a.strides, b.shape, b.strides, out.strides, out.dtype, stream.device.index)
    plan = _gemv_plans.get(key)
    if plan is None:
        if len(_gemv_plans) >= _MAX_PLANS:
            _gemv_plans.clear()
        plan = _gemv_plans[key] = _gemv_plan(a.shape, a.strides, b.shape, b.strides, out.shape,
                                             out.strides, out.dtype, stream)
    if plan is False:
        return False
    pa, pb = _ptr(a), _ptr(b)
    if (pa | pb) & 15:  # the kernel reads both 16 bytes at a time
        return False
    kernel, grid, m, n, k, ldx, ldw, ksplit = plan
    kernel(grid, 32 * _GEMV_WARPS, stream, pa, pb, _ptr(out), m, n, k, ldx, ldw, ksplit)
    _record_write(out, stream)
    return True


def _gemv_plan(a_shape: tuple[int, ...], a_strides: tuple[int, ...], b_shape: tuple[int, ...],
               b_strides: tuple[int, ...], shape: tuple[int, ...], out_strides: tuple[int, ...],
               dtype: dt.Dtype, stream: CudaStream) -> Any:
    """(kernel, grid, m, n, k, ldx, ldw, ksplit) when gemv.cu computes this product, else
    False: a float16/bfloat16/float32 product with no batch (all batch extents 1) into a contiguous
    output, at most GEMV_MAX_ROWS rows of ``a`` with unit column stride, ``b`` the transpose of
    a row-major (N, K) weight, K and both row strides whole 16-byte vectors."""
    if dtype.name not in registry.GEMV_DTYPES:
        return False
    if tuple(out_strides) != gpu_array.contiguous_strides(tuple(shape)):
        return False
    m, n, k = shape[-2], shape[-1], a_shape[-1]
    if m * n * k == 0 or m > GEMV_MAX_ROWS:
        return False
    for e in shape[:-2]:
        if e != 1:
            return False
    vn = 16 // dtype.size
    ldx = a_strides[-2] if m > 1 else k
    ldw = b_strides[-1] if n > 1 else k
    if (a_strides[-1] != 1 or b_strides[-2] != 1 or k % vn or ldx % vn or ldw % vn
            or ldx < k or ldw < k):
        return False
    columns = 2 if n >= _GEMV_TWO_COLUMNS_FROM else 1
    mod = compiler.module_for(registry.gemv_module, (dtype.name,), stream.device)
    warps = -(-n // columns)
    ksplit = k_slices(warps, k // vn, stream.device.properties.multiprocessors, _GEMV_WARPS)
    return (mod[registry.gemv_expression(dtype.name, columns)],
            -(-warps // (_GEMV_WARPS // ksplit)), m, n, k, ldx, ldw, ksplit)


def _plan(a_shape: tuple[int, ...], a_strides: tuple[int, ...], b_shape: tuple[int, ...],
          b_strides: tuple[int, ...], shape: tuple[int, ...], out_strides: tuple[int, ...],
          cub: bool) -> tuple:
    """What a GEMM of these layouts does, decided once: (copy a, copy b, per-launch element
    offsets of a, b and out, a's and b's batch strides, batch entries per launch)."""
    batch = shape[:-2]
    m, n = shape[-2], shape[-1]
    k = a_shape[-1]
    if m * n == 0 or any(e == 0 for e in batch):
        return False, False, (), 0, 0, 0
    copy_a = copy_b = False
    if cub:  # cuBLAS reads plain and transposed matrices in place; others are copied once
        if _layout(m, k, a_strides[-2], a_strides[-1]) is None:
            copy_a, a_strides = True, gpu_array.contiguous_strides(a_shape)
        if _layout(k, n, b_strides[-2], b_strides[-1]) is None:
            copy_b, b_strides = True, gpu_array.contiguous_strides(b_shape)
    sa = _batch_strides(a_shape, a_strides, batch)
    sb = _batch_strides(b_shape, b_strides, batch)
    bshape, (bsa, bsb, bsc) = collapse(batch, (sa, sb, out_strides[:-2]))
    if not bshape:
        bshape, bsa, bsb, bsc = [1], [0], [0], [m * n]
    chunks = []
    for idx in _outer_indices(bshape[:-1]):
        chunks.append((sum(i * s for i, s in zip(idx, bsa[:-1])),
                       sum(i * s for i, s in zip(idx, bsb[:-1])),
                       sum(i * s for i, s in zip(idx, bsc[:-1]))))
    return copy_a, copy_b, tuple(chunks), bsa[-1], bsb[-1], bshape[-1]


def _outer_indices(outer: Sequence[int]) -> Any:
    if not outer:
        yield ()
        return
    total = 1
    for e in outer:
        total *= e
    for flat in range(total):
        idx = []
        for e in reversed(outer):
            flat, r = divmod(flat, e)
            idx.append(r)
        yield tuple(reversed(idx))


def _cublas_call(a: Any, b: Any, dtype: dt.Dtype, pa: int, pb: int, pc: int, m: int, n: int,
                 k: int, sa: int, sb: int, batch: int, alpha: float, beta: float,
                 stream: CudaStream) -> None:
    op_a, lda = _layout(m, k, a.strides[-2], a.strides[-1])  # type: ignore[misc]
    op_b, ldb = _layout(k, n, b.strides[-2], b.strides[-1])  # type: ignore[misc]
    isz = dtype.size
    # Row-major C (M, N) is column-major C^T (N, M) = B^T (N, K) A^T (K, M): cuBLAS's first
    # operand is b's memory, its second a's; a row-major view is already the transpose.
    for start in range(0, batch, _MAX_GRID_YZ):
        count = min(_MAX_GRID_YZ, batch - start)
        cublas.gemm_strided_batched(
            stream, dtype.name, op_b, op_a, n, m, k, alpha,
            pb + start * sb * isz, ldb, sb, pa + start * sa * isz, lda, sa, beta,
            pc + start * m * n * isz, n, m * n, count)


def _tensor_core_module(name: str, device: Any) -> Any | None:
    """The tensor-core GEMM built for this device (sm_80+; from the kernel cache or NVRTC, never
    from the compute_70 shipped PTX), or None where it cannot be had: the FMA kernel runs."""
    try:
        return compiler.module_for(registry.gemm_mma_module, (name,), device)
    except (compiler.KernelUnavailableError, compiler.KernelCompileError) as exc:
        log.info("tensor-core GEMM for %s unavailable (%s); using the FMA kernel", name, exc)
        return None


def _fallback_kernel(dtype: dt.Dtype, stream: CudaStream, force_fma: bool = False) -> Any:
    name = _ALIAS.get(dtype.name, dtype.name)
    device = stream.device
    force_fma = force_fma or FORCE_FMA
    tf32 = name == "float32" and cublas.tf32_enabled()
    key = (name, device.index, force_fma, tf32)
    plan = _kernels.get(key)
    if plan is None:
        mod = None
        if (not force_fma and name in ("float16", "bfloat16", "float32")
                and (name != "float32" or tf32)
                and device.properties.compute_capability >= (8, 0)):
            mod = _tensor_core_module(name, device)
        if mod is not None:
            plan = (mod.kernel_list[0], 128)
        else:
            mod = compiler.module_for(registry.gemm_module, (name,), device)
            plan = (mod.kernel_list[0], 256)
        _kernels[key] = plan
    return plan


def _fallback_call(a: Any, b: Any, dtype: dt.Dtype, pa: int, pb: int, pc: int, m: int, n: int,
                   k: int, sa: int, sb: int, batch: int, alpha: float, beta: float,
                   stream: CudaStream, force_fma: bool = False) -> None:
    kernel, threads = _fallback_kernel(dtype, stream, force_fma)
    gx = (n + TILE - 1) // TILE
    gy = min((m + TILE - 1) // TILE, _MAX_GRID_YZ)
    gz = min(batch, _MAX_GRID_YZ)
    kernel((gx, gy, gz), threads, stream, pa, pb, pc, m, n, k, a.strides[-2], a.strides[-1],
           b.strides[-2], b.strides[-1], sa, sb, batch, float(alpha), float(beta))
