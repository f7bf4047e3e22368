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
    #: The lowest compute capability the module's code is for (e.g. 80 for mma.sync): such a
    #: module is never shipped as compute_70 PTX, only built for the device by NVRTC.
    min_cc: int = 0

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
        KernelSpec(f"copy_tiled<{t}, {u}>", ("ptr", "ptr") + ("i64",) * 4),
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
        KernelSpec(f"unary_tiled<{t}, {u}>", ("ptr", "ptr") + ("i64",) * 4),
    )
    family = dt.by_name[dtype].kind
    return ModuleSpec(f"unary.{op_name}.{dtype}", "unary",
                      _program("unary.cu", _functor(op, family, t), math=True), kernels,
                      (dtype,))


#: binary_rows instantiations, vectorised (binary2d kernel_list[0:3]): the (a, b) stride along
#: a row, 1 or 0. Rows that cannot take whole packs go strided: each variant adds compile time.
ROW_VARIANTS: tuple[tuple[int, int], ...] = ((1, 1), (1, 0), (0, 1))
#: binary_tiled instantiations (binary2d kernel_list[3:5]): which operand goes through the tile.
TILE_VARIANTS: tuple[tuple[int, int], ...] = ((1, 0), (0, 1))


def tile_side(dtype: str) -> int:
    """common.cuh TileSide: the square tile transposed reads go through."""
    return 64 if dt.by_name[dtype].size <= 4 else 32


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
def binary2d_module(op_name: str, dtype: str) -> ModuleSpec:
    """The row and tile kernels of one binary op (broadcast rows, transposed operands): a module
    of its own, so that code which never needs them never compiles them."""
    op = optable.OPS[op_name]
    out = op_output_dtype(op, dtype)
    t, u = _ctype(dtype), _ctype(out)
    n = vector_width(dtype, out)
    lay2 = f"bytes:{layout_bytes(2)}"
    ptrs = ("ptr", "ptr", "ptr")
    kernels = tuple(
        KernelSpec(f"binary_rows<{t}, {u}, {n}, {ia}, {ib}>", ptrs + ("i64", "i64", lay2))
        for ia, ib in ROW_VARIANTS
    ) + tuple(
        KernelSpec(f"binary_tiled<{t}, {u}, {ta}, {tb}>", ptrs + ("i64",) * 6)
        for ta, tb in TILE_VARIANTS
    )
    family = dt.by_name[dtype].kind
    return ModuleSpec(f"binary2d.{op_name}.{dtype}", "binary2d",
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


@functools.lru_cache(maxsize=None)
def copy_many_module() -> ModuleSpec:
    """Many device-to-device copies from a table in one launch (a CUDA graph's inputs/outputs)."""
    kernels = (KernelSpec("copy_many", ("ptr",)),)
    return ModuleSpec("copy_many", "copy_many", _program("copy_many.cu"), kernels, ())


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


def take_vector_width(dtype: str) -> int:
    """Elements per 16-byte pack in the take_rows kernels (the other variant moves 1)."""
    return vector_width(dtype)


@functools.lru_cache(maxsize=None)
def gather_module(dtype: str, index: str) -> ModuleSpec:
    """Gathers of ``dtype`` elements with ``index`` (int32/int64) index arrays: the strided
    gather (int32 and int64 index math; clamp or fill mode), and the contiguous take kernels
    (take_flat with 4 and 1 indices per vector step, take_rows with 16-byte and 1-element
    packs, int32 and int64 index math)."""
    t, x = _ctype(dtype), _ctype(index)
    args = f"bytes:{INDEX_ARGS_BYTES}"
    kernels = tuple(KernelSpec(f"gather<{t}, {x}, {i}>", ("ptr", "ptr", "i64", args, "i32"))
                    for i in ("int32_t", "int64_t"))
    kernels += tuple(KernelSpec(f"take_flat<{t}, {x}, {v}>", ("ptr", "ptr", "ptr", "i64", "i64"))
                     for v in (4, 1))
    w = take_vector_width(dtype)
    kernels += tuple(KernelSpec(f"take_rows<{t}, {x}, {i}, {v}>",
                                ("ptr", "ptr", "ptr", "i64", "i64", "i64", "i64"))
                     for i in ("int32_t", "int64_t") for v in (w, 1))
    return ModuleSpec(f"gather.{dtype}.{index}", "gather", _program("gather.cu"), kernels,
                      tuple(sorted({dtype, index})))


#: (index math, winner type) of the scatter kernels, in their order in scatter_module.
SCATTER_VARIANTS: tuple[tuple[str, str], ...] = (("int32_t", "uint32_t"), ("int64_t", "uint64_t"))
#: The combining scatters (x.at[idx].add/...): op name -> functor in gather.cu.
SCATTER_OPS: dict[str, str] = {"add": "ScatterAdd", "prod": "ScatterProd", "max": "ScatterMax",
                               "min": "ScatterMin"}


@functools.lru_cache(maxsize=None)
def scatter_module(dtype: str, index: str) -> ModuleSpec:
    """Scatters (setitem with index arrays, slice_update with array starts, put_along_axis):
    scatter_claim then scatter_write for each of SCATTER_VARIANTS; then the combining
    scatter_reduce kernels, per op of SCATTER_OPS, int32 and int64 index math."""
    t, x = _ctype(dtype), _ctype(index)
    args = f"bytes:{INDEX_ARGS_BYTES}"
    kernels = tuple(KernelSpec(f"scatter_claim<{x}, {i}, {w}>", ("ptr", "i64", args, "i32"))
                    for i, w in SCATTER_VARIANTS)
    kernels += tuple(KernelSpec(f"scatter_write<{t}, {x}, {i}, {w}>",
                                ("ptr", "ptr", "ptr", "i64", args, "i32"))
                     for i, w in SCATTER_VARIANTS)
    kernels += tuple(KernelSpec(f"scatter_reduce<{t}, {x}, {i}, {f}>",
                                ("ptr", "ptr", "i64", args))
                     for f in SCATTER_OPS.values() for i, _ in SCATTER_VARIANTS)
    return ModuleSpec(f"scatter.{dtype}.{index}", "scatter", _program("gather.cu"), kernels,
                      tuple(sorted({dtype, index})))


#: dtypes the fallback GEMM is built for (uint32/uint64 run as int32/int64: same bits).
GEMM_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64", "complex64",
                                "int32", "int64")
#: gemm.cu's argument list: A, B, C, M, N, K, sam, sak, sbk, sbn, sa, sb, batch, alpha, beta.
GEMM_SIGNATURE: tuple[str, ...] = ("ptr", "ptr", "ptr") + ("i64",) * 10 + ("f64", "f64")


#: dtypes of the tensor-core GEMM (float32 as TF32).
MMA_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32")
#: Compute capability of the shipped PTX (ptxstore.SHIPPED_ARCH).
SHIPPED_CC = 70


@functools.lru_cache(maxsize=None)
def gemm_module(dtype: str) -> ModuleSpec:
    """The NVRTC GEMM (the path without cuBLAS) on CUDA cores, for every GEMM dtype."""
    t = _ctype(dtype)
    kernels = (KernelSpec(f"gemm_fma<{t}>", GEMM_SIGNATURE),)
    return ModuleSpec(f"gemm.{dtype}", "gemm", _program("gemm.cu"), kernels, (dtype,))


@functools.lru_cache(maxsize=None)
def gemm_mma_module(dtype: str) -> ModuleSpec:
    """The NVRTC GEMM on tensor cores (mma.sync, sm_80+): built for the device, never shipped."""
    t = _ctype(dtype)
    kernels = (KernelSpec(f"gemm_mma<{t}>", GEMM_SIGNATURE),)
    return ModuleSpec(f"gemm_mma.{dtype}", "gemm_mma", _program("gemm.cu"), kernels, (dtype,),
                      min_cc=80)

# mx.random (random.cu): threefry bits and the dtype-free helpers in one module, the fused
# uniform per float dtype, categorical's argmax for its two value dtypes.

#: Output dtypes of the fused uniform draw (MLX's uniform takes no others).
RANDOM_UNIFORM_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: Output dtypes of the fused normal draw.
RANDOM_NORMAL_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64")
#: Output dtypes of the fused randint draw (bool takes the elementwise chain).
RANDOM_RANDINT_DTYPES: tuple[str, ...] = ("uint8", "uint16", "uint32", "uint64", "int8", "int16",
                                          "int32", "int64")
#: Value dtypes of categorical's argmax (logits + float32 Gumbel noise).
RANDOM_ARGMAX_DTYPES: tuple[str, ...] = ("float32", "float64")


@functools.lru_cache(maxsize=None)
def random_bits_module() -> ModuleSpec:
    """Raw bits, bernoulli with a scalar p, the bitonic argsort of bits (permutation), one
    distribution's inverse CDF."""
    kernels = (
        KernelSpec("random_bits", ("ptr", "i64", "ptr", "i64")),
        KernelSpec("bitonic_init", ("ptr", "ptr", "i64", "i64")),
        KernelSpec("bitonic_step", ("ptr", "i64", "i64", "i64")),
        KernelSpec("bitonic_local", ("ptr", "i64", "i64", "i64")),
        KernelSpec("bitonic_extract", ("ptr", "ptr", "i64")),
        KernelSpec("categorical_cdf", ("ptr", "ptr", "i64")),
        KernelSpec("categorical_search", ("ptr", "ptr", "ptr", "i64", "i64")),
        KernelSpec("random_bernoulli", ("ptr", "i64", "ptr", "i64", "f64", "i32")),
    )
    return ModuleSpec("random.bits", "random", _program("random.cu"), kernels, ("uint32",))


@functools.lru_cache(maxsize=None)
def random_module(dtype: str) -> ModuleSpec:
    """The fused uniform/normal/randint draws into ``dtype``, categorical's argmax over it."""
    t = _ctype(dtype)
    kernels: list[KernelSpec] = []
    if dtype in RANDOM_UNIFORM_DTYPES:
        kernels.append(KernelSpec(f"random_uniform<{t}>",
                                  ("ptr", "i64", "ptr", "i64", "f32", "f32", "f32", "i32")))
    if dtype in RANDOM_NORMAL_DTYPES:
        kernels.append(KernelSpec(f"random_normal<{t}>",
                                  ("ptr", "i64", "ptr", "i64", "f32", "f32", "f32", "f64", "f64",
                                   "i32")))
    if dtype in RANDOM_ARGMAX_DTYPES:
        kernels.append(KernelSpec(f"argmax_axis<{t}>", ("ptr", "ptr", "i64", "i64", "i64")))
    if dtype in RANDOM_RANDINT_DTYPES:
        kernels.append(KernelSpec(f"random_randint<{t}>",
                                  ("ptr", "i64", "ptr", "i64", "f32", "f32", "f32", "i32", "i64",
                                   "i64")))
    return ModuleSpec(f"random.{dtype}", "random", _program("random.cu"), tuple(kernels),
                      (dtype,))


def random_modules(dtypes: Sequence[str]) -> list[ModuleSpec]:
    mods = [random_bits_module()] if dtypes else []
    return mods + [random_module(d) for d in dtypes
                   if d in RANDOM_NORMAL_DTYPES or d in RANDOM_ARGMAX_DTYPES
                   or d in RANDOM_RANDINT_DTYPES]

#: Row capacities of the block-local bitonic sort (sort.cu block_sort); longer rows use radix.
SORT_BLOCK_CAPS: tuple[int, ...] = (32, 64, 128, 256, 512, 1024, 2048)
#: Key type (sort.cu SortKey<T>::K) of each dtype.
SORT_KEY_TYPES: dict[str, str] = {
    "bool": "uint8_t", "uint8": "uint8_t", "int8": "uint8_t", "uint16": "uint16_t",
    "int16": "uint16_t", "float16": "uint16_t", "bfloat16": "uint16_t", "uint32": "uint32_t",
    "int32": "uint32_t", "float32": "uint32_t", "uint64": "uint64_t", "int64": "uint64_t",
    "float64": "uint64_t", "complex64": "uint64_t",
}

#: dtypes whose values-only sorts of long rows take the onesweep radix sort (4-byte keys that
#: map one-to-one to their values, sort.cu OrderKey).
ONESWEEP_DTYPES: tuple[str, ...] = ("float32", "int32", "uint32")


@functools.lru_cache(maxsize=None)
def sort_module(dtype: str) -> ModuleSpec:
    """sort/argsort/topk (bitonic block sort, LSD radix sort), searchsorted and unique for one
    dtype, plus the uint32 segment scans they use."""
    t = _ctype(dtype)
    sort_sig = ("ptr", "ptr", "ptr", "i64", "i64", "i64", "i64")
    kernels = [KernelSpec(f"block_sort<{t}, {cap}>", sort_sig) for cap in SORT_BLOCK_CAPS]
    kernels += [
        KernelSpec("seg_scan", ("ptr", "ptr", "i64", "i64")),
        KernelSpec("seg_scan_serial", ("ptr", "ptr", "i64", "i64")),
        KernelSpec("add_offsets", ("ptr", "ptr", "i64", "i64")),
    ]
    kernels += [KernelSpec(f"radix_hist<{t}, {f}>", ("ptr", "ptr", "i64", "i32", "i64"))
                for f in ("true", "false")]
    kernels += [KernelSpec(f"radix_scatter<{t}, {f}, {last}>", ("ptr",) * 9 + (
        "i64", "i32", "i64", "i64", "i32")) for f in ("true", "false") for last in ("true", "false")]
    if dtype in ONESWEEP_DTYPES:
        kernels += [
            KernelSpec(f"onesweep_upsweep<{t}>", ("ptr", "ptr", "ptr", "ptr", "i64", "i64")),
            KernelSpec(f"onesweep_fix<{t}>", ("ptr", "ptr", "ptr", "ptr", "i64", "i64", "i64")),
        ]
        kernels += [KernelSpec(f"onesweep_pass<{t}, {f}, {last}>", ("ptr",) * 6 + (
            "i64", "i32", "i64", "i64")) for f, last in (("true", "false"), ("false", "false"),
                                                          ("false", "true"))]
    kernels += [
        KernelSpec(f"searchsorted<{t}>", ("ptr", "i64", "i64", "ptr", "ptr", "i64", "i32")),
        KernelSpec(f"unique_flags<{t}>", ("ptr", "ptr", "i64")),
        KernelSpec(f"unique_scatter<{t}>",
                   ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "i64", "i64")),
        KernelSpec(f"unique_pad<{t}>", ("ptr", "ptr", "ptr", "ptr", "i64")),
    ]
    return ModuleSpec(f"sort.{dtype}", "sort", _program("sort.cu"), tuple(kernels), (dtype,))


def sort_modules(dtypes: Sequence[str]) -> list[ModuleSpec]:
    return [sort_module(d) for d in dtypes]

# Reductions, arg-reductions, scans, softmax and median (reduce.cu).

#: reduce.cu's OP / MAP / FIN codes.
RED_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "and": 4, "or": 5, "logadd": 6}
RED_MAPS = {"cast": 0, "sqdev": 1, "expdev": 2, "nonzero": 3, "truth": 4}
RED_FINS = {"none": 0, "scale": 1, "sqrt": 2, "logadd": 3, "finite": 4}

_SMALL_SUM = {"bool": "int32", "int8": "int32", "int16": "int32", "uint8": "uint32",
              "uint16": "uint32"}


def _compute_dtype(name: str) -> str:
    """The dtype arithmetic on ``name`` happens in (float32 for the 16-bit floats)."""
    return "float32" if name in ("float16", "bfloat16") else name


def _float_out(name: str) -> str:
    return name if dt.by_name[name].kind in "fc" else "float32"


def _work(name: str) -> str:
    """The dtype var's mean and logsumexp's shift are kept in."""
    return name if name in ("float64", "complex64") else "float32"


def reduce_variant(op: str, dtype: str) -> tuple[str, str, str, str, str, str] | None:
    """(U, A, W, OP, MAP, FIN) dtype names and codes of reduction ``op`` on ``dtype``, or None
    when the op has no kernel for it. U is the output dtype, A the accumulator, W the per-output
    auxiliary value's dtype (var's mean, logsumexp's max)."""
    d = dt.by_name[dtype]
    cplx = d.kind == "c"
    if op in ("sum", "prod"):
        u = _SMALL_SUM.get(dtype, dtype)
        return (u, _compute_dtype(u), "float32", op, "cast", "none")
    if op in ("max", "min"):
        return (dtype, _compute_dtype(dtype), "float32", op, "cast", "none")
    if op in ("all", "any"):
        return ("bool", "bool", "float32", "and" if op == "all" else "or", "truth", "none")
    if op == "count_nonzero":
        return ("int32", "int32", "float32", "sum", "nonzero", "none")
    if op in ("mean", "mean_w"):
        acc = _compute_dtype(_SMALL_SUM.get(dtype, dtype))
        u = _float_out(dtype) if op == "mean" else _work(dtype)
        return (u, acc, "float32", "sum", "cast", "scale")
    if op in ("var", "std"):
        u = dtype if d.kind == "f" else "float32"
        acc = "float64" if dtype == "float64" else "float32"
        return (u, acc, _work(dtype), "sum", "sqdev", "scale" if op == "var" else "sqrt")
    if op == "lse_max":
        if cplx:
            return None
        return (_work(dtype), _compute_dtype(dtype), "float32", "max", "cast", "finite")
    if op == "lse":
        w = _work(dtype)
        return (_float_out(dtype), w, w, "sum", "expdev", "logadd")
    raise ValueError(f"unknown reduction {op!r}")


REDUCE_OPS: tuple[str, ...] = ("sum", "prod", "max", "min", "all", "any", "count_nonzero",
                               "mean", "mean_w", "var", "std", "lse_max", "lse")


def reduce_expressions(op: str, dtype: str) -> tuple[str, str, str] | None:
    """Name expressions of (reduce_row, reduce_cols, reduce_partials) for ``op`` on ``dtype``."""
    v = reduce_variant(op, dtype)
    if v is None:
        return None
    u, a, w, o, m, f = v
    t, u, a, w = _ctype(dtype), _ctype(u), _ctype(a), _ctype(w)
    o, m, f = RED_OPS[o], RED_MAPS[m], RED_FINS[f]
    return (f"reduce_row<{t}, {u}, {a}, {w}, {o}, {m}, {f}>",
            f"reduce_cols<{t}, {u}, {a}, {w}, {o}, {m}, {f}>",
            f"reduce_partials<{u}, {a}, {w}, {o}, {f}>")


_ROW_SIG = ("ptr", "ptr", "ptr", "ptr", "ptr", "i64", "i64", "i64", "i32", "i32", "f64")
_COLS_SIG = ("ptr", "ptr", "ptr", "ptr", "i64", "i64", "i64", "i64", "f64")
_PART_SIG = ("ptr", "ptr", "ptr", "i64", "i64", "f64")


@functools.lru_cache(maxsize=None)
def reduce_module(dtype: str) -> ModuleSpec:
    """Every reduction of ``dtype`` elements: rows, columns and split partials per variant."""
    kernels: dict[str, KernelSpec] = {}
    for op in REDUCE_OPS:
        exprs = reduce_expressions(op, dtype)
        if exprs is None:
            continue
        for e, sig in zip(exprs, (_ROW_SIG, _COLS_SIG, _PART_SIG)):
            kernels.setdefault(e, KernelSpec(e, sig))
    return ModuleSpec(f"reduce.{dtype}", "reduce", _program("reduce.cu", math=True),
                      tuple(kernels.values()), (dtype,))


SCAN_OPS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min",
            "logcumsumexp": "logadd"}


def scan_expressions(op: str, dtype: str) -> tuple[str, str, str] | None:
    """Name expressions of (scan_row, scan_cols, scan_totals) for scan ``op`` on ``dtype``."""
    if op == "logcumsumexp" and dt.by_name[dtype].kind not in "fc":
        return None
    t, o = _ctype(dtype), RED_OPS[SCAN_OPS[op]]
    return f"scan_row<{t}, {o}>", f"scan_cols<{t}, {o}>", f"scan_totals<{t}, {o}>"


def scan_carry_dtype(dtype: str) -> str:
    """The dtype a long scan's chunk totals are kept in (the scan's compute type)."""
    return _compute_dtype(dtype)


def arg_expressions(op: str, dtype: str) -> tuple[str, str, str]:
    """Name expressions of (arg_row, arg_cols, arg_partials) for argmax/argmin on ``dtype``."""
    t, m = _ctype(dtype), "true" if op == "argmax" else "false"
    return f"arg_row<{t}, {m}>", f"arg_cols<{t}, {m}>", f"arg_partials<{t}, {m}>"


def median_expression(dtype: str) -> str:
    return f"median_row<{_ctype(dtype)}, {_ctype(_float_out(dtype))}>"


#: softmax_row's strategies (reduce.cu SM_PACKS, SM_SCALARS, SM_ONLINE).
SOFTMAX_MODES = ("packs", "scalars", "online")


def softmax_expressions(dtype: str) -> dict[str, str] | None:
    """softmax_row's name expression per strategy (complex rows: online only)."""
    kind = dt.by_name[dtype].kind
    if kind not in "fc":
        return None
    modes = SOFTMAX_MODES if kind == "f" else ("online",)
    return {m: f"softmax_row<{_ctype(dtype)}, {SOFTMAX_MODES.index(m)}>" for m in modes}


@functools.lru_cache(maxsize=None)
def scan_module(dtype: str) -> ModuleSpec:
    """Scans, argmax/argmin, softmax and median of ``dtype`` elements."""
    kernels: list[KernelSpec] = []
    for op in SCAN_OPS:
        exprs = scan_expressions(op, dtype)
        if exprs is not None:
            kernels.append(KernelSpec(exprs[0], ("ptr", "ptr", "i64", "i64", "i32", "i32",
                                                 "i64", "ptr")))
            kernels.append(KernelSpec(exprs[1], ("ptr", "ptr", "i64", "i64", "i64", "i32",
                                                 "i32")))
            kernels.append(KernelSpec(exprs[2], ("ptr", "ptr", "i64", "i64", "i32", "i64")))
    for op in ("argmax", "argmin"):
        row, cols, part = arg_expressions(op, dtype)
        kernels.append(KernelSpec(row, ("ptr", "ptr", "i64", "i64", "i32", "i64", "ptr", "ptr")))
        kernels.append(KernelSpec(cols, ("ptr", "ptr", "i64", "i64", "i64")))
        kernels.append(KernelSpec(part, ("ptr", "ptr", "ptr", "i64", "i64")))
    for expr in (softmax_expressions(dtype) or {}).values():
        kernels.append(KernelSpec(expr, ("ptr", "ptr", "i64", "i64", "i32")))
    kernels.append(KernelSpec(median_expression(dtype), ("ptr", "ptr", "i64", "i64")))
    return ModuleSpec(f"scan.{dtype}", "scan", _program("reduce.cu", math=True),
                      tuple(kernels), (dtype,))


def reduce_modules(dtypes: Sequence[str]) -> list[ModuleSpec]:
    """The reduction family's modules for ``dtypes``."""
    return [m for d in dtypes for m in (reduce_module(d), scan_module(d))]

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


#: sdpa_split<T, A, R> variants (sdpa.cu): A dims per lane (head dims up to 32 * A), R query
#: rows per block (fewer for the widest heads, to bound registers).
SDPA_SPLIT_VARIANTS: tuple[tuple[int, int], ...] = ((2, 8), (4, 8), (8, 4))
#: the decode kernels take this many queries at most (more: the prefill kernels).
SDPA_SPLIT_MAX_TQ = 8


@functools.lru_cache(maxsize=None)
def sdpa_decode_module(dtype: str) -> ModuleSpec:
    """Flash-decoding for one 16/32-bit floating dtype: sdpa_split in SDPA_SPLIT_VARIANTS order,
    then sdpa_combine."""
    t = _ctype(dtype)
    split_sig = _SDPA_SIG + ("ptr", "i32")
    kernels = tuple(KernelSpec(f"sdpa_split<{t}, {a}, {r}>", split_sig)
                    for a, r in SDPA_SPLIT_VARIANTS)
    kernels += (KernelSpec(f"sdpa_combine<{t}>", ("ptr", "ptr", "ptr",
                                                   f"bytes:{SDPA_ARGS_BYTES}", "i32")),)
    return ModuleSpec(f"sdpa_decode.{dtype}", "sdpa_decode", _program("sdpa.cu"), kernels,
                      (dtype,))


#: dtypes of the tensor-core attention kernels.
SDPA_MMA_DTYPES: tuple[str, ...] = ("float16", "bfloat16")


@functools.lru_cache(maxsize=None)
def sdpa_mma_module(dtype: str, head_dim: int) -> ModuleSpec:
    """Tensor-core attention (sm_80+) for one 16-bit dtype and head dim: one kernel per module,
    because each costs seconds of ptxas time cold and a model uses one head dim."""
    t = _ctype(dtype)
    kernels = (KernelSpec(f"sdpa_mma<{t}, {head_dim}>", _SDPA_SIG),)
    return ModuleSpec(f"sdpa_mma.d{head_dim}.{dtype}", "sdpa_mma", _program("sdpa.cu"), kernels,
                      (dtype,), min_cc=80)


#: Quantized matrix-vector products (qmv.cu): x dtypes, bit widths, columns per warp.
QMV_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32")
QMV_BITS: tuple[int, ...] = (2, 4, 8)
QMV_COLUMNS: tuple[int, ...] = (1, 2)
_QMV_SIG = ("ptr",) * 5 + ("i32", "i64", "i64", "i32", "i32")


def qmv_expression(dtype: str, bits: int, columns: int) -> str:
    return f"qmv_affine<{_ctype(dtype)}, {bits}, {columns}>"


_DEQUANT_SIG = ("ptr",) * 4 + ("i64", "i64", "i32")


def dequantize_expression(dtype: str, bits: int) -> str:
    return f"dequantize_affine<{_ctype(dtype)}, {bits}>"


@functools.lru_cache(maxsize=None)
def qmv_module(dtype: str) -> ModuleSpec:
    """quantized_matmul of a few rows against affine-quantized transposed weights, and the
    dequantization of packed weights for the larger products."""
    kernels = tuple(KernelSpec(qmv_expression(dtype, b, c), _QMV_SIG)
                    for b in QMV_BITS for c in QMV_COLUMNS)
    kernels += tuple(KernelSpec(dequantize_expression(dtype, b), _DEQUANT_SIG) for b in QMV_BITS)
    return ModuleSpec(f"qmv.{dtype}", "qmv", _program("qmv.cu"), kernels, (dtype,))


#: Dense products of a few rows against transposed weights (gemv.cu): dtypes, columns per warp.
GEMV_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32")
GEMV_COLUMNS: tuple[int, ...] = (1, 2)
_GEMV_SIG = ("ptr",) * 3 + ("i32", "i64", "i64", "i64", "i64", "i32")


def gemv_expression(dtype: str, columns: int) -> str:
    return f"gemv_t<{_ctype(dtype)}, {columns}>"


@functools.lru_cache(maxsize=None)
def gemv_module(dtype: str) -> ModuleSpec:
    """matmul of at most 8 rows by a transposed weight (x @ W.T, W (N, K)): decode's GEMMs."""
    kernels = tuple(KernelSpec(gemv_expression(dtype, c), _GEMV_SIG) for c in GEMV_COLUMNS)
    return ModuleSpec(f"gemv.{dtype}", "gemv", _program("gemv.cu"), kernels, (dtype,))


def fast_modules(dtypes: Sequence[str]) -> list[ModuleSpec]:
    modules = [f(d) for d in dtypes if d in FAST_DTYPES for f in (fast_norm_module, sdpa_module)]
    modules += [qmv_module(d) for d in dtypes if d in QMV_DTYPES]
    modules += [gemv_module(d) for d in dtypes if d in GEMV_DTYPES]
    modules += [sdpa_decode_module(d) for d in dtypes if d in FAST_DTYPES and d != "float64"]
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
            if op.arity == 1:
                modules.append(unary_module(name, d))
            else:
                modules += [binary_module(name, d), binary2d_module(name, d)]
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
    modules.append(copy_many_module())
    modules.extend(gemm_module(d) for d in dtypes if d in GEMM_DTYPES)
    modules.extend(gemm_mma_module(d) for d in dtypes if d in MMA_DTYPES)
    modules.extend(random_modules(dtypes))
    modules.extend(sort_modules(dtypes))
    modules.extend(reduce_modules(dtypes))
    modules.extend(fast_modules(dtypes))
    return modules


def shipped_modules(dtypes: Sequence[str] = COMMON_DTYPES) -> list[ModuleSpec]:
    """The built-in modules kernels_ptx/ holds: those whose code compute_70 PTX can carry."""
    return [spec for spec in builtin_modules(dtypes) if spec.min_cc <= SHIPPED_CC]


def find_module(name: str, dtypes: Iterable[str] = ALL_DTYPES) -> ModuleSpec | None:
    """The built-in module with this name, if any."""
    for spec in builtin_modules(tuple(dtypes)):
        if spec.name == name:
            return spec
    return None
