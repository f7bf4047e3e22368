"""NVRTC, the runtime CUDA C++ compiler, behind one small interface.

Two implementations share it: ``BindingsNvrtc`` uses ``cuda.bindings.nvrtc`` (the library the
installed cuda-bindings loads: NVRTC 12 or 13), and ``CtypesNvrtc`` loads a ``libnvrtc.so`` from a
directory it is pointed at. The second exists for ``pycudamlx ptx build``, which must emit PTX with
NVRTC 12.0 (PTX ISA 8.0, loadable by every CUDA 12 and 13 driver) while a newer NVRTC is installed.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
from dataclasses import dataclass
from typing import Any, Sequence

from ... import _env

log = logging.getLogger(__name__)


class NvrtcUnavailableError(RuntimeError):
    """NVRTC is not installed, or disabled with PYCUDAMLX_DISABLE_NVRTC=1."""


class KernelCompileError(RuntimeError):
    """NVRTC rejected a kernel source; the message carries NVRTC's log."""

    def __init__(self, module: str, log_text: str, options: Sequence[str]) -> None:
        super().__init__(f"NVRTC failed to compile kernel module {module!r} "
                         f"(options: {' '.join(options)}):\n{log_text.strip()}")
        self.module = module
        self.log = log_text
        self.options = tuple(options)


@dataclass(frozen=True)
class CompileResult:
    image: bytes                 # CUBIN or NUL-terminated PTX
    kind: str                    # "cubin" or "ptx"
    lowered: dict[str, str]      # name expression -> mangled symbol
    log: str


class Nvrtc:
    """The operations the compiler needs from NVRTC."""

    version: tuple[int, int]

    def supported_archs(self) -> list[int]:
        raise NotImplementedError

    def compile(self, name: str, source: str, name_expressions: Sequence[str],
                options: Sequence[str], want_cubin: bool) -> CompileResult:
        raise NotImplementedError

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


class BindingsNvrtc(Nvrtc):
    """NVRTC through cuda.bindings.nvrtc."""

    def __init__(self) -> None:
        try:
            from cuda.bindings import nvrtc as nv
        except ImportError as exc:
            raise NvrtcUnavailableError(f"cuda-bindings is not installed: {exc}") from None
        try:
            result, major, minor = nv.nvrtcVersion()
        except Exception as exc:  # cuda.pathfinder: libnvrtc not found
            raise NvrtcUnavailableError(
                "NVRTC (libnvrtc) was not found: install the nvidia-cuda-nvrtc wheel "
                "(pip install 'pycudamlx[cu13]', or [cu12] for drivers older than 580)"
            ) from exc
        self._nv = nv
        self.version = (int(major), int(minor))

    def _check(self, result: Any, what: str) -> None:
        if int(result) != 0:
            _, msg = self._nv.nvrtcGetErrorString(result)
            raise RuntimeError(f"{what} failed: {msg.decode() if msg else int(result)}")

    def supported_archs(self) -> list[int]:
        result, archs = self._nv.nvrtcGetSupportedArchs()
        self._check(result, "nvrtcGetSupportedArchs")
        return [int(a) for a in archs]

    def compile(self, name: str, source: str, name_expressions: Sequence[str],
                options: Sequence[str], want_cubin: bool) -> CompileResult:
        nv = self._nv
        result, prog = nv.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
        self._check(result, "nvrtcCreateProgram")
        try:
            for expr in name_expressions:
                self._check(nv.nvrtcAddNameExpression(prog, expr.encode())[0],
                            "nvrtcAddNameExpression")
            opts = [o.encode() for o in options]
            (compile_result,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
            result, log_size = nv.nvrtcGetProgramLogSize(prog)
            # NVRTC writes into these buffers: they must be bytearrays. A bytes object would be
            # mutated in place, and b" " * 1 is CPython's shared one-byte b" " (an empty log is
            # one NUL), which turned every later print() separator into "\x00".
            log_buf = bytearray(log_size)
            nv.nvrtcGetProgramLog(prog, log_buf)
            log_text = bytes(log_buf).rstrip(b"\0 ").decode(errors="replace")
            if int(compile_result) != 0:
                raise KernelCompileError(name, log_text, options)
            if want_cubin:
                result, size = nv.nvrtcGetCUBINSize(prog)
                self._check(result, "nvrtcGetCUBINSize")
                image = bytearray(size)
                self._check(nv.nvrtcGetCUBIN(prog, image)[0], "nvrtcGetCUBIN")
            else:
                result, size = nv.nvrtcGetPTXSize(prog)
                self._check(result, "nvrtcGetPTXSize")
                image = bytearray(size)
                self._check(nv.nvrtcGetPTX(prog, image)[0], "nvrtcGetPTX")
            lowered = {}
            for expr in name_expressions:
                result, mangled = nv.nvrtcGetLoweredName(prog, expr.encode())
                self._check(result, "nvrtcGetLoweredName")
                lowered[expr] = mangled.decode()
            return CompileResult(bytes(image), "cubin" if want_cubin else "ptx", lowered,
                                 log_text)
        finally:
            nv.nvrtcDestroyProgram(prog)


class CtypesNvrtc(Nvrtc):
    """NVRTC from a ``libnvrtc.so*`` in a given directory (or a path to the library itself)."""

    def __init__(self, location: str) -> None:
        path = location
        if os.path.isdir(location):
            candidates = sorted(glob.glob(os.path.join(location, "**", "libnvrtc.so*"),
                                          recursive=True))
            candidates = [c for c in candidates if "builtins" not in os.path.basename(c)]
            if not candidates:
                raise NvrtcUnavailableError(f"no libnvrtc.so* under {location}")
            path = candidates[0]
        # NVRTC dlopens libnvrtc-builtins from its own directory or the loader path.
        builtins = glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*"))
        for b in builtins:
            ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            raise NvrtcUnavailableError(f"cannot load {path}: {exc}") from None
        self._lib = lib
        self.path = path
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p

    def _check(self, result: int, what: str) -> None:
        if result != 0:
            msg = self._lib.nvrtcGetErrorString(result)
            raise RuntimeError(f"{what} failed: {msg.decode() if msg else result}")

    def supported_archs(self) -> list[int]:
        lib = self._lib
        n = ctypes.c_int()
        if not hasattr(lib, "nvrtcGetNumSupportedArchs"):
            return []
        self._check(lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * n.value)()
        self._check(lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        return list(archs)

    def compile(self, name: str, source: str, name_expressions: Sequence[str],
                options: Sequence[str], want_cubin: bool) -> CompileResult:
        lib = self._lib
        prog = ctypes.c_void_p()
        self._check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(),
                                           f"{name}.cu".encode(), 0, None, None),
                    "nvrtcCreateProgram")
        try:
            for expr in name_expressions:
                self._check(lib.nvrtcAddNameExpression(prog, expr.encode()),
                            "nvrtcAddNameExpression")
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            compile_result = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log_buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log_buf)
            log_text = log_buf.value.decode(errors="replace")
            if compile_result != 0:
                raise KernelCompileError(name, log_text, options)
            get_size, get = ((lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if want_cubin else
                             (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX))
            self._check(get_size(prog, ctypes.byref(size)), "nvrtcGet*Size")
            image = ctypes.create_string_buffer(size.value)
            self._check(get(prog, image), "nvrtcGet image")
            lowered = {}
            for expr in name_expressions:
                mangled = ctypes.c_char_p()
                self._check(lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(mangled)),
                            "nvrtcGetLoweredName")
                lowered[expr] = mangled.value.decode()
            return CompileResult(image.raw, "cubin" if want_cubin else "ptx", lowered, log_text)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


@functools.lru_cache(maxsize=1)
def _bindings_nvrtc() -> BindingsNvrtc:
    return BindingsNvrtc()


def get_nvrtc() -> Nvrtc:
    """The NVRTC the runtime uses; NvrtcUnavailableError when missing or disabled."""
    if _env.DISABLE_NVRTC:
        raise NvrtcUnavailableError("NVRTC is disabled by PYCUDAMLX_DISABLE_NVRTC")
    return _bindings_nvrtc()


def nvrtc_version_or_none() -> str | None:
    """NVRTC's version as "major.minor", or None when it is missing (ignores the disable switch)."""
    try:
        return _bindings_nvrtc().version_string
    except NvrtcUnavailableError:
        return None


@functools.lru_cache(maxsize=1)
def cuda_include_dir() -> str | None:
    """The directory holding cuda_fp16.h and cuda_bf16.h (NVIDIA's runtime wheel), if any."""
    try:
        import cuda.pathfinder as pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
    except Exception as exc:
        log.debug("cuda.pathfinder found no cudart headers: %s", exc)
        found = None
    if found and os.path.exists(os.path.join(found, "cuda_fp16.h")):
        return found
    for candidate in ("/usr/local/cuda/include",):
        if os.path.exists(os.path.join(candidate, "cuda_fp16.h")):
            return candidate
    return None
