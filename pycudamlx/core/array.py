"""The ``mx.array`` class: a lazy node until evaluated, then a strided view of its data.

An array built by an op holds its primitive, inputs and stream; ``mx.eval`` (or anything that
needs values: ``item``, ``tolist``, numpy conversion, printing, ``bool``) evaluates it. Evaluated
data is a numpy array (CPU) or a GpuArray (managed or device memory); either backend reads the
other's data transparently. Operators and methods forward to the op functions in ``ops``.
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np

from .. import dtypes as dt
from ..graph.evaluate import evaluate, to_numpy
from ..graph.primitive import OutSpec, Primitive
from . import device as dev


class _Siblings:
    """Outputs of one multi-output node (weak, so no reference cycle keeps buffers alive)."""

    __slots__ = ("refs", "specs")

    def __init__(self, refs: tuple[weakref.ref, ...], specs: tuple[OutSpec, ...]) -> None:
        self.refs = refs
        self.specs = specs


class array:  # noqa: N801 - MLX's name
    """An N-dimensional array (MLX's ``mlx.core.array``)."""

    __slots__ = ("_shape", "_dtype", "_data", "_prim", "_inputs", "_stream", "_siblings",
                 "__weakref__")
    # numpy must not treat us as a sequence of scalars in mixed expressions: np_scalar + array
    # defers to our __radd__ (MLX leaves it to numpy; we give MLX's own result instead).
    __array_priority__ = 1000.0

    def __init__(self, val: Any, dtype: dt.Dtype | None = None) -> None:
        from .creation import _array_data

        data, dtype_ = _array_data(val, dtype)
        self._shape = data.shape
        self._dtype = dtype_
        self._data = data
        self._prim = None
        self._inputs = ()
        self._stream = None
        self._siblings = None

    # -- attributes ----------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> dt.Dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for e in self._shape:
            n *= e
        return n

    @property
    def itemsize(self) -> int:
        return self._dtype.size

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.size

    # -- evaluation and conversion -------------------------------------------------------------

    def _numpy(self) -> np.ndarray:
        """Evaluate and return the data as numpy (a view where possible; do not write to it)."""
        if self._data is None:
            evaluate((self,))
        return to_numpy(self)

    def item(self) -> Any:
        if self.size != 1:
            raise ValueError("item can only be called on arrays of size 1.")
        return _to_python_scalar(self._numpy().reshape(()).item(), self._dtype)

    def tolist(self) -> Any:
        host = self._numpy()
        if self.ndim == 0:
            return _to_python_scalar(host.item(), self._dtype)
        if self._dtype in (dt.float16, dt.bfloat16):
            host = host.astype(np.float32)
        return host.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        host = self._numpy()
        if dtype is not None:
            return host.astype(dtype)
        if copy:
            return host.copy()
        return host

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous.")
        return bool(self.item())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() 0-dimensional array.")
        return self._shape[0]

    def __repr__(self) -> str:
        from .printing import array_repr

        return array_repr(self)

    def __str__(self) -> str:
        from .printing import array_str

        return array_str(self)

    def __hash__(self) -> int:
        return id(self)


def _to_python_scalar(value: Any, dtype: dt.Dtype) -> Any:
    if dtype is dt.bool_:
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "c":
        return complex(value)
    return float(value)


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
    return a


def make_multi(prim: Primitive, inputs: tuple, specs: Sequence[OutSpec],
               stream: dev.Stream) -> list[array]:
    """Several outputs of one node (divmod, split): evaluated together, freed independently."""
    outs = [make(prim, inputs, shape, dtype, stream) for shape, dtype in specs]
    sib = _Siblings(tuple(weakref.ref(o) for o in outs), tuple(specs))
    for o in outs:
        o._siblings = sib
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
    return a
