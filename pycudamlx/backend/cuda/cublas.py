"""cuBLAS through ctypes: the GEMM behind matmul, from NVIDIA's wheel.

The library is found with ``cuda.pathfinder`` (``nvidia-cublas-cu12`` for the cu12 extra,
``nvidia-cublas`` for cu13), so nothing is compiled and no toolkit is needed. One handle per
device (created lazily in the device's primary context, which our driver layer uses too), the
stream set on each call where it changed, and a workspace per (device, stream) from our memory
pool, so two streams never share scratch memory. ``cublasGemmStridedBatchedEx`` covers every
dtype we send (float16/bfloat16 with float32 accumulation, float32 with or without TF32,
float64, complex64), batches by strides (stride 0 broadcasts an operand), and reads transposed
views in place (``CUBLAS_OP_T`` with the view's leading dimension).

Switches: ``PYCUDAMLX_DISABLE_CUBLAS=1`` makes ``available()`` False (the NVRTC GEMM takes over);
``MLX_ENABLE_TF32=0`` or ``PYCUDAMLX_ENABLE_TF32=0`` turns TF32 off for float32, as in MLX.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

from ... import _env
from .vendor import VendorLibrary, env_switch_on

log = logging.getLogger(__name__)

# cublasOperation_t
OP_N, OP_T = 0, 1
# cudaDataType
R_16F, R_32F, R_64F, C_32F, R_16BF = 2, 0, 1, 4, 14
# cublasComputeType_t
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_64F = 68, 77, 70
GEMM_DEFAULT = -1

#: dtype name -> (cudaDataType, compute type without TF32, scalar kind)
DTYPES: dict[str, tuple[int, int, str]] = {
    "float16": (R_16F, COMPUTE_32F, "f"),
    "bfloat16": (R_16BF, COMPUTE_32F, "f"),
    "float32": (R_32F, COMPUTE_32F, "f"),
    "float64": (R_64F, COMPUTE_64F, "d"),
    "complex64": (C_32F, COMPUTE_32F, "c"),
}

#: Workspace per (device, stream): what torch gives cuBLAS on Hopper (32 MiB).
WORKSPACE_BYTES = 32 << 20

_STATUS = {0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED",
           3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
           8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
           13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
           15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}


class CublasError(RuntimeError):
    """A cuBLAS call failed; the message names the call and the status."""


def tf32_enabled() -> bool:
    """TF32 for float32 GEMMs: on by default as in MLX; off with MLX_ENABLE_TF32=0 or
    PYCUDAMLX_ENABLE_TF32=0 (read per call, so a test or a script may flip it)."""
    return _env.flag("MLX_ENABLE_TF32") and _env.flag("PYCUDAMLX_ENABLE_TF32")


def disabled() -> bool:
    return env_switch_on("PYCUDAMLX_DISABLE_CUBLAS")


def _bind(lib: Any) -> None:
    c_int, c_ll, vp = ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
    lib.cublasDestroy_v2.argtypes = [vp]
    lib.cublasSetStream_v2.argtypes = [vp, vp]
    lib.cublasSetWorkspace_v2.argtypes = [vp, vp, ctypes.c_size_t]
    lib.cublasGetProperty.argtypes = [c_int, ctypes.POINTER(c_int)]
    lib.cublasGemmStridedBatchedEx.argtypes = [
        vp, c_int, c_int, c_int, c_int, c_int, vp,
        vp, c_int, c_int, c_ll,
        vp, c_int, c_int, c_ll,
        vp, vp, c_int, c_int, c_ll,
        c_int, c_int, c_int]
    lib.cublasGemmEx.argtypes = [
        vp, c_int, c_int, c_int, c_int, c_int, vp,
        vp, c_int, c_int,
        vp, c_int, c_int,
        vp, vp, c_int, c_int,
        c_int, c_int]
    for fn in ("cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2",
               "cublasSetWorkspace_v2", "cublasGetProperty", "cublasGemmStridedBatchedEx",
               "cublasGemmEx"):
        getattr(lib, fn).restype = c_int


_library = VendorLibrary("cublas", _bind, "matmul uses the NVRTC GEMM")


def library() -> Any:
    """The loaded libcublas (a ctypes.CDLL), or None when it is missing or disabled."""
    return _library.load()


def available() -> bool:
    """Whether GEMMs go to cuBLAS (installed, loadable, and not disabled)."""
    return not disabled() and library() is not None


def load_error() -> str | None:
    library()
    return _library.error


def version() -> str | None:
    """cuBLAS's version as 'major.minor.patch' (no GPU needed), or None without cuBLAS."""
    lib = library()
    if lib is None:
        return None
    parts = []
    for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        v = ctypes.c_int()
        if lib.cublasGetProperty(prop, ctypes.byref(v)):
            return None
        parts.append(str(v.value))
    return ".".join(parts)


def _check(status: int, call: str) -> None:
    if status:
        raise CublasError(f"{call} failed: {_STATUS.get(status, status)}")


class _Handle:
    __slots__ = ("ptr", "stream", "lock", "alpha", "beta", "workspaces")

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.stream: int | None = None
        self.lock = threading.Lock()
        # Host scalars for alpha and beta, one per kind, reused by every call (under the lock).
        self.alpha = {"f": ctypes.c_float(), "d": ctypes.c_double(), "c": (ctypes.c_float * 2)()}
        self.beta = {"f": ctypes.c_float(), "d": ctypes.c_double(), "c": (ctypes.c_float * 2)()}
        self.workspaces: dict[int, Any] = {}


_handles: dict[int, _Handle] = {}
_handles_lock = threading.Lock()


def _handle(device: Any) -> _Handle:
    h = _handles.get(device.index)
    if h is None:
        with _handles_lock:
            h = _handles.get(device.index)
            if h is None:
                device.activate()
                ptr = ctypes.c_void_p()
                _check(library().cublasCreate_v2(ctypes.byref(ptr)), "cublasCreate")
                h = _handles[device.index] = _Handle(ptr.value)
    return h


def _workspace(h: _Handle, stream: Any) -> int:
    """A WORKSPACE_BYTES device buffer for this stream, kept for the stream's life in cuBLAS."""
    key = int(stream.handle)
    buf = h.workspaces.get(key)
    if buf is None:
        from . import memory

        memory.refuse_in_capture("cuBLAS's first call on a stream (its workspace)")
        buf = memory.allocate(WORKSPACE_BYTES, stream.device, memory.DEVICE, stream)
        h.workspaces[key] = buf
    return buf.ptr


def _set(store: Any, kind: str, value: float) -> int:
    if kind == "c":
        store[0] = value
        store[1] = 0.0
    else:
        store.value = value
    return ctypes.addressof(store)


def gemm_strided_batched(stream: Any, dtype_name: str, trans_a: int, trans_b: int, m: int,
                         n: int, k: int, alpha: float, a: int, lda: int, stride_a: int, b: int,
                         ldb: int, stride_b: int, beta: float, c: int, ldc: int, stride_c: int,
                         batch: int) -> None:
    """Column-major C = alpha * op(A) op(B) + beta * C, ``batch`` times (cuBLAS's own terms:
    the caller does the row-major transpose trick)."""
    lib = _library.lib
    data_type, compute, kind = DTYPES[dtype_name]
    if dtype_name == "float32" and tf32_enabled():
        compute = COMPUTE_32F_FAST_TF32
    h = _handle(stream.device)
    with h.lock:
        sh = int(stream.handle)
        if h.stream != sh:
            _check(lib.cublasSetStream_v2(h.ptr, sh), "cublasSetStream")
            # SetStream resets the workspace to cuBLAS's default pool: give it this stream's.
            _check(lib.cublasSetWorkspace_v2(h.ptr, _workspace(h, stream), WORKSPACE_BYTES),
                   "cublasSetWorkspace")
            h.stream = sh
        pa = _set(h.alpha[kind], kind, alpha)
        pb = _set(h.beta[kind], kind, beta)
        if batch == 1:  # plain GEMM: the entry point torch's mm takes, same heuristics
            _check(lib.cublasGemmEx(
                h.ptr, trans_a, trans_b, m, n, k, pa, a, data_type, lda, b, data_type, ldb,
                pb, c, data_type, ldc, compute, GEMM_DEFAULT), "cublasGemmEx")
            return
        _check(lib.cublasGemmStridedBatchedEx(
            h.ptr, trans_a, trans_b, m, n, k, pa,
            a, data_type, lda, stride_a,
            b, data_type, ldb, stride_b,
            pb, c, data_type, ldc, stride_c,
            batch, compute, GEMM_DEFAULT), "cublasGemmStridedBatchedEx")
