"""``mx.fast.cuda_kernel``: a user's CUDA kernel body, wrapped and compiled as MLX does.

MLX generates ``__global__ void custom_kernel_<name><template hash>(...)`` whose parameters are,
for each input, ``const T* name`` followed by ``name_shape`` (Shape), ``name_strides``
(Strides) and ``name_ndim`` (int) when the source mentions them (and the input is not 0-d),
then ``T* name`` for each output; template arguments become ``constexpr int``/``constexpr
bool`` constants or ``using`` type aliases at the top of the body. ``grid`` counts threads (the
launch uses ceil(grid / threadgroup) blocks), as with Metal. We generate the same, compile it
with NVRTC (backend/cuda/custom.py: disk cache included) and launch it on the op's stream.
"""

from __future__ import annotations

import struct
import sys
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.primitive import OutSpec, Primitive
from . import device as dev
from ._base import as_array
from .array import array, make_multi
from .shape import shape_arg

#: Shape / Strides hold this many entries (MLX's MAX_NDIM).
MAX_NDIM = 10

CUDA_TYPES: dict[str, str] = {
    "bool": "bool", "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t",
    "uint64": "uint64_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float",
    "float64": "double", "complex64": "complex64_t",
}

_PRELUDE_HEADERS = """\
#include <cuda_fp16.h>
#include <cuda_bf16.h>
"""

# Without NVIDIA's runtime headers: 16-bit floats as storage-only types (kernels that only move
# them compile; arithmetic on them needs cuda_fp16.h / cuda_bf16.h, from nvidia-cuda-runtime).
_PRELUDE_NO_HEADERS = """\
struct __align__(2) __half { unsigned short __x; };
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
"""

_PRELUDE_CG = """\
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
"""

# Without CCCL's headers cooperative_groups.h does not compile under NVRTC: this subset covers
# what element-wise kernels use (this_grid / this_thread_block, ranks, sizes, sync of a block).
_PRELUDE_CG_SUBSET = """\
namespace cooperative_groups {
struct grid_group {
  __device__ unsigned long long block_rank() const {
    return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
  }
  __device__ unsigned long long num_threads() const {
    return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z;
  }
  __device__ unsigned long long size() const { return num_threads(); }
  __device__ unsigned long long thread_rank() const {
    return block_rank() * (blockDim.x * blockDim.y * blockDim.z) +
           threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  __device__ dim3 group_dim() const { return gridDim; }
  __device__ dim3 dim_blocks() const { return gridDim; }
  __device__ dim3 block_index() const { return blockIdx; }
};
struct thread_block {
  __device__ unsigned int thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  __device__ unsigned int num_threads() const { return blockDim.x * blockDim.y * blockDim.z; }
  __device__ unsigned int size() const { return num_threads(); }
  __device__ void sync() const { __syncthreads(); }
  __device__ dim3 group_index() const { return blockIdx; }
  __device__ dim3 thread_index() const { return threadIdx; }
  __device__ dim3 group_dim() const { return blockDim; }
  __device__ dim3 dim_threads() const { return blockDim; }
};
__device__ __forceinline__ grid_group this_grid() { return grid_group(); }
__device__ __forceinline__ thread_block this_thread_block() { return thread_block(); }
}  // namespace cooperative_groups
namespace cg = cooperative_groups;
"""

_PRELUDE_TYPES = f"""\
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define MAX_NDIM {MAX_NDIM}
#define inf __int_as_float(0x7f800000)
struct __align__(8) complex64_t {{ float real, imag; }};
#define WARP_SIZE 32
// As MLX's CUDA kernels see them (cuda::std::array): indexable, .data() and .size()
struct Shape {{
  int32_t values[MAX_NDIM];
  __device__ __forceinline__ int32_t operator[](int i) const {{ return values[i]; }}
  __device__ __forceinline__ const int32_t* data() const {{ return values; }}
  __device__ __forceinline__ static constexpr int size() {{ return MAX_NDIM; }}
}};
struct Strides {{
  int64_t values[MAX_NDIM];
  __device__ __forceinline__ int64_t operator[](int i) const {{ return values[i]; }}
  __device__ __forceinline__ const int64_t* data() const {{ return values; }}
  __device__ __forceinline__ static constexpr int size() {{ return MAX_NDIM; }}
}};
// MLX's helper: the memory offset of row-major element ``elem`` of a strided array
template <typename IdxT = int64_t>
__device__ __forceinline__ IdxT elem_to_loc(IdxT elem, const int32_t* shape,
                                            const int64_t* strides, int ndim) {{
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {{
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }}
  return loc;
}}
"""

_SHAPE = struct.Struct(f"<{MAX_NDIM}i")
_STRIDES = struct.Struct(f"<{MAX_NDIM}q")


def _fn_error(msg: str) -> ValueError:
    return ValueError(f"[cuda_kernel] {msg}")


def _template_value(name: str, value: Any) -> tuple[str, str]:
    """(declaration, name-hash piece) of one template argument."""
    if isinstance(value, bool):
        return f"  constexpr bool {name} = {'true' if value else 'false'};\n", (
            "_t" if value else "_f")
    if isinstance(value, (int, np.integer)):
        return f"  constexpr int {name} = {int(value)};\n", f"_{int(value)}"
    if isinstance(value, dt.Dtype):
        return f"  using {name} = {CUDA_TYPES[value.name]};\n", f"_{value.name}"
    raise _fn_error("Invalid template argument. Must be `mlx.core.Dtype`, `int` or `bool`.")


def build_source(name: str, header: str, source: str, input_names: Sequence[str],
                 input_specs: Sequence[tuple[int, dt.Dtype]], output_names: Sequence[str],
                 output_dtypes: Sequence[dt.Dtype], template: Sequence[tuple[str, Any]],
                 shape_infos: Sequence[tuple[bool, bool, bool]], cuda_headers: bool = True,
                 cooperative_groups: bool = True) -> tuple[str, str, tuple[str, ...]]:
    """(kernel name, full source, launch signature) for inputs given as (ndim, dtype)."""
    decls = ""
    hashed = ""
    for tname, value in template:
        d, h = _template_value(tname, value)
        decls += d
        hashed += h
    kname = f"custom_kernel_{name}{hashed}"
    params: list[str] = []
    sig: list[str] = []
    for iname, (ndim, dtype), (has_shape, has_strides, has_ndim) in zip(
            input_names, input_specs, shape_infos):
        params.append(f"    const {CUDA_TYPES[dtype.name]}* {iname}")
        sig.append("ptr")
        if ndim > 0:
            if has_shape:
                params.append(f"    const Shape {iname}_shape")
                sig.append(f"bytes:{_SHAPE.size}")
            if has_strides:
                params.append(f"    const Strides {iname}_strides")
                sig.append(f"bytes:{_STRIDES.size}")
            if has_ndim:
                params.append(f"    const int {iname}_ndim")
                sig.append("i32")
    for oname, dtype in zip(output_names, output_dtypes):
        params.append(f"    {CUDA_TYPES[dtype.name]}* {oname}")
        sig.append("ptr")
    prelude = ((_PRELUDE_HEADERS if cuda_headers else _PRELUDE_NO_HEADERS)
               + (_PRELUDE_CG if cooperative_groups else _PRELUDE_CG_SUBSET) + _PRELUDE_TYPES)
    text = (prelude + header + "\n\n__global__ void " + kname + "(\n" + ",\n".join(params)
            + ") {\n" + (decls + "\n" if decls else "") + source + "\n}\n")
    return kname, text, tuple(sig)


class CustomKernel(Primitive):
    """A user kernel: one launch writing every output."""

    __slots__ = ("kname", "source", "signature", "shape_infos", "grid", "block",
                 "ensure_row_contiguous", "init_value", "shared_memory")
    name = "cuda_kernel"
    gpu_kernel = True

    def __init__(self, kname: str, source: str, signature: tuple[str, ...],
                 shape_infos: Sequence[tuple[bool, bool, bool]], grid: tuple[int, int, int],
                 block: tuple[int, int, int], ensure_row_contiguous: bool,
                 init_value: float | None, shared_memory: int) -> None:
        self.kname = kname
        self.source = source
        self.signature = signature
        self.shape_infos = tuple(shape_infos)
        self.grid = grid
        self.block = block
        self.ensure_row_contiguous = ensure_row_contiguous
        self.init_value = init_value
        self.shared_memory = shared_memory

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]) -> list[np.ndarray]:
        raise ValueError("[cuda_kernel] Only supports the GPU.")

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        from ..backend.cuda import array as gpu_array, custom, elementwise, fast

        results = []
        for shape, dtype in outs:
            out = gpu_array.empty(tuple(shape), dtype, stream)
            if self.init_value is not None and out.size:
                with np.errstate(all="ignore"):
                    value = np.array(self.init_value).astype(dtype.np_dtype).tobytes()
                elementwise.fill(out, value, stream)
            results.append(out)
        args: list[Any] = []
        for x, (has_shape, has_strides, has_ndim) in zip(inputs, self.shape_infos):
            if self.ensure_row_contiguous:
                x = fast.contiguous(x, stream)
            args.append(elementwise._ptr(x))
            nd = len(x.shape)
            if nd > 0:
                if has_shape:
                    args.append(_SHAPE.pack(*(list(x.shape) + [0] * (MAX_NDIM - nd))))
                if has_strides:
                    args.append(_STRIDES.pack(*(list(x.strides) + [0] * (MAX_NDIM - nd))))
                if has_ndim:
                    args.append(nd)
        args += [elementwise._ptr(o) for o in results]
        kernel = custom.load(self.kname, self.source, self.kname, self.signature,
                             self.shared_memory, stream.device)
        grid = tuple(-(-g // t) for g, t in zip(self.grid, self.block))
        if all(grid):
            kernel(grid, self.block, stream, *args, shared_bytes=self.shared_memory)
        for o in results:
            elementwise._record_write(o, stream)
        return results


def _triple(value: Any, what: str) -> tuple[int, int, int]:
    try:
        t = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"cuda_kernel call: {what} must be a tuple of 3 ints") from None
    if len(t) != 3:
        raise TypeError(f"cuda_kernel call: {what} must be a tuple of 3 ints, got {len(t)}")
    return t  # type: ignore[return-value]


class CudaKernel:
    """The callable ``mx.fast.cuda_kernel`` returns."""

    def __init__(self, name: str, input_names: Sequence[str], output_names: Sequence[str],
                 source: str, header: str = "", ensure_row_contiguous: bool = True,
                 shared_memory: int = 0) -> None:
        if not output_names:
            raise _fn_error("Must specify at least one output.")
        self.name = str(name)
        self.input_names = [str(n) for n in input_names]
        self.output_names = [str(n) for n in output_names]
        self.source = str(source)
        self.header = str(header)
        self.ensure_row_contiguous = bool(ensure_row_contiguous)
        self.shared_memory = int(shared_memory)
        self.shape_infos = [(f"{n}_shape" in self.source, f"{n}_strides" in self.source,
                             f"{n}_ndim" in self.source) for n in self.input_names]
        self._built: dict[tuple, tuple[str, str, tuple[str, ...]]] = {}

    def __call__(self, *, inputs: Sequence[Any], output_shapes: Sequence[Sequence[int]],
                 output_dtypes: Sequence[dt.Dtype], grid: tuple[int, int, int],
                 threadgroup: tuple[int, int, int],
                 template: Sequence[tuple[str, Any]] | None = None,
                 init_value: float | None = None, verbose: bool = False,
                 stream: Any = None) -> list[array]:
        arrays = [as_array(x) for x in inputs]
        if len(arrays) != len(self.input_names):
            raise _fn_error(f"Expected `inputs` to have size {len(self.input_names)} but got "
                            f"size {len(arrays)}.")
        if len(output_shapes) != len(self.output_names):
            raise _fn_error(f"Expected `output_shapes` to have size {len(self.output_names)} "
                            f"but got size {len(output_shapes)}.")
        if len(output_dtypes) != len(self.output_names):
            raise _fn_error(f"Expected `output_dtypes` to have size {len(self.output_names)} "
                            f"but got size {len(output_dtypes)}.")
        shapes = [shape_arg(s, "cuda_kernel", allow_int=False) for s in output_shapes]
        dtypes = list(output_dtypes)
        for d in dtypes:
            if not isinstance(d, dt.Dtype):
                raise TypeError(f"cuda_kernel call: output_dtypes must hold mlx.core.Dtype, "
                                f"got {type(d).__name__}")
        g, tg = _triple(grid, "grid"), _triple(threadgroup, "threadgroup")
        if min(tg) < 1 or tg[0] * tg[1] * tg[2] > 1024:
            raise _fn_error(f"threadgroup {tg} must have positive sizes and at most 1024 "
                            "threads in all.")
        if min(g) < 0:
            raise _fn_error(f"grid {g} must not be negative.")
        for a in arrays:
            if a.ndim > MAX_NDIM:
                raise _fn_error(f"inputs have at most {MAX_NDIM} dimensions, got {a.ndim}.")
        s = dev.resolve_stream(stream)
        if not s.is_gpu:
            raise _fn_error("Only supports the GPU.")
        template = list(template or [])
        from ..backend.cuda import custom

        key = (tuple((a.ndim, a.dtype) for a in arrays), tuple(dtypes),
               tuple((n, v if not isinstance(v, bool) else ("bool", v)) for n, v in template))
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = build_source(
                self.name, self.header, self.source, self.input_names,
                [(a.ndim, a.dtype) for a in arrays], self.output_names, dtypes, template,
                self.shape_infos, custom.has_cuda_headers(), custom.has_cooperative_groups())
        kname, text, signature = built
        if verbose:
            sys.stdout.write(f"Generated source code for `{kname}`:\n```\n{text}\n```\n")
        prim = CustomKernel(kname, text, signature, self.shape_infos, g, tg,
                            self.ensure_row_contiguous,
                            None if init_value is None else float(init_value),
                            self.shared_memory)
        return make_multi(prim, tuple(arrays), list(zip(shapes, dtypes)), s)

    def __repr__(self) -> str:
        return f"<cuda_kernel {self.name}>"
