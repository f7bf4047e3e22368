"""pycudamlx's file format for exported functions (``mx.export_function``), version 1.

MLX's ``.mlxfn`` format is a dump of MLX's C++ primitives; pycudamlx's primitives are other
objects, so the file is our own. It is safe to load: no pickle, no code. Layout:

    MAGIC (12 bytes) | format version (uint32, little endian) | JSON length (uint64 LE)
    | JSON description (UTF-8) | raw bytes of the constants (and numpy-array parameters)

The JSON holds the header (pycudamlx version, shapeless flag, metadata) and one entry per
exported trace: keyword names, input shapes and dtypes, the steps (primitive, input references,
output shape and dtype) and the output references. Primitive parameters are encoded as tagged
JSON values; a primitive is named by its class, which must be one of pycudamlx's own
primitive classes (looked up in a fixed registry, never imported by name from the file).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pkgutil
import struct
from typing import Any

import numpy as np

from .. import __version__
from .. import dtypes as dt
from ..backend import optable
from ..graph.primitive import Primitive

MAGIC = b"PYCUDAMLXFN\n"
VERSION = 1
_PREFIX = struct.Struct("<IQ")  # format version, JSON length

#: Primitive classes that cannot be written to a file (they hold Python callables or kernels
#: compiled from user code), by class name.
_NOT_EXPORTABLE = {"CustomCall", "CustomKernel", "Placeholder"}
#: Attributes a primitive derives from its other parameters: not stored, rebuilt on load.
_DERIVED = {"Reduce": ("_fn",)}


class ExportError(ValueError):
    """A function's graph holds something the file format cannot store."""


# ----------------------------------------------------------------------------------------------
# Primitive parameters as tagged JSON


def _slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        names.extend(s for s in slots if s not in ("__weakref__", "__dict__") and s not in names)
    return names


class Encoder:
    """Encodes primitive parameters; numpy arrays go to ``blobs`` (shared with constants)."""

    def __init__(self, blobs: list[np.ndarray]) -> None:
        self.blobs = blobs

    def blob(self, data: np.ndarray) -> int:
        self.blobs.append(np.ascontiguousarray(data))
        return len(self.blobs) - 1

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return float(v) if math.isfinite(v) else {"$f": repr(v)}
        if isinstance(v, complex):
            return {"$c": [self.value(v.real), self.value(v.imag)]}
        if isinstance(v, tuple):
            return {"$t": [self.value(x) for x in v]}
        if isinstance(v, list):
            return {"$l": [self.value(x) for x in v]}
        if isinstance(v, dict):
            return {"$d": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if isinstance(v, dt.Dtype):
            return {"$dtype": v.name}
        if isinstance(v, np.ndarray):
            if v.dtype == object:
                raise ExportError("object arrays cannot be exported")
            return {"$nd": self.blob(v)}
        if isinstance(v, np.generic):
            return {"$ns": self.blob(np.asarray(v))}
        if isinstance(v, optable.ElementwiseOp):
            if optable.OPS.get(v.name) is not v:
                raise ExportError(f"elementwise op {v.name!r} is not a registered op")
            return {"$op": v.name}
        if isinstance(v, Primitive):
            return self.primitive(v)
        cls = type(v)
        if cls.__name__ in _PLAIN_CLASSES and _registry().get(_class_key(cls)) is cls:
            return {"$obj": _class_key(cls), "slots": {
                n: self.value(getattr(v, n)) for n in _slot_names(cls) if hasattr(v, n)}}
        raise ExportError(f"a parameter of type {cls.__name__}")

    def primitive(self, p: Primitive) -> dict:
        cls = type(p)
        key = _class_key(cls)
        if cls.__name__ in _NOT_EXPORTABLE or _registry().get(key) is not cls:
            raise ExportError(f"the primitive {cls.__name__} ({p.name})")
        skip = _DERIVED.get(cls.__name__, ())
        return {"$prim": key, "slots": {n: self.value(getattr(p, n)) for n in _slot_names(cls)
                                        if n not in skip and hasattr(p, n)}}


class Decoder:
    """The inverse of Encoder; ``blobs`` are the numpy arrays of the file."""

    def __init__(self, blobs: list[np.ndarray]) -> None:
        self.blobs = blobs

    def value(self, v: Any) -> Any:
        if not isinstance(v, dict):
            if isinstance(v, list):  # only tagged containers are written
                raise FormatError("an untagged list")
            return v
        if "$t" in v:
            return tuple(self.value(x) for x in v["$t"])
        if "$l" in v:
            return [self.value(x) for x in v["$l"]]
        if "$d" in v:
            return {self.value(k): self.value(x) for k, x in v["$d"]}
        if "$f" in v:
            return float(v["$f"])
        if "$c" in v:
            re, im = v["$c"]
            return complex(self.value(re), self.value(im))
        if "$dtype" in v:
            return dt._DTYPES_BY_NAME[v["$dtype"]]
        if "$nd" in v:
            return self.blobs[v["$nd"]]
        if "$ns" in v:
            return self.blobs[v["$ns"]][()]
        if "$op" in v:
            return optable.OPS[v["$op"]]
        if "$prim" in v or "$obj" in v:
            key = v.get("$prim") or v.get("$obj")
            cls = _registry().get(key)
            if cls is None or cls.__name__ in _NOT_EXPORTABLE:
                raise FormatError(f"unknown class {key!r}")
            obj = object.__new__(cls)
            allowed = set(_slot_names(cls))
            for name, x in v["slots"].items():
                if name not in allowed:
                    raise FormatError(f"unknown attribute {name!r} of {key}")
                setattr(obj, name, self.value(x))
            if cls.__name__ == "Reduce":
                from ..graph.primitives.reduce import REDUCERS

                obj._fn = REDUCERS[obj.op]
            return obj
        raise FormatError(f"an unknown value {sorted(v)}")


class FormatError(ValueError):
    """The file's description is not one this version writes."""


#: Non-primitive classes that may appear in parameters (plain slot objects).
_PLAIN_CLASSES = {"ViewSpec"}
_REGISTRY: dict[str, type] | None = None


def _class_key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _registry() -> dict[str, type]:
    """Every primitive class of pycudamlx (and the plain parameter classes), by module:name:
    the only classes a file can name."""
    global _REGISTRY
    if _REGISTRY is None:
        from ..graph import primitives

        for info in pkgutil.iter_modules(primitives.__path__):
            importlib.import_module(f"{primitives.__name__}.{info.name}")
        importlib.import_module("pycudamlx.autodiff.custom")
        from ..graph.primitives.shape import ViewSpec

        reg: dict[str, type] = {_class_key(ViewSpec): ViewSpec}
        stack = [Primitive]
        while stack:
            cls = stack.pop()
            for sub in cls.__subclasses__():
                if sub.__module__.startswith("pycudamlx."):
                    reg[_class_key(sub)] = sub
                stack.append(sub)
        _REGISTRY = reg
    return _REGISTRY


# ----------------------------------------------------------------------------------------------
# The file


def write(path: str, description: dict, blobs: list[np.ndarray]) -> None:
    """Write the file (atomically: a temporary file renamed over ``path``)."""
    offset = 0
    table = []
    for b in blobs:
        table.append({"dtype": _np_name(b.dtype), "shape": list(b.shape), "offset": offset,
                      "nbytes": int(b.nbytes)})
        offset += int(b.nbytes)
    doc = dict(description, format="pycudamlx-function", version=VERSION,
               pycudamlx_version=__version__, blobs=table)
    text = json.dumps(doc, separators=(",", ":")).encode()
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(MAGIC)
        f.write(_PREFIX.pack(VERSION, len(text)))
        f.write(text)
        for b in blobs:
            f.write(b.tobytes())
    os.replace(tmp, path)


def _np_name(d: np.dtype) -> str:
    if d.name == "bfloat16":
        return "bfloat16"
    return d.str  # byte order and kind: '<f4'


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        return dt.bfloat16.np_dtype  # imports ml_dtypes
    d = np.dtype(name)
    if d.kind not in "biufc":
        raise FormatError(f"a blob of dtype {name!r}")
    return d


def read(path: str) -> tuple[dict, list[np.ndarray]]:
    """The description and the blobs of a file; RuntimeError (MLX's class for unreadable
    files) with a message that says what the file is when it is not ours."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        raise RuntimeError(f"[import_function] Failed to open {path}") from None
    head = len(MAGIC) + _PREFIX.size
    if raw[:len(MAGIC)] != MAGIC or len(raw) < head:
        raise RuntimeError(f"[import_function] {path} is not a function file exported by "
                           f"pycudamlx{_what_it_is(raw)}.")
    version, length = _PREFIX.unpack_from(raw, len(MAGIC))
    if version > VERSION:
        raise RuntimeError(f"[import_function] {path} was written in pycudamlx's function "
                           f"format version {version}; this pycudamlx ({__version__}) reads "
                           f"versions up to {VERSION}.")
    try:
        doc = json.loads(raw[head:head + length].decode())
        data = memoryview(raw)[head + length:]
        blobs = []
        for b in doc["blobs"]:
            dtype = _np_dtype(b["dtype"])
            shape = tuple(int(s) for s in b["shape"])
            start, n = int(b["offset"]), int(b["nbytes"])
            if start < 0 or start + n > len(data) or n != dtype.itemsize * math.prod(shape):
                raise FormatError("a blob outside the file")
            blobs.append(np.frombuffer(data[start:start + n], dtype).reshape(shape).copy())
    except (ValueError, KeyError, TypeError) as e:
        raise RuntimeError(f"[import_function] {path} is damaged ({e}).") from None
    return doc, blobs


def _what_it_is(raw: bytes) -> str:
    """'' or a hint: MLX's .mlxfn files start with MLX's version string (uint64 length)."""
    if len(raw) >= 8:
        (n,) = struct.unpack_from("<Q", raw)
        if 0 < n < 32 and len(raw) >= 8 + n:
            text = raw[8:8 + n]
            if all(48 <= c <= 57 or c == 46 for c in text) and text.count(b".") >= 1:
                return (f" (it looks like a file exported by MLX {text.decode()}: MLX's "
                        "format stores MLX's C++ primitives; export the function again with "
                        "pycudamlx)")
    return ""
