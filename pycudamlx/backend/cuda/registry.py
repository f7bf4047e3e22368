"""The kernel registry: every built-in kernel module, described once.

A module is one NVRTC program: a kernel family's .cu source (with common.cuh and, for op
families, a functor generated from the op table prepended) plus the name expressions that
instantiate it for one op and one dtype. Programs stay small so a cold compile costs tens of
milliseconds, not seconds. The same descriptions feed the runtime, ``pycudamlx ptx build``,
``pycudamlx cache warm`` and the test that compiles every kernel.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ... import dtypes as dt
from .. import optable

KERNEL_DIR = Path(__file__).with_name("kernels")

#: dtypes whose kernels ship precompiled in kernels_ptx/.
COMMON_DTYPES: tuple[str, ...] = ("bool", "uint8", "int32", "int64", "float16", "bfloat16",
                                  "float32")
#: every dtype kernels are instantiated for at run time.
ALL_DTYPES: tuple[str, ...] = tuple(d.name for d in dt.ALL_DTYPES)

#: NVRTC options of every built-in module (the target architecture is added by the compiler).
BUILTIN_OPTIONS: tuple[str, ...] = ("-std=c++17",)

#: Largest rank a strided kernel takes directly (common.cuh PCM_MAX_DIMS); callers collapse
#: contiguous dimensions first.
MAX_DIMS = 8


@functools.lru_cache(maxsize=None)
def read_source(filename: str) -> str:
    return (KERNEL_DIR / filename).read_text()


@dataclass(frozen=True)
class KernelSpec:
    expression: str              # NVRTC name expression, e.g. "binary_contig<float, float, 4, 0, 0>"
    signature: tuple[str, ...]   # argument kinds for launch.Kernel


@dataclass(frozen=True)
class ModuleSpec:
    name: str                    # unique and file-name safe, e.g. "binary.add.float32"
    family: str
    source: str
    kernels: tuple[KernelSpec, ...]
    dtypes: tuple[str, ...]

    @functools.cached_property
    def sha256(self) -> str:
        """Identity of the program: source text and name expressions."""
        h = hashlib.sha256(self.source.encode())
        for k in self.kernels:
            h.update(b"\0" + k.expression.encode())
        return h.hexdigest()

    @property
    def expressions(self) -> list[str]:
        return [k.expression for k in self.kernels]


def layout_bytes(nargs: int) -> int:
    """sizeof(Layout<nargs>) in common.cuh: shape, strides, ndim, padded to 8 bytes."""
    return 8 * MAX_DIMS * (1 + nargs) + 8


def vector_width(*dtype_names: str) -> int:
    """Elements per 16-byte pack for the widest of the dtypes."""
    return 16 // max(dt.by_name[n].size for n in dtype_names)


def _program(family_file: str, prelude: str = "", math: bool = False) -> str:
    """common.cuh (+ math.cuh for op families) + the generated prelude + the family's source."""
    head = read_source("common.cuh") + ("\n" + read_source("math.cuh") if math else "")
    return head + "\n// ---- generated ----\n" + prelude + "\n" + read_source(family_file)


def _functor(op: optable.ElementwiseOp, family: str, storage: str) -> str:
    """The ``Op`` functor of one op for one dtype; ``S`` names the storage type."""
    if op.arity == 1:
        args, params = "a", "C a"
    else:
        args, params = "a, b", "C a, C b"
    expr = op.expression(family)
    return (f"// op {op.name} ({args}) for dtype family '{family}'\n"
            "struct Op {\n"
            f"  typedef {storage} S;\n"
            f"  template <typename C> PCM_DEVICE auto operator()({params}) const "
            f"{{ return {expr}; }}\n"
            "};\n")


def _ctype(name: str) -> str:
    return dt.by_name[name].c_type


# --------------------------------------------------------------------------------------------------
# Families


@functools.lru_cache(maxsize=None)
def copy_module(src: str, dst: str) -> ModuleSpec:
    """Copy with conversion from dtype ``src`` to ``dst``: contiguous, strided, general; and fill."""
    t, u = _ctype(src), _ctype(dst)
    n = vector_width(src, dst)
    lay1, lay2 = f"bytes:{layout_bytes(1)}", f"bytes:{layout_bytes(2)}"
    kernels = (
        KernelSpec(f"copy_contig<{t}, {u}, {n}>", ("ptr", "ptr", "i64")),
        KernelSpec(f"copy_contig<{t}, {u}, 1>", ("ptr", "ptr", "i64")),
        KernelSpec(f"copy_strided<{t}, {u}, int32_t>", ("ptr", "ptr", "i64", lay1)),
        KernelSpec(f"copy_strided<{t}, {u}, int64_t>", ("ptr", "ptr", "i64", lay1)),
        KernelSpec(f"copy_general<{t}, {u}, int32_t>", ("ptr", "ptr", "i64", lay2)),
        KernelSpec(f"copy_general<{t}, {u}, int64_t>", ("ptr", "ptr", "i64", lay2)),
    )
    if src == dst:  # the same-dtype module also fills
        value = f"bytes:{dt.by_name[dst].size}"
        kernels += (KernelSpec(f"fill<{u}, {vector_width(dst)}>", ("ptr", value, "i64")),
                    KernelSpec(f"fill<{u}, 1>", ("ptr", value, "i64")))
    return ModuleSpec(f"copy.{src}.{dst}", "copy", _program("copy.cu"), kernels,
                      tuple(sorted({src, dst})))


def op_output_dtype(op: optable.ElementwiseOp, dtype: str) -> str:
    return op.output_dtype(dt.by_name[dtype]).name


@functools.lru_cache(maxsize=None)
def unary_module(op_name: str, dtype: str) -> ModuleSpec:
    op = optable.OPS[op_name]
    out = op_output_dtype(op, dtype)
    t, u = _ctype(dtype), _ctype(out)
    n = vector_width(dtype, out)
    lay1 = f"bytes:{layout_bytes(1)}"
    kernels = (
        KernelSpec(f"unary_contig<{t}, {u}, {n}>", ("ptr", "ptr", "i64")),
        KernelSpec(f"unary_contig<{t}, {u}, 1>", ("ptr", "ptr", "i64")),
        KernelSpec(f"unary_strided<{t}, {u}, int32_t>", ("ptr", "ptr", "i64", lay1)),
        KernelSpec(f"unary_strided<{t}, {u}, int64_t>", ("ptr", "ptr", "i64", lay1)),
    )
    family = dt.by_name[dtype].kind
    return ModuleSpec(f"unary.{op_name}.{dtype}", "unary",
                      _program("unary.cu", _functor(op, family, t), math=True), kernels,
                      (dtype,))


@functools.lru_cache(maxsize=None)
def binary_module(op_name: str, dtype: str) -> ModuleSpec:
    op = optable.OPS[op_name]
    out = op_output_dtype(op, dtype)
    t, u = _ctype(dtype), _ctype(out)
    n = vector_width(dtype, out)
    lay2 = f"bytes:{layout_bytes(2)}"
    contig = ("ptr", "ptr", "ptr", "i64")
    kernels = tuple(
        KernelSpec(f"binary_contig<{t}, {u}, {w}, {sa}, {sb}>", contig)
        for w in (n, 1) for sa, sb in ((0, 0), (1, 0), (0, 1))
    ) + (
        KernelSpec(f"binary_strided<{t}, {u}, int32_t>", contig + (lay2,)),
        KernelSpec(f"binary_strided<{t}, {u}, int64_t>", contig + (lay2,)),
    )
    family = dt.by_name[dtype].kind
    return ModuleSpec(f"binary.{op_name}.{dtype}", "binary",
                      _program("binary.cu", _functor(op, family, t), math=True), kernels,
                      (dtype,))


@functools.lru_cache(maxsize=None)
def where_module(dtype: str) -> ModuleSpec:
    t = _ctype(dtype)
    lay3 = f"bytes:{layout_bytes(3)}"
    sig = ("ptr", "ptr", "ptr", "ptr", "i64", lay3)
    kernels = (KernelSpec(f"where_strided<{t}, int32_t>", sig),
               KernelSpec(f"where_strided<{t}, int64_t>", sig))
    return ModuleSpec(f"where.{dtype}", "where", _program("where.cu"), kernels, (dtype,))


@functools.lru_cache(maxsize=None)
def all_true_module() -> ModuleSpec:
    """``all`` of a contiguous bool array into one bool (allclose, array_equal)."""
    kernels = (KernelSpec("all_true", ("ptr", "ptr", "i64")),)
    return ModuleSpec("all_true.bool", "all_true", _program("all_true.cu"), kernels, ("bool",))


# Sequences, masks and the diagonal sum (sequence.cu); gathers and scatters (gather.cu).

#: Index arrays one gather/scatter launch takes (gather.cu PCM_MAX_INDEX).
MAX_INDEX = 8
#: sizeof(IndexArgs) in gather.cu: shape, strides, update strides, index strides, pointers,
#: axis strides, axis sizes, clamp bounds, ndim, nidx.
INDEX_ARGS_BYTES = 8 * MAX_DIMS * 3 + 8 * MAX_INDEX * MAX_DIMS + 8 * MAX_INDEX * 4 + 8
#: The index dtypes gathers and scatters read (other integer indices are cast to one of them).
INDEX_DTYPES: tuple[str, ...] = ("int32", "int64")


@functools.lru_cache(maxsize=None)
def sequence_module(dtype: str) -> ModuleSpec:
    """arange, linspace, tri/eye masks, tril/triu, strided fill (and windows for float32)."""
    t = _ctype(dtype)
    kind = dt.by_name[dtype].kind
    lay1 = f"bytes:{layout_bytes(1)}"
    kernels: list[KernelSpec] = []
    if kind in "iu":
        kernels.append(KernelSpec(f"arange_int<{t}>", ("ptr", "i64", "u64", "u64")))
    elif kind in "fc":
        kernels.append(KernelSpec(f"arange_float<{t}>", ("ptr", "i64", "f64", "f64")))
    if dtype == "float64":
        kernels.append(KernelSpec(f"linspace_d<{t}>", ("ptr", "i64", "f64", "f64", "f64")))
    kernels += [
        KernelSpec(f"linspace<{t}>", ("ptr", "i64", "f32", "f32", "f32")),
        KernelSpec(f"tri_mask<{t}>", ("ptr", "i64", "i64", "i64", "i32")),
    ]
    for i in ("int32_t", "int64_t"):
        kernels.append(KernelSpec(f"tri_select<{t}, {i}>",
                                  ("ptr", "ptr", "i64", lay1, "i64", "i64", "i64", "i32")))
    for i in ("int32_t", "int64_t"):
        kernels.append(KernelSpec(f"fill_strided<{t}, {i}>",
                                  ("ptr", f"bytes:{dt.by_name[dtype].size}", "i64", lay1)))
    if dtype == "float32":
        kernels.append(KernelSpec("window", ("ptr", "i64", "i32")))
    return ModuleSpec(f"sequence.{dtype}", "sequence", _program("sequence.cu"), tuple(kernels),
                      (dtype,))


@functools.lru_cache(maxsize=None)
def trace_module(src: str, dst: str) -> ModuleSpec:
    """Sums along a strided diagonal (trace), from dtype ``src`` into ``dst``."""
    t, u = _ctype(src), _ctype(dst)
    lay1 = f"bytes:{layout_bytes(1)}"
    sig = ("ptr", "ptr", "i64", lay1, "i64", "i64")
    kernels = tuple(KernelSpec(f"diag_sum<{t}, {u}, {i}>", sig) for i in ("int32_t", "int64_t"))
    return ModuleSpec(f"trace.{src}.{dst}", "trace", _program("sequence.cu"), kernels,
                      tuple(sorted({src, dst})))


def trace_dtype(dtype: str) -> str:
    """The dtype ``mx.trace`` (a sum) gives ``dtype``: small integers widen as MLX's sum does."""
    return {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32",
            "uint16": "uint32"}.get(dtype, dtype)


@functools.lru_cache(maxsize=None)
def gather_module(dtype: str, index: str) -> ModuleSpec:
    """Gathers of ``dtype`` elements with ``index`` (int32/int64) index arrays: int32 and int64
    index math."""
    t, x = _ctype(dtype), _ctype(index)
    args = f"bytes:{INDEX_ARGS_BYTES}"
    kernels = tuple(KernelSpec(f"gather<{t}, {x}, {i}>", ("ptr", "ptr", "i64", args))
                    for i in ("int32_t", "int64_t"))
    return ModuleSpec(f"gather.{dtype}.{index}", "gather", _program("gather.cu"), kernels,
                      tuple(sorted({dtype, index})))


#: (index math, winner type) of the scatter kernels, in their order in scatter_module.
SCATTER_VARIANTS: tuple[tuple[str, str], ...] = (("int32_t", "uint32_t"), ("int64_t", "uint64_t"))


@functools.lru_cache(maxsize=None)
def scatter_module(dtype: str, index: str) -> ModuleSpec:
    """Scatters (setitem with index arrays, slice_update with array starts): scatter_claim then
    scatter_write for each of SCATTER_VARIANTS."""
    t, x = _ctype(dtype), _ctype(index)
    args = f"bytes:{INDEX_ARGS_BYTES}"
    kernels = tuple(KernelSpec(f"scatter_claim<{x}, {i}, {w}>", ("ptr", "i64", args, "i32"))
                    for i, w in SCATTER_VARIANTS)
    kernels += tuple(KernelSpec(f"scatter_write<{t}, {x}, {i}, {w}>",
                                ("ptr", "ptr", "ptr", "i64", args, "i32"))
                     for i, w in SCATTER_VARIANTS)
    return ModuleSpec(f"scatter.{dtype}.{index}", "scatter", _program("gather.cu"), kernels,
                      tuple(sorted({dtype, index})))


# mx.fast: row norms and rope (fast_norm.cu); attention (sdpa.cu).

#: dtypes the mx.fast kernels take (MLX's floating dtypes).
FAST_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")
#: head dims of the tiled attention kernel (Dk == Dv); others take sdpa_generic.
SDPA_TILED_DIMS: tuple[int, ...] = (64, 80, 96, 128)
#: sizeof(SdpaArgs) in sdpa.cu: 20 int64 strides, a double, a float, 13 int32.
SDPA_ARGS_BYTES = 20 * 8 + 8 + 4 + 13 * 4
_SDPA_SIG = ("ptr",) * 6 + (f"bytes:{SDPA_ARGS_BYTES}",)


@functools.lru_cache(maxsize=None)
def fast_norm_module(dtype: str) -> ModuleSpec:
    """rms_norm / layer_norm (16-byte packs and scalar) and rope for one floating dtype."""
    t = _ctype(dtype)
    n = vector_width(dtype)
    norm = ("ptr", "ptr", "ptr", "ptr", "i64", "i64", "f32", "i32")
    kernels = tuple(KernelSpec(f"norm_rows<{t}, {w}, {ln}>", norm)
                    for ln in ("false", "true") for w in (n, 1))
    kernels += (KernelSpec(f"rope<{t}>", ("ptr", "ptr", "ptr", "ptr", "i64", "i64", "i64", "i64",
                                          "i32", "i32", "i32", "f32", "f32", "i32")),)
    return ModuleSpec(f"fast_norm.{dtype}", "fast_norm", _program("fast_norm.cu"), kernels,
                      (dtype,))


@functools.lru_cache(maxsize=None)
def sdpa_module(dtype: str) -> ModuleSpec:
    """Attention for one floating dtype: the generic kernel, then the tiled ones (16/32-bit
    floats) in SDPA_TILED_DIMS order."""
    t = _ctype(dtype)
    kernels = (KernelSpec(f"sdpa_generic<{t}>", _SDPA_SIG),)
    if dtype != "float64":
        kernels += tuple(KernelSpec(f"sdpa_tiled<{t}, {d}>", _SDPA_SIG) for d in SDPA_TILED_DIMS)
    return ModuleSpec(f"sdpa.{dtype}", "sdpa", _program("sdpa.cu"), kernels, (dtype,))


#: dtypes of the tensor-core attention kernels.
SDPA_MMA_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


@functools.lru_cache(maxsize=None)
def sdpa_mma_module(dtype: str, head_dim: int) -> ModuleSpec:
    """Tensor-core attention (sm_80+) for one 16-bit dtype and head dim: one kernel per module,
    because each costs seconds of ptxas time cold and a model uses one head dim."""
    t = _ctype(dtype)
    kernels = (KernelSpec(f"sdpa_mma<{t}, {head_dim}>", _SDPA_SIG),)
    return ModuleSpec(f"sdpa_mma.d{head_dim}.{dtype}", "sdpa_mma", _program("sdpa.cu"), kernels,
                      (dtype,))


def fast_modules(dtypes: Sequence[str]) -> list[ModuleSpec]:
    modules = [f(d) for d in dtypes if d in FAST_DTYPES for f in (fast_norm_module, sdpa_module)]
    modules += [sdpa_mma_module(d, hd) for d in dtypes if d in SDPA_MMA_DTYPES
                for hd in SDPA_TILED_DIMS]
    return modules


def _op_defined(op: optable.ElementwiseOp, dtype: str) -> bool:
    return dt.by_name[dtype].kind in op.families


def builtin_modules(dtypes: Sequence[str] = COMMON_DTYPES) -> list[ModuleSpec]:
    """Every built-in module instantiated for ``dtypes`` (copies: every pair among them)."""
    modules: list[ModuleSpec] = []
    for src in dtypes:
        for dst in dtypes:
            modules.append(copy_module(src, dst))
    for name, op in sorted(optable.OPS.items()):
        for d in dtypes:
            if not _op_defined(op, d):
                continue
            modules.append(unary_module(name, d) if op.arity == 1 else binary_module(name, d))
    for d in dtypes:
        modules.append(where_module(d))
    for d in dtypes:
        modules.append(sequence_module(d))
        if trace_dtype(d) in dtypes:
            modules.append(trace_module(d, trace_dtype(d)))
        for index in INDEX_DTYPES:
            modules.append(gather_module(d, index))
            modules.append(scatter_module(d, index))
    if "bool" in dtypes:
        modules.append(all_true_module())
    modules.extend(fast_modules(dtypes))
    return modules


def find_module(name: str, dtypes: Iterable[str] = ALL_DTYPES) -> ModuleSpec | None:
    """The built-in module with this name, if any."""
    for spec in builtin_modules(tuple(dtypes)):
        if spec.name == name:
            return spec
    return None
