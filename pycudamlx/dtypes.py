"""MLX's data types, type categories and promotion rules (``mx.float32``, ``mx.issubdtype`` ...).

Every rule here was checked against real MLX 0.32.4 (tests/test_dtypes.py compares them pair by
pair). Where MLX and numpy disagree, MLX wins: ``uint64 + int64 -> float32``, ``int64 + float16 ->
float16``, ``float64 + complex64 -> complex64``; a numpy float64 array becomes float32.

Everything an op needs on its hot path is a tuple or dict lookup built once at import:
``promote_types`` indexes a 14x14 table by ``Dtype.index``; ``scalar_result_dtype`` for a plain
Python scalar is one ``type()`` test and one tuple index.
"""

from __future__ import annotations

import enum
import operator
import sys
from typing import Any

# ml_dtypes (numpy's bfloat16) is imported only when something needs numpy's bfloat16: its C
# extension's init was most of ``import pycudamlx.core`` (~0.5 s of ~0.7 s on a 2-core machine,
# docs/install.md). See ``_load_bfloat16`` and ``Dtype.np_dtype``.
import numpy as np

__all__ = [
    "Dtype",
    "DtypeCategory",
    "bool_",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "generic",
    "number",
    "integer",
    "signedinteger",
    "unsignedinteger",
    "floating",
    "inexact",
    "complexfloating",
    "issubdtype",
    "isdtype",
    "finfo",
    "iinfo",
    "can_cast",
    "result_type",
]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


# ----------------------------------------------------------------------------------------------
# Small helpers for MLX-shaped error messages
# ----------------------------------------------------------------------------------------------


def _type_name(value: object) -> str:
    """The type name as MLX's errors print it: builtins and C types bare, others dotted."""
    value_type = type(value)
    is_heap_type = bool(value_type.__flags__ & (1 << 9))  # Py_TPFLAGS_HEAPTYPE
    module = value_type.__module__
    if not is_heap_type or module == "builtins":
        return value_type.__name__
    if module.startswith("pycudamlx.core") or module == __name__:
        return f"mlx.core.{value_type.__qualname__}"  # MLX's classes all live in mlx.core
    if module.startswith("pycudamlx."):
        module = "mlx." + module[len("pycudamlx."):]
    return f"{module}.{value_type.__qualname__}"


class _SelfArray:
    """Stands for the ``self`` of ``mx.array(...)`` in nanobind's 'Invoked with types' list."""


def _incompatible_arguments(signature: str, *args: object) -> TypeError:
    """The TypeError nanobind raises when an argument has the wrong type (MLX's wording)."""
    name = signature.split("(", 1)[0]
    invoked = ", ".join("mlx.core.array" if arg is _SelfArray else _type_name(arg)
                        for arg in args)
    return TypeError(
        f"{name}(): incompatible function arguments. The following argument types are supported:\n"
        f"    1. {signature}\n\nInvoked with types: {invoked}"
    )


def _bad_cast(detail: str) -> RuntimeError:
    """MLX surfaces C++'s ``std::bad_cast`` as a RuntimeError; keep its text and say why."""
    return RuntimeError(f"std::bad_cast ({detail})")


# ----------------------------------------------------------------------------------------------
# Dtype
# ----------------------------------------------------------------------------------------------


class Dtype:
    """The type of an array's elements; one immutable singleton per type (``mx.float32`` ...).

    Public, as in MLX:
        size:      bytes per element (``mx.float16.size == 2``).

    Internal, for the rest of pycudamlx:
        name:      ``"float32"``; ``"bool"`` for ``bool_`` (the name MLX prints).
        np_dtype:  the numpy dtype of host buffers (``ml_dtypes.bfloat16`` for bfloat16: the
                   first read imports ml_dtypes).
        c_type:    the CUDA C++ element type in kernels (``float``, ``__half``, ``complex64_t``).
        kind:      ``'b'`` bool, ``'u'`` unsigned, ``'i'`` signed, ``'f'`` floating, ``'c'``
                   complex.
        index:     0..13, MLX's own enum value (also ``hash(dtype)``, as in MLX); use it to index
                   tables such as ``ALL_DTYPES``.

    Dtypes are singletons: compare with ``is`` on hot paths. ``==`` is identity too, so
    ``mx.float32 == np.float32`` is False, as in MLX; ``mx.float32 == None`` (and ``!=``)
    raises TypeError, as MLX's does. Unlike MLX (which raises TypeError), pickle and copy
    return the same singleton, so arrays' metadata can cross processes.
    """

    # np_dtype is a property over the _np_dtype slot, which bfloat16 leaves unset until ml_dtypes
    # is imported. (A Dtype.__getattr__ for the unset slot would make every attribute read of
    # every Dtype unspecialised on Python 3.11, ~18 ns each, 3 of them per elementwise op.)
    __slots__ = ("size", "name", "_np_dtype", "c_type", "kind", "index", "_module_attr")

    size: int
    name: str
    c_type: str
    kind: str
    index: int

    def __new__(cls, *args: Any, **kwargs: Any) -> Dtype:
        raise TypeError("mlx.core.Dtype: no constructor defined!")

    @classmethod
    def _make(
        cls,
        index: int,
        name: str,
        size: int,
        np_dtype: Any,
        c_type: str,
        kind: str,
        module_attr: str,
    ) -> Dtype:
        """Build one of the 14 singletons; only this module calls it."""
        self = object.__new__(cls)
        for slot, value in (
            ("index", index),
            ("name", name),
            ("size", size),
            ("c_type", c_type),
            ("kind", kind),
            ("_module_attr", module_attr),
        ):
            object.__setattr__(self, slot, value)
        if np_dtype is not None:  # None: bfloat16, filled by _load_bfloat16
            object.__setattr__(self, "_np_dtype", np.dtype(np_dtype))
        return self

    @property
    def np_dtype(self) -> np.dtype:
        """The numpy dtype of host buffers; bfloat16's first read imports ml_dtypes."""
        try:
            return self._np_dtype
        except AttributeError:  # only bfloat16's slot is ever unset
            return _load_bfloat16()

    def __setattr__(self, attr: str, value: object) -> None:
        if attr == "size":
            raise AttributeError("property of 'Dtype' object has no setter")
        raise AttributeError(f"'Dtype' object has no attribute '{attr}'")

    def __delattr__(self, attr: str) -> None:
        self.__setattr__(attr, None)

    def __repr__(self) -> str:
        return f"mlx.core.{self.name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if other is None:  # MLX's binding rejects None here (even for !=); so do we
            raise _incompatible_arguments("__eq__(self, arg: object, /) -> bool", self, other)
        return self is other

    def __ne__(self, other: object) -> bool:
        if other is None:
            raise _incompatible_arguments("__eq__(self, arg: object, /) -> bool", self, other)
        return self is not other

    def __hash__(self) -> int:
        return self.index

    def __reduce__(self) -> str:
        # A string tells pickle (and copy) "the module global of this name": the same singleton.
        return self._module_attr

    def __copy__(self) -> Dtype:
        return self

    def __deepcopy__(self, memo: dict) -> Dtype:
        return self


# index order = MLX's Dtype::Val enum, so hash(dtype) matches MLX's.
bool_ = Dtype._make(0, "bool", 1, np.bool_, "bool", "b", "bool_")
uint8 = Dtype._make(1, "uint8", 1, np.uint8, "uint8_t", "u", "uint8")
uint16 = Dtype._make(2, "uint16", 2, np.uint16, "uint16_t", "u", "uint16")
uint32 = Dtype._make(3, "uint32", 4, np.uint32, "uint32_t", "u", "uint32")
uint64 = Dtype._make(4, "uint64", 8, np.uint64, "uint64_t", "u", "uint64")
int8 = Dtype._make(5, "int8", 1, np.int8, "int8_t", "i", "int8")
int16 = Dtype._make(6, "int16", 2, np.int16, "int16_t", "i", "int16")
int32 = Dtype._make(7, "int32", 4, np.int32, "int32_t", "i", "int32")
int64 = Dtype._make(8, "int64", 8, np.int64, "int64_t", "i", "int64")
float16 = Dtype._make(9, "float16", 2, np.float16, "__half", "f", "float16")
float32 = Dtype._make(10, "float32", 4, np.float32, "float", "f", "float32")
float64 = Dtype._make(11, "float64", 8, np.float64, "double", "f", "float64")
bfloat16 = Dtype._make(12, "bfloat16", 2, None, "__nv_bfloat16", "f", "bfloat16")
complex64 = Dtype._make(13, "complex64", 8, np.complex64, "complex64_t", "c", "complex64")

#: Every dtype, ``ALL_DTYPES[d.index] is d``.
ALL_DTYPES: tuple[Dtype, ...] = (
    bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
    float16, float32, float64, bfloat16, complex64,
)  # fmt: skip
assert all(dtype.index == position for position, dtype in enumerate(ALL_DTYPES))

_DTYPES_BY_NAME: dict[str, Dtype] = {dtype.name: dtype for dtype in ALL_DTYPES}


def dtype_from_name(name: str) -> Dtype:
    """The dtype called ``name`` ("float32", "bool"), for serialised metadata; KeyError if none."""
    return _DTYPES_BY_NAME[name]


# ----------------------------------------------------------------------------------------------
# Promotion
# ----------------------------------------------------------------------------------------------

_SHORT_NAMES: dict[str, Dtype] = {
    "b": bool_, "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64,
    "i8": int8, "i16": int16, "i32": int32, "i64": int64,
    "f16": float16, "f32": float32, "f64": float64, "bf16": bfloat16, "c64": complex64,
}  # fmt: skip

# MLX 0.32.4's promotion table, read off the real library: row = left, column = right, both in
# index order. Every cell is checked against MLX by tests/test_dtypes.py.
#          b   u8  u16  u32  u64   i8  i16  i32  i64  f16  f32  f64 bf16  c64
_PROMOTION_ROWS = (
    "      b   u8  u16  u32  u64   i8  i16  i32  i64  f16  f32  f64 bf16  c64",  # b
    "     u8   u8  u16  u32  u64  i16  i16  i32  i64  f16  f32  f64 bf16  c64",  # u8
    "    u16  u16  u16  u32  u64  i32  i32  i32  i64  f16  f32  f64 bf16  c64",  # u16
    "    u32  u32  u32  u32  u64  i64  i64  i64  i64  f16  f32  f64 bf16  c64",  # u32
    "    u64  u64  u64  u64  u64  f32  f32  f32  f32  f16  f32  f64 bf16  c64",  # u64
    "     i8  i16  i32  i64  f32   i8  i16  i32  i64  f16  f32  f64 bf16  c64",  # i8
    "    i16  i16  i32  i64  f32  i16  i16  i32  i64  f16  f32  f64 bf16  c64",  # i16
    "    i32  i32  i32  i64  f32  i32  i32  i32  i64  f16  f32  f64 bf16  c64",  # i32
    "    i64  i64  i64  i64  f32  i64  i64  i64  i64  f16  f32  f64 bf16  c64",  # i64
    "    f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f64  f32  c64",  # f16
    "    f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  f32  c64",  # f32
    "    f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c64",  # f64
    "   bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16  f32  f32  f64 bf16  c64",  # bf16
    "    c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64",  # c64
)
_PROMOTION_TABLE: tuple[tuple[Dtype, ...], ...] = tuple(
    tuple(_SHORT_NAMES[cell] for cell in row.split()) for row in _PROMOTION_ROWS
)


def promote_types(a: Dtype, b: Dtype) -> Dtype:
    """The dtype of a binary op on arrays of dtypes ``a`` and ``b`` (MLX's table, not numpy's).

    Not symmetric-safe to fold in any order: MLX folds left, e.g. (uint64, int8, float16) gives
    float32 but (uint64, (int8, float16)) would give float16. No type checks: hot path.
    """
    return _PROMOTION_TABLE[a.index][b.index]


def _dtype_of_array_or_dtype(value: object) -> Dtype | None:
    """``value`` itself if a Dtype, ``value.dtype`` if it is an array with one, else None."""
    if type(value) is Dtype:
        return value
    dtype = getattr(value, "dtype", None)
    return dtype if type(dtype) is Dtype else None


def result_type(*arrays_and_dtypes: Any) -> Dtype:
    """``mx.result_type``: promote arrays' and dtypes' types, left to right as MLX does.

    Python scalars, numpy arrays and numpy dtypes are rejected with ValueError, as in MLX.
    """
    if not arrays_and_dtypes:
        raise ValueError("[result_type] At least one array or dtype is required.")
    result: Dtype | None = None
    for item in arrays_and_dtypes:
        dtype = _dtype_of_array_or_dtype(item)
        if dtype is None:
            raise ValueError("[result_type] Inputs must be arrays or dtypes.")
        result = dtype if result is None else _PROMOTION_TABLE[result.index][dtype.index]
    assert result is not None
    return result


_CAN_CAST_SIGNATURE = "can_cast(from_: array | Dtype, to: Dtype) -> bool"


def can_cast(from_: Any, to: Dtype) -> bool:
    """``mx.can_cast``: True when promoting ``from_`` (array or dtype) with ``to`` gives ``to``."""
    if from_ is None or type(to) is not Dtype:
        raise _incompatible_arguments(_CAN_CAST_SIGNATURE, from_, to)
    from_dtype = _dtype_of_array_or_dtype(from_)
    if from_dtype is None:
        raise ValueError("[can_cast] `from_` must be an array or a dtype.")
    return _PROMOTION_TABLE[from_dtype.index][to.index] is to


# ----------------------------------------------------------------------------------------------
# Categories
# ----------------------------------------------------------------------------------------------


class DtypeCategory(enum.Enum):
    """MLX's abstract type categories (``mx.floating`` ...), for ``issubdtype``.

    Same names, values and order as MLX; a plain Enum (not an int) whose repr and str are both
    ``DtypeCategory.floating``, as MLX prints them.
    """

    complexfloating = 0
    floating = 1
    inexact = 2
    signedinteger = 3
    unsignedinteger = 4
    integer = 5
    number = 6
    generic = 7

    def __repr__(self) -> str:
        return f"DtypeCategory.{self.name}"

    __str__ = __repr__


complexfloating = DtypeCategory.complexfloating
floating = DtypeCategory.floating
inexact = DtypeCategory.inexact
signedinteger = DtypeCategory.signedinteger
unsignedinteger = DtypeCategory.unsignedinteger
integer = DtypeCategory.integer
number = DtypeCategory.number
generic = DtypeCategory.generic

_CATEGORY_PARENT: dict[DtypeCategory, DtypeCategory | None] = {
    complexfloating: inexact,
    floating: inexact,
    inexact: number,
    signedinteger: integer,
    unsignedinteger: integer,
    integer: number,
    number: generic,
    generic: None,
}
# The most specific category of each kind; bool sits directly under generic, as in MLX.
_KIND_CATEGORY = {
    "b": generic,
    "u": unsignedinteger,
    "i": signedinteger,
    "f": floating,
    "c": complexfloating,
}


def _category_and_ancestors(category: DtypeCategory) -> frozenset[DtypeCategory]:
    ancestors: set[DtypeCategory] = set()
    current: DtypeCategory | None = category
    while current is not None:
        ancestors.add(current)
        current = _CATEGORY_PARENT[current]
    return frozenset(ancestors)


# issubdtype over the 14 dtypes (keys 0..13) and 8 categories (keys 14 + value), as one table.
_N_DTYPES = len(ALL_DTYPES)
_CATEGORIES_BY_VALUE = tuple(sorted(DtypeCategory, key=lambda category: category.value))


def _build_subtype_table() -> tuple[tuple[bool, ...], ...]:
    def supertypes(key: int) -> frozenset[object]:
        if key < _N_DTYPES:
            dtype = ALL_DTYPES[key]
            return frozenset({dtype}) | _category_and_ancestors(_KIND_CATEGORY[dtype.kind])
        return _category_and_ancestors(_CATEGORIES_BY_VALUE[key - _N_DTYPES])

    everything: tuple[object, ...] = ALL_DTYPES + _CATEGORIES_BY_VALUE
    return tuple(
        tuple(candidate in supertypes(key) for candidate in everything)
        for key in range(len(everything))
    )


_SUBTYPE_TABLE = _build_subtype_table()
_ISSUBDTYPE_SIGNATURE = (
    "issubdtype(arg1: Dtype | DtypeCategory, arg2: Dtype | DtypeCategory) -> bool"
)


#: Table keys of the categories by identity (an Enum's ``.value`` and ``__hash__`` are Python
#: level calls; mlx.nn asks issubdtype of every parameter it loads or updates).
_CATEGORY_KEYS = {id(c): _N_DTYPES + c.value for c in DtypeCategory}


def _subtype_key(value: object) -> int | None:
    if type(value) is Dtype:
        return value.index
    if type(value) is DtypeCategory:
        return _CATEGORY_KEYS[id(value)]
    return None


def issubdtype(arg1: Dtype | DtypeCategory, arg2: Dtype | DtypeCategory, /) -> bool:
    """``mx.issubdtype``: is ``arg1`` (a dtype or category) equal to or under ``arg2``?

    A dtype is only a subtype of itself and of its categories; a category is never a subtype
    of a dtype. numpy types and strings are rejected with ValueError, as in MLX.
    """
    if arg1 is None or arg2 is None:
        raise _incompatible_arguments(_ISSUBDTYPE_SIGNATURE, arg1, arg2)
    key1 = _subtype_key(arg1)
    if key1 is None:
        raise ValueError("[issubdtype] Received invalid type for first input.")
    key2 = _subtype_key(arg2)
    if key2 is None:
        raise ValueError("[issubdtype] Received invalid type for second input.")
    return _SUBTYPE_TABLE[key1][key2]


# The Array API kind names MLX's isdtype accepts, as sets of Dtype.kind letters.
_ISDTYPE_KINDS: dict[str, frozenset[str]] = {
    "bool": frozenset("b"),
    "signed integer": frozenset("i"),
    "unsigned integer": frozenset("u"),
    "integral": frozenset("ui"),
    "real floating": frozenset("f"),
    "complex floating": frozenset("c"),
    "numeric": frozenset("uifc"),
}
_ISDTYPE_SIGNATURE = "isdtype(dtype: Dtype, kind: Dtype | str | tuple[Dtype | str, ...]) -> bool"
_ISDTYPE_BAD_KIND = "[isdtype] `kind` must be a dtype, a string, or a tuple of dtypes and strings."


def _matches_kind(dtype: Dtype, kind: object) -> bool:
    if type(kind) is Dtype:
        return kind is dtype
    if isinstance(kind, str):
        letters = _ISDTYPE_KINDS.get(kind)
        if letters is None:
            raise ValueError(f"[isdtype] Unknown data type kind: '{kind}'.")
        return dtype.kind in letters
    raise ValueError(_ISDTYPE_BAD_KIND)


def isdtype(dtype: Dtype, kind: Dtype | str | tuple[Dtype | str, ...]) -> bool:
    """``mx.isdtype`` (Array API): does ``dtype`` match a dtype, a kind name, or any in a tuple?

    A tuple is checked left to right and stops at the first match, so a bad entry after a
    match is not reported, exactly as in MLX. Lists and categories are rejected (ValueError).
    """
    if type(dtype) is not Dtype or kind is None:
        raise _incompatible_arguments(_ISDTYPE_SIGNATURE, dtype, kind)
    if isinstance(kind, tuple):
        for entry in kind:
            if type(entry) is not Dtype and not isinstance(entry, str):
                raise ValueError(_ISDTYPE_BAD_KIND)
            if _matches_kind(dtype, entry):
                return True
        return False
    return _matches_kind(dtype, kind)


# ----------------------------------------------------------------------------------------------
# finfo / iinfo
# ----------------------------------------------------------------------------------------------


def _float_limits(np_type: Any) -> tuple[int, float, float, float]:
    info = np.finfo(np_type)
    return int(info.bits), float(info.eps), float(info.max), float(info.smallest_normal)


# bfloat16's limits, exactly: 8 exponent bits as float32's, 7 explicit mantissa bits. Written
# out so that mx.finfo(mx.bfloat16) needs no ml_dtypes; tests/test_dtypes.py compares them with
# MLX's, tests/test_lazy_ml_dtypes.py with ml_dtypes.finfo.
_BFLOAT16_LIMITS = (16, 2.0**-7, (2.0 - 2.0**-7) * 2.0**127, 2.0**-126)


# dtype.index -> (dtype reported by finfo, bits, eps, max, smallest_normal); complex64 reports
# its float32 components, as MLX does.
_FINFO_DATA: dict[int, tuple[Dtype, int, float, float, float]] = {
    float16.index: (float16, *_float_limits(np.float16)),
    bfloat16.index: (bfloat16, *_BFLOAT16_LIMITS),
    float32.index: (float32, *_float_limits(np.float32)),
    float64.index: (float64, *_float_limits(np.float64)),
    complex64.index: (float32, *_float_limits(np.float32)),
}


class finfo:  # noqa: N801 - MLX's name
    """``mx.finfo(dtype)``: limits of an inexact dtype, as Python ints and floats.

    Attributes (read-only): ``bits``, ``dtype``, ``eps``, ``max``, ``min``, ``smallest_normal``.
    ``finfo(complex64)`` describes its float32 parts. A non-inexact dtype raises ValueError.
    """

    __slots__ = ("_dtype", "_bits", "_eps", "_max", "_smallest_normal")

    def __init__(self, dtype: Dtype, /) -> None:
        if type(dtype) is not Dtype:
            raise _incompatible_arguments(
                "__init__(self, arg: mlx.core.Dtype, /) -> None", self, dtype
            )
        data = _FINFO_DATA.get(dtype.index)
        if data is None:
            raise ValueError(f"[finfo] dtype {dtype.name} is not inexact.")
        self._dtype, self._bits, self._eps, self._max, self._smallest_normal = data

    @property
    def bits(self) -> int:
        """Bits per value."""
        return self._bits

    @property
    def dtype(self) -> Dtype:
        """The (real) dtype described."""
        return self._dtype

    @property
    def eps(self) -> float:
        """Distance from 1.0 to the next larger representable number."""
        return self._eps

    @property
    def max(self) -> float:
        """Largest finite value."""
        return self._max

    @property
    def min(self) -> float:
        """Most negative finite value."""
        return -self._max

    @property
    def smallest_normal(self) -> float:
        """Smallest positive normal value."""
        return self._smallest_normal

    def __repr__(self) -> str:
        # MLX prints through a C++ stream with 6 significant digits: '%g'.
        return f"finfo(min={-self._max:g}, max={self._max:g}, dtype={self._dtype.name})"

    __str__ = __repr__


_IINFO_DATA: dict[int, tuple[int, int]] = {
    dtype.index: (int(np.iinfo(dtype.np_dtype).min), int(np.iinfo(dtype.np_dtype).max))
    for dtype in ALL_DTYPES
    if dtype.kind in "ui"
}


class iinfo:  # noqa: N801 - MLX's name
    """``mx.iinfo(dtype)``: ``min``, ``max`` (Python ints) and ``dtype`` of an integer dtype."""

    __slots__ = ("_dtype", "_min", "_max")

    def __init__(self, dtype: Dtype, /) -> None:
        if type(dtype) is not Dtype:
            raise _incompatible_arguments(
                "__init__(self, arg: mlx.core.Dtype, /) -> None", self, dtype
            )
        limits = _IINFO_DATA.get(dtype.index)
        if limits is None:
            raise ValueError(f"[iinfo] Only integer types supported but {dtype.name} was provided")
        self._dtype = dtype
        self._min, self._max = limits

    @property
    def dtype(self) -> Dtype:
        """The integer dtype described."""
        return self._dtype

    @property
    def min(self) -> int:
        """Smallest value."""
        return self._min

    @property
    def max(self) -> int:
        """Largest value."""
        return self._max

    def __repr__(self) -> str:
        return f"iinfo(min={self._min}, max={self._max}, dtype={self._dtype.name})"

    __str__ = __repr__


# ----------------------------------------------------------------------------------------------
# Conversions from Python and numpy
# ----------------------------------------------------------------------------------------------

_NATIVE_BYTEORDER = "<" if sys.byteorder == "little" else ">"

# numpy dtype -> the MLX dtype ``mx.array`` gives it: float64 -> float32, complex128 -> complex64.
# bfloat16's numpy dtype joins this table and the next in _load_bfloat16.
_NUMPY_TO_DTYPE: dict[np.dtype, Dtype] = {
    dtype.np_dtype: dtype for dtype in ALL_DTYPES if dtype is not bfloat16}
_NUMPY_TO_DTYPE[np.dtype(np.float64)] = float32
_NUMPY_TO_DTYPE[np.dtype(np.complex128)] = complex64

# numpy dtype -> the Dtype with exactly that numpy dtype (the inverse of Dtype.np_dtype).
_NUMPY_EXACT_TO_DTYPE: dict[np.dtype, Dtype] = {
    dtype.np_dtype: dtype for dtype in ALL_DTYPES if dtype is not bfloat16}

# numpy dtypes that MLX's bindings accept as a buffer (nanobind's ndarray caster): bfloat16 is
# not one (numpy cannot export it through the buffer protocol).
_BUFFER_NUMPY_DTYPES: frozenset[np.dtype] = frozenset(_NUMPY_TO_DTYPE)

# Called with numpy's bfloat16 dtype once ml_dtypes is imported (see on_bfloat16_loaded).
_BFLOAT16_LISTENERS: list[Any] = []


def _load_bfloat16() -> np.dtype:
    """Import ml_dtypes (~0.5 s: its extension registers numpy's bfloat16 and many ufunc loops)
    and give bfloat16 its numpy dtype: the ``np_dtype`` slot, the numpy-to-Dtype tables, and
    every on_bfloat16_loaded listener. Runs on bfloat16's first ``np_dtype`` read, or when a
    caller hands us a numpy dtype we do not know while ml_dtypes is imported (their array may be
    bfloat16). Idempotent, so two threads may both run it."""
    import ml_dtypes

    np_bf16 = np.dtype(ml_dtypes.bfloat16)
    if getattr(bfloat16, "_np_dtype", None) is not np_bf16:
        _NUMPY_TO_DTYPE[np_bf16] = bfloat16
        _NUMPY_EXACT_TO_DTYPE[np_bf16] = bfloat16
        object.__setattr__(bfloat16, "_np_dtype", np_bf16)
        for listener in tuple(_BFLOAT16_LISTENERS):
            listener(np_bf16)
    return np_bf16


def _bfloat16_pending() -> bool:
    """ml_dtypes is imported (so a caller's numpy dtype may be its bfloat16) and _load_bfloat16
    has not run yet. A caller's array can be bfloat16 only once ml_dtypes is imported: we never
    import it just to answer "not bfloat16"."""
    return "ml_dtypes" in sys.modules and not hasattr(bfloat16, "_np_dtype")


def on_bfloat16_loaded(listener: Any) -> None:
    """Call ``listener(numpy_bfloat16_dtype)`` when bfloat16 gets its numpy dtype: now if
    _load_bfloat16 has run, else from it. For modules that keep numpy's bfloat16 in a set or a
    table built at import: no bfloat16 numpy array reaches pycudamlx's code before that."""
    _BFLOAT16_LISTENERS.append(listener)
    np_bf16 = getattr(bfloat16, "_np_dtype", None)
    if np_bf16 is not None:
        listener(np_bf16)

# buffer-protocol format codes MLX accepts from non-numpy objects (bytes, array.array ...).
_BUFFER_FORMAT_TO_DTYPE: dict[str, Dtype] = {
    "?": bool_, "b": int8, "B": uint8, "h": int16, "H": uint16, "i": int32, "I": uint32,
    "e": float16, "f": float32, "d": float32, "Zf": complex64, "Zd": complex64,
}  # fmt: skip
for _code in ("l", "q"):
    _BUFFER_FORMAT_TO_DTYPE[_code] = _NUMPY_TO_DTYPE[np.dtype(_code)]
    _BUFFER_FORMAT_TO_DTYPE[_code.upper()] = _NUMPY_TO_DTYPE[np.dtype(_code.upper())]
for _code in list(_BUFFER_FORMAT_TO_DTYPE):
    for _prefix in ("@", "=", _NATIVE_BYTEORDER):
        _BUFFER_FORMAT_TO_DTYPE[_prefix + _code] = _BUFFER_FORMAT_TO_DTYPE[_code]


def dtype_from_numpy(np_dtype: Any) -> Dtype:
    """The dtype ``mx.array`` gives a numpy array of ``np_dtype`` (float64 -> float32).

    Accepts a numpy dtype or anything ``np.dtype()`` accepts (``np.int64``, ``ml_dtypes.bfloat16``).
    Types MLX cannot hold (object, str, datetime, longdouble, non-native byte order) raise
    RuntimeError("std::bad_cast ..."), the class and text MLX raises.
    """
    dtype = _NUMPY_TO_DTYPE.get(np_dtype) if isinstance(np_dtype, np.dtype) else None
    if dtype is not None:
        return dtype
    try:
        normalised = np.dtype(np_dtype)
    except TypeError as exc:
        raise _bad_cast(f"{np_dtype!r} is not a numpy dtype") from exc
    dtype = _NUMPY_TO_DTYPE.get(normalised)
    if dtype is None and _bfloat16_pending():
        _load_bfloat16()
        dtype = _NUMPY_TO_DTYPE.get(normalised)
    if dtype is None:
        raise _bad_cast(f"numpy dtype {normalised} has no MLX equivalent")
    return dtype


def exact_dtype_from_numpy(np_dtype: Any) -> Dtype:
    """The Dtype whose ``np_dtype`` is exactly ``np_dtype`` (float64 -> float64), for wrapping
    host results computed by numpy; complex128 and other types MLX lacks raise TypeError."""
    dtype = _NUMPY_EXACT_TO_DTYPE.get(np_dtype) if isinstance(np_dtype, np.dtype) else None
    if dtype is not None:
        return dtype
    dtype = _NUMPY_EXACT_TO_DTYPE.get(np.dtype(np_dtype))
    if dtype is None and _bfloat16_pending():
        _load_bfloat16()
        dtype = _NUMPY_EXACT_TO_DTYPE.get(np.dtype(np_dtype))
    if dtype is None:
        raise TypeError(f"numpy dtype {np.dtype(np_dtype)} has no exact MLX equivalent")
    return dtype


def _python_int_dtype(value: int) -> Dtype:
    """MLX's default for a Python int: int32 if it fits, else int64, else std::bad_cast."""
    if _INT32_MIN <= value <= _INT32_MAX:
        return int32
    if _INT64_MIN <= value <= _INT64_MAX:
        return int64
    raise _bad_cast(f"Python int {value} does not fit in int64")


_PYTHON_SCALAR_DEFAULTS: dict[type, Dtype] = {bool: bool_, float: float32, complex: complex64}


def dtype_from_python(value: bool | int | float | complex | np.generic) -> Dtype:
    """The dtype ``mx.array(value)`` gives a scalar: bool -> bool_, int -> int32 (int64 beyond
    int32's range; RuntimeError beyond int64's), float -> float32, complex -> complex64, and a
    numpy scalar its ``dtype_from_numpy`` type (np.float64 -> float32, np.int64 -> int64).

    Sequences are the array constructor's business; other objects raise MLX's errors.
    """
    value_type = type(value)
    if value_type is int:
        return _python_int_dtype(value)  # type: ignore[arg-type]
    dtype = _PYTHON_SCALAR_DEFAULTS.get(value_type)
    if dtype is not None:
        return dtype
    if isinstance(value, np.generic):
        return dtype_from_numpy(value.dtype)
    if isinstance(value, int):  # IntEnum and other int subclasses (bool is handled above)
        return _python_int_dtype(int(value))
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex64
    if value is None:
        raise _incompatible_arguments(
            "__init__(self: array, val: scalar | list | tuple | DLPackCompatible | array, "
            "dtype: Dtype | None = None)",
            _SelfArray, value,
        )
    raise ValueError(f"Invalid type {_type_name(value)} received in array initialization.")


def to_dtype(value: object, func_name: str = "function") -> Dtype:
    """Check a ``dtype=`` argument: MLX accepts only ``mx`` dtypes, so numpy types (np.float32),
    strings and categories raise TypeError ("incompatible function arguments"), as in MLX.
    The caller maps None to its own default before calling."""
    if type(value) is Dtype:
        return value
    raise TypeError(
        f"{func_name}(): incompatible function arguments: dtype must be a mlx.core.Dtype "
        f"(such as mx.float32), not {_type_name(value)} {value!r}"
    )


# ----------------------------------------------------------------------------------------------
# Weak Python scalars in binary ops
# ----------------------------------------------------------------------------------------------

# array dtype -> result dtype of ``array op <Python float>``: floating arrays keep their dtype,
# the rest promote with float32 (complex64 stays complex64).
_FLOAT_SCALAR_RESULT: tuple[Dtype, ...] = tuple(
    dtype if dtype.kind == "f" else _PROMOTION_TABLE[dtype.index][float32.index]
    for dtype in ALL_DTYPES
)
# array dtype -> result dtype of ``array op <Python int>``: bool arrays become int32.
_INT_SCALAR_RESULT: tuple[Dtype, ...] = tuple(
    int32 if dtype is bool_ else dtype for dtype in ALL_DTYPES
)


def _int_scalar_bounds(dtype: Dtype) -> tuple[int, int]:
    """The range a Python int must lie in for ``array op int``: the dtype's own for integer
    types narrower than 64 bits (MLX checks those), else int64's (beyond it MLX cannot convert)."""
    if dtype.kind in "ui" and dtype.size < 8:
        return _IINFO_DATA[dtype.index]
    return _INT64_MIN, _INT64_MAX


# array dtype -> (min, max, result dtype) for ``array op <Python int>``.
_INT_SCALAR_RULES: tuple[tuple[int, int, Dtype], ...] = tuple(
    (*_int_scalar_bounds(dtype), _INT_SCALAR_RESULT[dtype.index]) for dtype in ALL_DTYPES
)


def _int_scalar_result(array_dtype: Dtype, value: int) -> Dtype:
    """Result dtype of ``array op int``, raising MLX's errors for ints it cannot convert."""
    low, high, result = _INT_SCALAR_RULES[array_dtype.index]
    if low <= value <= high:
        return result
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _bad_cast(f"Python int {value} does not fit in int64")
    raise ValueError(f"Converting {value} to {array_dtype.name} would result in overflow.")


def _converts_like_complex(value: object) -> bool:
    """Whether MLX's bindings would read ``value`` as a complex number (nanobind's complex
    caster): objects with ``.imag`` or ``__complex__`` that ``complex()`` accepts, or ones with
    ``__float__`` or ``__index__`` (Fraction, Decimal, numpy longdouble, ml_dtypes scalars, 0-d
    arrays, a user's class...). A conversion that raises (any exception) or returns a non-number
    means "not a number", as for nanobind; ``__int__`` alone is not enough (as in MLX)."""
    if isinstance(value, (str, bytes, bytearray)):
        return False
    try:
        value_type = type(value)
        if hasattr(value, "imag") or hasattr(value_type, "__complex__"):
            complex(value)  # type: ignore[arg-type]
            return True
        if hasattr(value_type, "__float__"):
            float(value)  # type: ignore[arg-type]
            return True
        if hasattr(value_type, "__index__"):
            operator.index(value)
            return True
    except Exception:  # noqa: BLE001 - nanobind's caster clears any error: "not a complex"
        return False
    return False


def odd_number(value: object) -> complex | None:
    """``complex(value)`` for an operand that is no array, Python number, numpy value, buffer
    or sequence but that MLX's bindings read as a (complex) scalar: an object with
    ``__complex__``, ``__float__`` or ``__index__`` (a user's class, a mock, Fraction, Decimal);
    None for anything else. Callers take this slow path only for such unusual operands."""
    if value is None or isinstance(value, (str, bytes, bytearray, list, tuple, dict, np.ndarray,
                                           np.generic, int, float, complex)):
        return None
    value_type = type(value)
    if getattr(value_type, "__mlx_array__", None) is not None or type(
            getattr(value, "dtype", None)) is Dtype or _buffer_dtype(value) is not None:
        return None
    if not _converts_like_complex(value):
        return None
    try:
        return complex(value)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a conversion that changed its mind: not a number
        return None


def _buffer_dtype(value: object) -> Dtype | None:
    """The dtype MLX reads from a numpy array/scalar or buffer-protocol object, None if it
    would not accept it as a buffer (bfloat16, object, str, byte-swapped ...)."""
    if isinstance(value, (np.ndarray, np.generic)):
        np_dtype = value.dtype
        return _NUMPY_TO_DTYPE[np_dtype] if np_dtype in _BUFFER_NUMPY_DTYPES else None
    try:
        view = memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        return None
    with view:
        return _BUFFER_FORMAT_TO_DTYPE.get(view.format)


def scalar_result_dtype(array_dtype: Dtype, scalar: object, op_name: str | None = None) -> Dtype:
    """The dtype of ``array op scalar`` (either order) when only one operand is an array.

    MLX treats the scalar as weak (it does not widen the array's type):
      * bool -> the array's dtype;
      * int -> the array's dtype, bool arrays -> int32; an int that does not fit a <=32-bit
        integer array's dtype raises ValueError("Converting 300 to uint8 would result in
        overflow."), one beyond int64 RuntimeError("std::bad_cast ...");
      * float (np.float64 too) -> floating arrays keep their dtype, integer and bool arrays
        -> float32, complex64 stays;
      * complex (np.complex128 too) -> complex64;
      * a numpy scalar or array (np.int64(3), np.float32(2.5)), bytes or another buffer ->
        the array's dtype: MLX casts the value to the array's type, so
        ``int32_array + np.float32(2.5)`` is int32 (and adds 2);
      * other numbers MLX reads as complex (Fraction, Decimal, np.longdouble, ml_dtypes
        scalars such as a bfloat16 scalar, 0-d arrays it cannot buffer) -> complex64.
    Anything else raises ValueError: for the function form (``mx.add(a, "x")``, op_name None)
    "Invalid type str received in array initialization."; for an operator (``a + "x"``, pass
    op_name="addition") "Cannot perform addition on an mlx.core.array and str". (MLX's ``==``
    and ``!=`` return False / True for such operands instead; that is the caller's business.)
    An operand that is itself an array (has a Dtype ``.dtype``) promotes normally.
    """
    scalar_type = type(scalar)
    if scalar_type is float:
        return _FLOAT_SCALAR_RESULT[array_dtype.index]
    if scalar_type is int:
        low, high, result = _INT_SCALAR_RULES[array_dtype.index]
        if low <= scalar <= high:  # type: ignore[operator]
            return result
        return _int_scalar_result(array_dtype, scalar)  # type: ignore[arg-type]  # raises
    if scalar_type is bool:
        return array_dtype
    if scalar_type is complex:
        return complex64
    if scalar_type in _NUMPY_SCALAR_TYPES_CAST_TO_ARRAY:
        return array_dtype
    if scalar_type is np.float64:  # common (x * np.sqrt(2.0)); a float subclass, so weak
        return _FLOAT_SCALAR_RESULT[array_dtype.index]
    return _scalar_result_dtype_general(array_dtype, scalar, op_name)


# numpy scalar types MLX casts to the other operand's dtype (np.float64 and np.complex128 are
# Python float/complex subclasses, hence weak scalars instead; bfloat16 scalars read as complex).
_NUMPY_SCALAR_TYPES_CAST_TO_ARRAY: frozenset[type] = frozenset(
    np_dtype.type
    for np_dtype in _BUFFER_NUMPY_DTYPES
    if not issubclass(np_dtype.type, (float, complex))
)


def _scalar_result_dtype_general(array_dtype: Dtype, scalar: object, op_name: str | None) -> Dtype:
    """The slow path of scalar_result_dtype: subclasses, numpy values, buffers, odd numbers."""
    if scalar is None:
        raise TypeError("incompatible function arguments: None is not a scalar or array")
    other_dtype = getattr(scalar, "dtype", None)
    if type(other_dtype) is Dtype:
        return _PROMOTION_TABLE[array_dtype.index][other_dtype.index]
    if isinstance(scalar, int):  # int subclasses; bool cannot be subclassed
        return _int_scalar_result(array_dtype, int(scalar))
    if isinstance(scalar, float):  # np.float64 is a float: weak, like a Python float
        return _FLOAT_SCALAR_RESULT[array_dtype.index]
    if _buffer_dtype(scalar) is not None:
        return array_dtype
    if isinstance(scalar, complex) or _converts_like_complex(scalar):
        return complex64
    if op_name is None:
        raise ValueError(f"Invalid type {_type_name(scalar)} received in array initialization.")
    raise ValueError(f"Cannot perform {op_name} on an mlx.core.array and {_type_name(scalar)}")


def operand_dtype(value: object) -> Dtype:
    """The dtype a non-array operand of a binary op gets when neither operand is an array
    (``mx.add(np.uint8(1), 1)``): each converts on its own and the two then promote.

    Python scalars as ``dtype_from_python``; numpy arrays/scalars and buffers as
    ``dtype_from_numpy``; other numbers MLX reads as complex -> complex64; anything else
    raises ValueError("Invalid type <type> received in array initialization.").
    """
    value_type = type(value)
    if value_type is int:
        return _python_int_dtype(value)  # type: ignore[arg-type]
    dtype = _PYTHON_SCALAR_DEFAULTS.get(value_type)
    if dtype is not None:
        return dtype
    if value is None:
        raise TypeError("incompatible function arguments: None is not a scalar or array")
    other_dtype = getattr(value, "dtype", None)
    if type(other_dtype) is Dtype:
        return other_dtype
    if isinstance(value, int):
        return _python_int_dtype(int(value))
    if isinstance(value, float):
        return float32
    dtype = _buffer_dtype(value)
    if dtype is not None:
        return dtype
    if isinstance(value, complex) or _converts_like_complex(value):
        return complex64
    raise ValueError(f"Invalid type {_type_name(value)} received in array initialization.")

#: Dtypes by their ``name`` ("bool", "float32", ...), for the kernel registry and backends.
by_name: dict[str, Dtype] = _DTYPES_BY_NAME
