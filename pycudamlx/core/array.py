"""The ``mx.array`` class: a lazy node until evaluated, then a strided view of its data.

An array built by an op holds its primitive, inputs and stream; ``mx.eval`` (or anything that
needs values: ``item``, ``tolist``, numpy conversion, printing, ``bool``) evaluates it. Evaluated
data is a numpy array (CPU) or a GpuArray (managed or device memory); either backend reads the
other's data transparently.

Operators and methods are thin forwards to the op functions of ``pycudamlx.core`` looked up at
call time, so a method starts working as soon as its op lands; a missing op raises
NotImplementedError (a RuntimeError) naming it.

In-place operators (``a += b``) and ``a[i] = v`` follow MLX: the array object itself takes the new
value, so every Python reference to it sees the update, while graph nodes built from it before
keep reading the old value. To make that possible each array remembers (weakly) the nodes built
on it (``_cons``), and an in-place update re-points the ones still pending to a node holding the
old value (``_overwrite``). Build arrays through ``make``/``make_multi``/``from_data`` only.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph import evaluate as _graph_eval
from ..graph import node as _node
from ..graph.evaluate import evaluate, to_numpy
from ..graph.primitive import OutSpec, Primitive
from . import _compile_trace
from . import device as dev
from ._conversion import convert as _convert_value

__all__ = ["array", "ArrayIterator", "ArrayLike"]

_ref = weakref.ref


class _Siblings:
    """Outputs of one multi-output node (weak, so no reference cycle keeps buffers alive).

    The group, not each output, is what its inputs list as their consumer (``_cons``): a
    compiled training step is one node of ~335 outputs over ~337 inputs, and a registration
    per output and input cost ~10^5 weak references per step. Every output holds the group,
    so it lives while any output does."""

    __slots__ = ("refs", "specs", "__weakref__")

    def __init__(self, refs: tuple[weakref.ref, ...], specs: tuple[OutSpec, ...]) -> None:
        self.refs = refs
        self.specs = specs

    @property
    def _prim(self) -> Primitive | None:
        """The pending primitive of the group (None once evaluated), as graph/node.prune
        asks every consumer."""
        for r in self.refs:
            t = r()
            if t is not None and t._prim is not None:
                return t._prim
        return None

    def pending(self) -> list["array"]:
        """The outputs still alive and unevaluated."""
        return [t for r in self.refs if (t := r()) is not None and t._prim is not None]


class _Alias(Primitive):
    """Another array object with the same value (``mx.array(lazy_array)``): no copy, no kernel."""

    __slots__ = ()
    name = "alias"
    gpu_kernel = True

    def eval_cpu(self, inputs: Sequence[np.ndarray], outs: Sequence[OutSpec]
                 ) -> list[np.ndarray]:
        return [inputs[0]]

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[OutSpec], stream: Any) -> list[Any]:
        return [inputs[0]]


_ALIAS = _Alias()
# The alias a gradient trace differentiates against (autodiff.engine.leaf). Its own instance
# so that ``_overwrite`` can tell when a traced function updates an input in place
# (``x[i] = v``): the input's value then lives on in the node ``_overwrite`` moves it to, which
# is recorded here (first move only) for the backward walk to stop at.
_LEAF = _Alias()
_MOVED_LEAVES: dict[int, tuple["array", "array"]] = {}  # id(leaf) -> (leaf, its old node)


def _core() -> Any:
    return sys.modules["pycudamlx.core"]


_core_dict: dict[str, Any] | None = None  # pycudamlx.core's live namespace


def _op(name: str) -> Any:
    """The public op ``pycudamlx.core.<name>``, looked up now (ops land independently)."""
    global _core_dict
    d = _core_dict
    if d is None:
        d = _core_dict = vars(_core())
    f = d.get(name)
    if f is None:
        raise NotImplementedError(f"mx.{name} is not implemented in pycudamlx yet")
    return f


# The "other" operand types that need no checking on the operator fast path.
_PLAIN = frozenset((int, float, bool, complex))

_OTHER_SIGNATURE = ("(self, other: bool | int | float | mlx.core.array | ndarray[writable=False] "
                    "| complex | mlx.core.ArrayLike) -> mlx.core.array")


def _incompatible(method: str, self: Any, other: Any) -> TypeError:
    signature = f"{method}{_OTHER_SIGNATURE}"
    if method in ("__eq__", "__ne__"):  # these answer a bool for uncomparable operands
        signature += " | bool"
    return dt._incompatible_arguments(signature, self, other)


def _mlx_array_of(other: Any) -> Any:
    """``other.__mlx_array__()`` for ArrayLike objects (MLX's protocol), else None."""
    f = getattr(type(other), "__mlx_array__", None)
    return None if f is None else f(other)


def _operand(self: array, other: Any, method: str, label: str) -> Any:
    """Check the non-array operand of an operator as MLX does: None is a TypeError, values MLX
    cannot read as an array or scalar a ValueError naming the operation."""
    if other is None:
        raise _incompatible(method, self, other)
    converted = _mlx_array_of(other)
    if converted is not None:
        return converted
    dt.scalar_result_dtype(self._dtype, other, label)  # raises for str, list, dict, object ...
    return other


def _comparable(self: array, other: Any, method: str) -> Any:
    """The operand of == / != or _NOT_COMPARABLE (MLX answers False / True for those)."""
    if other is None:
        raise _incompatible(method, self, other)
    converted = _mlx_array_of(other)
    if converted is not None:
        return converted
    try:
        dt.scalar_result_dtype(self._dtype, other, "equal")
    except (ValueError, TypeError):
        return _NOT_COMPARABLE
    return other


_NOT_COMPARABLE = object()


#: Operators whose op is a plain binary_op: two arrays of one dtype and shape take
#: elementwise.binary_same, skipping the op function, promotion and broadcasting.
_SAME_DTYPE_FAST = frozenset(("add", "subtract", "multiply", "divide"))
_binary_same: Any = None


def _binary(method: str, op_name: str, label: str, reflected: bool = False) -> Any:
    fast = op_name in _SAME_DTYPE_FAST

    def operator(self: array, other: Any) -> Any:
        global _binary_same
        if type(other) is not array:
            if type(other) not in _PLAIN:
                other = _operand(self, other, method, label)
        elif fast and other._dtype is self._dtype and other._shape == self._shape:
            if _binary_same is None:
                from .elementwise import binary_same as _binary_same
            r = _binary_same(op_name, other, self) if reflected else \
                _binary_same(op_name, self, other)
            if r is not None:
                return r
        if reflected:
            return _op(op_name)(other, self)
        return _op(op_name)(self, other)

    operator.__name__ = method
    operator.__qualname__ = f"array.{method}"
    operator.__doc__ = f"``{'other ' if reflected else 'self '}{label} ...``: mx.{op_name}."
    return operator


def _check_integral(self: array, other: Any, label: str) -> None:
    """MLX's operators & | ^ << >> refuse floating operands before the op runs."""
    if self._dtype.kind in "fc":
        bad = True
    elif type(other) is array:
        bad = other._dtype.kind in "fc"
    elif type(other) in (float, complex):
        bad = True
    elif type(other) in (int, bool):
        bad = False
    else:
        bad = dt.scalar_result_dtype(self._dtype, other, label).kind in "fc"
    if bad:
        raise ValueError(f"Floating point types not allowed with {label}.")


def _bitwise(method: str, op_name: str, label: str, inplace: bool = False) -> Any:
    def operator(self: array, other: Any) -> Any:
        if type(other) is not array and type(other) not in _PLAIN:
            other = _operand(self, other, method, f"inplace {label}" if inplace else label)
        _check_integral(self, other, label)
        if inplace:
            _overwrite(self, _op(op_name)(self, other))
            return self
        return _op(op_name)(self, other)

    operator.__name__ = method
    operator.__qualname__ = f"array.{method}"
    return operator


def _inplace(method: str, op_name: str, label: str) -> Any:
    def operator(self: array, other: Any) -> Any:
        if type(other) is not array and type(other) not in _PLAIN:
            other = _operand(self, other, method, f"inplace {label}")
        _overwrite(self, _op(op_name)(self, other))
        return self

    operator.__name__ = method
    operator.__qualname__ = f"array.{method}"
    operator.__doc__ = (f"``self {label}= other``: self takes the result (references see it; "
                        "graphs built from self before keep the old value).")
    return operator


def _comparison(method: str, op_name: str, label: str) -> Any:
    def operator(self: array, other: Any) -> Any:
        if type(other) is not array and type(other) not in _PLAIN:
            other = _operand(self, other, method, label)
        return _op(op_name)(self, other)

    operator.__name__ = method
    operator.__qualname__ = f"array.{method}"
    return operator


def _unary_method(name: str) -> Any:
    def method(self: array, *, stream: Any = None) -> Any:
        return _op(name)(self, stream=stream)

    method.__name__ = name
    method.__qualname__ = f"array.{name}"
    method.__doc__ = f"``mx.{name}(self)``."
    return method


def _reduction_method(name: str) -> Any:
    def method(self: array, axis: Any = None, keepdims: bool = False, *,
               stream: Any = None) -> Any:
        return _op(name)(self, axis=axis, keepdims=keepdims, stream=stream)

    method.__name__ = name
    method.__qualname__ = f"array.{name}"
    method.__doc__ = f"``mx.{name}(self, axis, keepdims)``."
    return method


def _scan_method(name: str) -> Any:
    def method(self: array, axis: int | None = None, *, reverse: bool = False,
               inclusive: bool = True, stream: Any = None) -> Any:
        return _op(name)(self, axis=axis, reverse=reverse, inclusive=inclusive, stream=stream)

    method.__name__ = name
    method.__qualname__ = f"array.{name}"
    method.__doc__ = f"``mx.{name}(self, axis, reverse=, inclusive=)``."
    return method


def _shape_args(args: tuple, method: str = "reshape") -> Any:
    """``a.reshape(2, 3)`` and ``a.reshape((2, 3))`` both mean the shape (2, 3). MLX's methods
    read ``*args`` themselves: anything but ints fails there as a RuntimeError (std::bad_cast)."""
    dims = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    for d in dims:
        if type(d) is not int and (isinstance(d, (bool, array)) or not hasattr(d, "__index__")):
            raise RuntimeError(f"std::bad_cast ({method}: expected ints, got "
                               f"{type(d).__name__} {d!r})")
    return dims



_STREAM_TYPES = ("mlx.core.Stream | mlx.core.ThreadLocalStream | mlx.core.Device | "
                 "mlx.core.DeviceType | None = None")
#: nanobind's signature lines of the array methods (they differ from the functions').
_ASTYPE_METHOD_SIG = ("astype(self, dtype: mlx.core.Dtype, stream: " + _STREAM_TYPES
                      + ") -> mlx.core.array")
_VIEW_METHOD_SIG = ("view(self, dtype: mlx.core.Dtype, *, stream: " + _STREAM_TYPES
                    + ") -> mlx.core.array")


class array:  # noqa: N801 - MLX's name
    """An N-dimensional array (MLX's ``mlx.core.array``)."""

    __slots__ = ("_shape", "_dtype", "_data", "_prim", "_inputs", "_stream", "_siblings",
                 "_cons", "__weakref__")

    def __init__(self, val: Any, dtype: dt.Dtype | None = None) -> None:
        data, dtype_ = _convert_value(val, dtype)
        self._cons = None
        self._siblings = None
        if isinstance(data, array):
            # An mx array (or an ArrayLike's result): the same value without a copy, converted
            # lazily when the dtype differs (as MLX's astype).
            src = data
            if dtype_ is src._dtype and src._data is not None:
                self._set_evaluated(src._data, dtype_)
            elif dtype_ is src._dtype:
                self._set_node(_ALIAS, (src,), src._shape, dtype_,
                               src._stream or dev.resolve_stream(None))
            else:
                from ..graph.primitives.elementwise import AsType

                self._set_node(AsType(dtype_), (src,), src._shape, dtype_,
                               dev.resolve_stream(None))
            return
        self._set_evaluated(data, dtype_)

    def _set_evaluated(self, data: Any, dtype: dt.Dtype) -> None:
        self._shape = tuple(data.shape)
        self._dtype = dtype
        self._data = data
        self._prim = None
        self._inputs = ()
        self._stream = None

    def _set_node(self, prim: Primitive, inputs: tuple, shape: tuple[int, ...],
                  dtype: dt.Dtype, stream: dev.Stream) -> None:
        self._shape = shape
        self._dtype = dtype
        self._data = None
        self._prim = prim
        self._inputs = inputs
        self._stream = stream
        _register(self, inputs)

    # -- attributes ----------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the array as a Python tuple."""
        return self._shape

    @property
    def dtype(self) -> dt.Dtype:
        """The array's :class:`Dtype`."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The array's dimension."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """Number of elements in the array."""
        n = 1
        for e in self._shape:
            n *= e
        return n

    @property
    def itemsize(self) -> int:
        """The size of the array's datatype in bytes."""
        return self._dtype.size

    @property
    def nbytes(self) -> int:
        """The number of bytes in the array."""
        return self.size * self._dtype.size

    @property
    def T(self) -> array:  # noqa: N802 - MLX's name
        """Equivalent to calling ``self.transpose()`` with no arguments."""
        return _op("transpose")(self)

    @property
    def mT(self) -> array:  # noqa: N802 - MLX's name
        """Equivalent to calling ``self.transpose()`` with the last two axes swapped."""
        return _op("matrix_transpose")(self)

    @property
    def real(self) -> array:
        """The real part of a complex array."""
        return _op("real")(self)

    @property
    def imag(self) -> array:
        """The imaginary part of a complex array."""
        return _op("imag")(self)

    @property
    def at(self) -> Any:
        """Used to apply updates at the given indices (``a.at[idx].add(v)``)."""
        return _indexing("ArrayAt")(self)

    # -- evaluation and conversion -------------------------------------------------------------

    def _numpy(self) -> np.ndarray:
        """Evaluate and return the data as numpy (a view where possible; do not write to it)."""
        if self._data is None:
            evaluate((self,))
        return to_numpy(self)

    def item(self) -> Any:
        """The value of a one-element array as a Python scalar (bfloat16/float16 -> float)."""
        if self.size != 1:
            raise ValueError("[convert] Only length-1 arrays can be converted to Python scalars.")
        if _compile_trace.active:
            _compile_trace.check((self,))
        return _to_python_scalar(self._numpy().reshape(()).item(), self._dtype)

    def tolist(self) -> Any:
        """Nested Python lists of Python scalars (a scalar for a 0-d array)."""
        if not self._shape:
            return self.item()
        if _compile_trace.active:
            _compile_trace.check((self,))
        host = self._numpy()
        if self._dtype in (dt.float16, dt.bfloat16):
            host = host.astype(np.float32)
        return host.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        from .interop import to_numpy as interop_to_numpy

        if _compile_trace.active:
            _compile_trace.check((self,))
        return interop_to_numpy(self, dtype, copy)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Every numpy ufunc with an mx operand runs in numpy on our values and returns a numpy
        array, as in MLX: ``np_array == a``, ``np.float32(2) * a`` and ``np.sin(a)`` are
        numpy's results (so ``np.all(np_array == a)`` works, a common idiom in MLX code)."""
        args = tuple(np.asarray(x) if isinstance(x, array) else x for x in inputs)
        out = kwargs.get("out")
        if out is not None and any(isinstance(o, array) for o in out):
            raise TypeError("numpy cannot write into an mlx.core.array (out=); assign the result "
                            "instead")
        return getattr(ufunc, method)(*args, **kwargs)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return _core()

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        from .interop import export_dlpack

        return export_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from .interop import dlpack_device

        return dlpack_device(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        from .interop import cuda_array_interface

        return cuda_array_interface(self)

    def __buffer__(self, flags: int) -> memoryview:
        """The buffer protocol (Python 3.12+, PEP 688): ``memoryview(a)``, ``bytes(a)``."""
        from .interop import buffer_view

        if _compile_trace.active:
            _compile_trace.check((self,))
        return buffer_view(self, flags)

    def __bytes__(self) -> bytes:
        """The raw bytes of the elements in row-major order."""
        if _compile_trace.active:
            _compile_trace.check((self,))
        host = self._numpy()
        if self._dtype is dt.bfloat16:
            host = host.view(np.uint16)
        return np.ascontiguousarray(host).tobytes()

    def __bool__(self) -> bool:
        return bool(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self._shape or self._dtype.kind not in "iu":
            raise TypeError("Only 0-dimensional integer arrays can be converted to an index.")
        return int(self.item())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() 0-dimensional array.")
        return self._shape[0]

    def __iter__(self) -> ArrayIterator:
        if not self._shape:
            raise TypeError("iter() 0-dimensional array.")
        return ArrayIterator(self)

    def __repr__(self) -> str:
        from .printing import array_repr

        if _compile_trace.active:
            _compile_trace.check((self,))
        return array_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if not self._shape:
            return format(self.item(), spec)  # f"{loss:.3f}" works on 0-d arrays, as in MLX
        if spec:
            raise TypeError("unsupported format string passed to mx.array.__format__")
        return str(self)

    __hash__ = object.__hash__

    # -- pickle and copy -----------------------------------------------------------------------

    def __reduce__(self) -> tuple:
        host = np.ascontiguousarray(self._numpy())
        if self._dtype is dt.bfloat16:
            host = host.view(np.uint16)
        return (_rebuild, (host.tobytes(), self._shape, self._dtype.name))

    def __copy__(self) -> array:
        return array(self)

    def __deepcopy__(self, memo: dict) -> array:
        from .interop import _lazy_copy

        return _lazy_copy(self)

    # -- indexing (core/indexing.py) -----------------------------------------------------------

    def __getitem__(self, key: Any) -> array:
        return _indexing("getitem")(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _overwrite(self, _indexing("setitem")(self, key, value))

    # -- operators -----------------------------------------------------------------------------

    __add__ = _binary("__add__", "add", "addition")
    __radd__ = _binary("__radd__", "add", "addition", reflected=True)
    __sub__ = _binary("__sub__", "subtract", "subtraction")
    __rsub__ = _binary("__rsub__", "subtract", "subtraction", reflected=True)
    __mul__ = _binary("__mul__", "multiply", "multiplication")
    __rmul__ = _binary("__rmul__", "multiply", "multiplication", reflected=True)
    __truediv__ = _binary("__truediv__", "divide", "division")
    __rtruediv__ = _binary("__rtruediv__", "divide", "division", reflected=True)
    __div__ = _binary("__div__", "divide", "division")
    __rdiv__ = _binary("__rdiv__", "divide", "division", reflected=True)
    __floordiv__ = _binary("__floordiv__", "floor_divide", "floor division")
    __rfloordiv__ = _binary("__rfloordiv__", "floor_divide", "floor division", reflected=True)
    __mod__ = _binary("__mod__", "remainder", "modulus")
    __rmod__ = _binary("__rmod__", "remainder", "modulus", reflected=True)
    __pow__ = _binary("__pow__", "power", "power")
    __rpow__ = _binary("__rpow__", "power", "power", reflected=True)
    # MLX defines & | ^ << >> without reflected forms (1 & a is a TypeError there too).
    __and__ = _bitwise("__and__", "bitwise_and", "bitwise and")
    __or__ = _bitwise("__or__", "bitwise_or", "bitwise or")
    __xor__ = _bitwise("__xor__", "bitwise_xor", "bitwise xor")
    __lshift__ = _bitwise("__lshift__", "left_shift", "left shift")
    __rshift__ = _bitwise("__rshift__", "right_shift", "right shift")

    __iadd__ = _inplace("__iadd__", "add", "addition")
    __isub__ = _inplace("__isub__", "subtract", "subtraction")
    __imul__ = _inplace("__imul__", "multiply", "multiplication")
    __ifloordiv__ = _inplace("__ifloordiv__", "floor_divide", "floor division")
    __imod__ = _inplace("__imod__", "remainder", "modulus")
    __ipow__ = _inplace("__ipow__", "power", "power")
    __iand__ = _bitwise("__iand__", "bitwise_and", "bitwise and", inplace=True)
    __ior__ = _bitwise("__ior__", "bitwise_or", "bitwise or", inplace=True)
    __ixor__ = _bitwise("__ixor__", "bitwise_xor", "bitwise xor", inplace=True)
    __ilshift__ = _bitwise("__ilshift__", "left_shift", "left shift", inplace=True)
    __irshift__ = _bitwise("__irshift__", "right_shift", "right shift", inplace=True)

    def __itruediv__(self, other: Any) -> array:
        if type(other) is not array and type(other) not in _PLAIN:
            other = _operand(self, other, "__itruediv__", "inplace division")
        if self._dtype.kind not in "fc":
            raise ValueError("In place division cannot cast to non-floating point type.")
        _overwrite(self, _op("divide")(self, other))
        return self

    def __matmul__(self, other: Any) -> array:
        if not isinstance(other, array):
            raise dt._incompatible_arguments(
                "__matmul__(self, other: mlx.core.array) -> mlx.core.array", self, other)
        return _op("matmul")(self, other)

    def __imatmul__(self, other: Any) -> array:
        if not isinstance(other, array):
            raise dt._incompatible_arguments(
                "__imatmul__(self, other: mlx.core.array) -> mlx.core.array", self, other)
        _overwrite(self, _op("matmul")(self, other))
        return self

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        if type(other) is not array and type(other) not in _PLAIN:
            other = _comparable(self, other, "__eq__")
            if other is _NOT_COMPARABLE:
                return False
        return _op("equal")(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        if type(other) is not array and type(other) not in _PLAIN:
            other = _comparable(self, other, "__ne__")
            if other is _NOT_COMPARABLE:
                return True
        return _op("not_equal")(self, other)

    __lt__ = _comparison("__lt__", "less", "less than")
    __le__ = _comparison("__le__", "less_equal", "less than or equal")
    __gt__ = _comparison("__gt__", "greater", "greater than")
    __ge__ = _comparison("__ge__", "greater_equal", "greater than or equal")

    def __neg__(self) -> array:
        return _op("negative")(self)

    def __pos__(self) -> array:
        return array(self)

    def __abs__(self) -> array:
        return _op("abs")(self)

    def __invert__(self) -> array:
        if self._dtype.kind in "fc":
            raise ValueError("Floating point types not allowed with bitwise inversion.")
        if self._dtype is dt.bool_:
            return _op("logical_not")(self)
        return _op("bitwise_invert")(self)

    # -- methods (forwards to the op functions) ------------------------------------------------

    def astype(self, dtype: dt.Dtype, stream: Any = None) -> array:
        """A copy of the array cast to ``dtype`` (the array itself when it already is)."""
        if type(dtype) is not dt.Dtype:  # the method's own nanobind signature, as in MLX
            raise dt._incompatible_arguments(_ASTYPE_METHOD_SIG, self, dtype)
        f = getattr(_core(), "astype", None)
        if f is not None:
            return f(self, dtype, stream=stream)
        from ._base import astype

        return astype(self, dt.to_dtype(dtype, "astype"), stream)

    def view(self, dtype: dt.Dtype, *, stream: Any = None) -> array:
        if type(dtype) is not dt.Dtype:
            raise dt._incompatible_arguments(_VIEW_METHOD_SIG, self, dtype)
        return _op("view")(self, dtype, stream=stream)

    def reshape(self, *shape: Any, stream: Any = None) -> array:
        """``a.reshape(2, 3)`` or ``a.reshape((2, 3))``."""
        return _op("reshape")(self, _shape_args(shape), stream=stream)

    def transpose(self, *axes: Any, stream: Any = None) -> array:
        """``a.transpose()``, ``a.transpose(1, 0)`` or ``a.transpose((1, 0))``."""
        axes_ = _shape_args(axes, "transpose") if axes else None
        if axes_ is None:
            return _op("transpose")(self, stream=stream)
        return _op("transpose")(self, axes_, stream=stream)

    def flatten(self, start_axis: int = 0, end_axis: int = -1, *, stream: Any = None) -> array:
        return _op("flatten")(self, start_axis=start_axis, end_axis=end_axis, stream=stream)

    def squeeze(self, axis: Any = None, *, stream: Any = None) -> array:
        return _op("squeeze")(self, axis=axis, stream=stream)

    def moveaxis(self, source: int, destination: int, *, stream: Any = None) -> array:
        return _op("moveaxis")(self, source, destination, stream=stream)

    def swapaxes(self, axis1: int, axis2: int, *, stream: Any = None) -> array:
        return _op("swapaxes")(self, axis1, axis2, stream=stream)

    def split(self, indices_or_sections: Any, axis: int = 0, *, stream: Any = None
              ) -> list[array]:
        return _op("split")(self, indices_or_sections, axis=axis, stream=stream)

    def diag(self, k: int = 0, *, stream: Any = None) -> array:
        return _op("diag")(self, k=k, stream=stream)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1, stream: Any = None
                 ) -> array:
        return _op("diagonal")(self, offset=offset, axis1=axis1, axis2=axis2, stream=stream)

    def round(self, decimals: int = 0, *, stream: Any = None) -> array:
        return _op("round")(self, decimals=decimals, stream=stream)

    def argmax(self, axis: int | None = None, keepdims: bool = False, *, stream: Any = None
               ) -> array:
        return _op("argmax")(self, axis=axis, keepdims=keepdims, stream=stream)

    def argmin(self, axis: int | None = None, keepdims: bool = False, *, stream: Any = None
               ) -> array:
        return _op("argmin")(self, axis=axis, keepdims=keepdims, stream=stream)

    def var(self, axis: Any = None, keepdims: bool = False, ddof: int = 0, *,
            correction: int | None = None, stream: Any = None) -> array:
        if correction is not None:
            ddof = correction
        return _op("var")(self, axis=axis, keepdims=keepdims, ddof=ddof, stream=stream)

    def std(self, axis: Any = None, keepdims: bool = False, ddof: int = 0, *,
            correction: int | None = None, stream: Any = None) -> array:
        if correction is not None:
            ddof = correction
        return _op("std")(self, axis=axis, keepdims=keepdims, ddof=ddof, stream=stream)

    all = _reduction_method("all")
    any = _reduction_method("any")
    max = _reduction_method("max")
    min = _reduction_method("min")
    mean = _reduction_method("mean")
    prod = _reduction_method("prod")
    sum = _reduction_method("sum")
    logsumexp = _reduction_method("logsumexp")

    cummax = _scan_method("cummax")
    cummin = _scan_method("cummin")
    cumprod = _scan_method("cumprod")
    cumsum = _scan_method("cumsum")
    logcumsumexp = _scan_method("logcumsumexp")

    abs = _unary_method("abs")
    conj = _unary_method("conj")
    cos = _unary_method("cos")
    exp = _unary_method("exp")
    log = _unary_method("log")
    log10 = _unary_method("log10")
    log1p = _unary_method("log1p")
    log2 = _unary_method("log2")
    reciprocal = _unary_method("reciprocal")
    rsqrt = _unary_method("rsqrt")
    sin = _unary_method("sin")
    sqrt = _unary_method("sqrt")
    square = _unary_method("square")


class ArrayIterator:
    """Iterates over the first axis of an array (MLX's ``mlx.core.ArrayIterator``)."""

    __slots__ = ("_a", "_i", "_n")

    def __init__(self, a: array) -> None:
        self._a = a
        self._i = 0
        self._n = a._shape[0]

    def __iter__(self) -> ArrayIterator:
        return self

    def __next__(self) -> array:
        i = self._i
        if i >= self._n:
            raise StopIteration
        self._i = i + 1
        return _row(self._a, i)


class ArrayLike:
    """Any Python object which has an ``__mlx_array__`` method that returns an :obj:`array`."""


def _row(a: array, i: int) -> array:
    try:
        getitem = _indexing("getitem")
    except NotImplementedError:
        host = a._numpy()[i]  # before indexing lands: a host copy of the row
        return from_data(np.array(host), a._dtype)
    return getitem(a, i)


_indexing_fns: dict[str, Any] = {}


def _indexing(name: str) -> Any:
    """core.indexing.<name> (getitem/setitem), imported once: indexing imports this module."""
    f = _indexing_fns.get(name)
    if f is None:
        from . import indexing

        f = _indexing_fns[name] = getattr(indexing, name)
    return f


def _rebuild(raw: bytes, shape: tuple[int, ...], dtype_name: str) -> array:
    dtype = dt.by_name[dtype_name]
    np_dtype = np.uint16 if dtype is dt.bfloat16 else dtype.np_dtype
    host = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()
    if dtype is dt.bfloat16:
        host = host.view(dtype.np_dtype)
    return from_data(host, dtype)


def _to_python_scalar(value: Any, dtype: dt.Dtype) -> Any:
    if dtype is dt.bool_:
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "c":
        return complex(value)
    return float(value)


# ------------------------------------------------------------------------------------------------
# Graph construction


_prune = _node.prune
_register = _node.register


def make(prim: Primitive, inputs: tuple, shape: tuple[int, ...], dtype: dt.Dtype,
         stream: dev.Stream) -> array:
    """A new lazy array: ``prim`` applied to ``inputs`` on ``stream`` (the op functions' tail)."""
    a = array.__new__(array)
    a._shape = shape
    a._dtype = dtype
    a._data = None
    a._prim = prim
    a._inputs = inputs
    a._stream = stream
    a._siblings = None
    a._cons = None
    if inputs:  # graph/node.py register, inlined: this runs on every op call
        ref = _ref(a)
        for i in inputs:
            c = i._cons
            if c is None:
                i._cons = [8, ref]
            else:
                c.append(ref)
                if len(c) > c[0]:
                    _prune(c)
    return a


def make_multi(prim: Primitive, inputs: tuple, specs: Sequence[OutSpec],
               stream: dev.Stream) -> list[array]:
    """Several outputs of one node (divmod, split): evaluated together, freed independently."""
    outs = [make(prim, (), shape, dtype, stream) for shape, dtype in specs]
    sib = _Siblings(tuple(_ref(o) for o in outs), tuple(specs))
    for o in outs:
        o._inputs = inputs
        o._siblings = sib
    _register(sib, inputs)  # the group is the inputs' consumer (see _Siblings)
    return outs


def from_data(data: Any, dtype: dt.Dtype) -> array:
    """An evaluated array around backend data (numpy or GpuArray) of ``dtype``."""
    a = array.__new__(array)
    a._shape = tuple(data.shape)
    a._dtype = dtype
    a._data = data
    a._prim = None
    a._inputs = ()
    a._stream = None
    a._siblings = None
    a._cons = None
    return a


def fresh(a: array, stream: Any = None) -> array:
    """A distinct array object with ``a``'s value, for an op whose result equals its input
    (``x[...]``, a reshape to the same shape, astype to the same dtype, ...).

    In MLX every op result is its own array, so ``y = x[...]; y[0] = v`` (``__setitem__``,
    ``+=``) replaces y's value and leaves x alone; returning ``x`` itself would change both.
    An evaluated ``a`` shares its data (no node, no copy: updates never write into a buffer);
    a lazy one, or any array while a gradient trace is open (the tape keys on the object),
    gets an alias node.
    """
    data = a._data
    if data is not None and _graph_eval.tape is None:
        return from_data(data, a._dtype)
    s = dev.resolve_stream(stream) if stream is not None else (
        a._stream or dev.resolve_stream(None))
    return make(_ALIAS, (a,), a._shape, a._dtype, s)


def _swap_sibling(holder: array, old: array, new: array) -> None:
    """Make ``new`` stand where ``old`` stood among ``holder``'s multi-output siblings."""
    sib = holder._siblings
    if sib is None:
        return
    # In place: the group's inputs know it by a weak reference (see _Siblings).
    sib.refs = tuple(_ref(new) if r() is old else r for r in sib.refs)
    new._siblings = sib


def _overwrite(self: array, new: array) -> None:
    """MLX's in-place update: ``self`` takes ``new``'s value (``a += b``, ``a[i] = v``).

    Every Python reference to ``self`` sees the new value; nodes built from ``self`` before
    (``new`` among them, usually) are re-pointed to a node holding the old value, so they keep
    computing with it.
    """
    if new is self:
        return
    if not isinstance(new, array):
        raise TypeError(f"in-place update with {dt._type_name(new)}, not an mlx.core.array")
    # 1. The old value moves to a new node object.
    old = array.__new__(array)
    old._shape = self._shape
    old._dtype = self._dtype
    old._data = self._data
    old._prim = self._prim
    old._inputs = self._inputs
    old._stream = self._stream
    old._siblings = self._siblings
    old._cons = None
    if old._siblings is not None:
        _swap_sibling(old, self, old)
    if old._prim is _LEAF:
        _MOVED_LEAVES.setdefault(id(self), (self, old))
    if old._prim is not None:
        _register(old, old._inputs)
    else:
        tape = _graph_eval.tape
        if tape is not None:  # a gradient trace keeps the old value's graph (autodiff)
            rec = tape.pop(id(self), None)
            if rec is not None:
                tape[id(old)] = (old,) + rec[1:]
    # 2. Pending consumers of self read old instead.
    cons = self._cons
    if cons is not None:
        moved = []
        for r in cons[1:]:
            t = r()
            if t is None or t._prim is None:
                continue
            # A consumer is a node, or a multi-output group (whose outputs share one tuple).
            targets = t.pending() if type(t) is _Siblings else (t,)
            hit = False
            for n in targets:
                inputs = n._inputs
                if any(x is self for x in inputs):
                    n._inputs = tuple(old if x is self else x for x in inputs)
                    hit = True
            if hit:
                moved.append(r)
        if moved:
            old._cons = [max(8, 2 * len(moved))] + moved
    # 3. self takes the new value.
    self._shape = new._shape
    self._dtype = new._dtype
    self._data = new._data
    self._prim = new._prim
    self._inputs = new._inputs
    self._stream = new._stream
    self._siblings = new._siblings
    self._cons = None
    if self._siblings is not None:
        _swap_sibling(self, new, self)
    if self._prim is not None:
        _register(self, self._inputs)
