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


def _program(family_file: str, prelude: str = "") -> str:
    return (read_source("common.cuh") + "\n// ---- generated ----\n" + prelude + "\n"
            + read_source(family_file))


def _functor(op: optable.ElementwiseOp, family: str) -> str:
    if op.arity == 1:
        args, params = "a", "C a"
    else:
        args, params = "a, b", "C a, C b"
    expr = op.expression(family)
    return (f"// op {op.name} ({args}) for dtype family '{family}'\n"
            "struct Op {\n"
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
    return "bool" if op.result == "bool" else dtype


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
                      _program("unary.cu", _functor(op, family)), kernels, (dtype,))


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
                      _program("binary.cu", _functor(op, family)), kernels, (dtype,))


@functools.lru_cache(maxsize=None)
def where_module(dtype: str) -> ModuleSpec:
    t = _ctype(dtype)
    lay3 = f"bytes:{layout_bytes(3)}"
    sig = ("ptr", "ptr", "ptr", "ptr", "i64", lay3)
    kernels = (KernelSpec(f"where_strided<{t}, int32_t>", sig),
               KernelSpec(f"where_strided<{t}, int64_t>", sig))
    return ModuleSpec(f"where.{dtype}", "where", _program("where.cu"), kernels, (dtype,))


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
    return modules


def find_module(name: str, dtypes: Iterable[str] = ALL_DTYPES) -> ModuleSpec | None:
    """The built-in module with this name, if any."""
    for spec in builtin_modules(tuple(dtypes)):
        if spec.name == name:
            return spec
    return None
