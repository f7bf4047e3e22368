"""File IO: ``mx.save``/``savez``/``savez_compressed``/``save_safetensors``/``load``.

The files are byte-compatible with MLX 0.32.4's: ``.npy`` headers are written exactly as MLX
writes them (its padding, ``fortran_order`` for column-contiguous data, bfloat16 as ``'<V2'``,
which MLX reads back as bfloat16 and numpy as raw 2-byte records), ``.npz`` is a zip of such
``.npy`` members, ``.safetensors`` a compact JSON header with sorted keys. Loading accepts what
numpy, MLX and the safetensors library write. Arrays are evaluated (on any device) and read
through their host view; loaded arrays are host data that ops on any stream read directly.
GGUF: MLX's subset (see the gguf section below).
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import struct
import zipfile
from typing import Any, BinaryIO, Union

import numpy as np

from .. import dtypes as dt
from ._map_order import map_order
from .array import array, from_data

__all__ = ["save", "savez", "savez_compressed", "save_safetensors", "save_gguf", "load"]

FileLike = Union[str, "os.PathLike[str]", BinaryIO]

# -- dtype tables ------------------------------------------------------------------------------

_NPY_DESCR = {
    "bool": "|b1", "uint8": "|u1", "int8": "|i1", "uint16": "<u2", "uint32": "<u4",
    "uint64": "<u8", "int16": "<i2", "int32": "<i4", "int64": "<i8", "float16": "<f2",
    "bfloat16": "<V2", "float32": "<f4", "float64": "<f8", "complex64": "<c8",
}
# Array-protocol type strings (byte order stripped) -> dtype; '<V2' is MLX's bfloat16.
_NPY_READ = {
    "b1": dt.bool_, "u1": dt.uint8, "i1": dt.int8, "u2": dt.uint16, "u4": dt.uint32,
    "u8": dt.uint64, "i2": dt.int16, "i4": dt.int32, "i8": dt.int64, "f2": dt.float16,
    "V2": dt.bfloat16, "f4": dt.float32, "f8": dt.float64, "c8": dt.complex64,
}
_ST_NAME = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
    "uint32": "U32", "int32": "I32", "uint64": "U64", "int64": "I64", "float16": "F16",
    "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64",
}
_ST_READ = {v: getattr(dt, "bool_" if k == "bool" else k) for k, v in _ST_NAME.items()}
# MLX 0.32.4 neither writes nor reads float64 safetensors; float8 tensors load as raw uint8
del _ST_READ["F64"]
_ST_READ.update({"F8_E4M3": dt.uint8, "F8_E5M2": dt.uint8})
_JSON_KIND = {bool: "boolean", int: "number", float: "number", type(None): "null", list: "array",
              dict: "object"}


def _type_name(a: Any) -> str:
    return "mlx.core.array" if isinstance(a, array) else type(a).__name__


def _host(a: array) -> np.ndarray:
    """The evaluated data of ``a`` as numpy (a view; never written)."""
    return a._numpy()


def _is_path(file: Any) -> bool:
    return isinstance(file, (str, os.PathLike))


def _with_suffix(file: Any, suffix: str) -> str:
    path = os.fspath(file)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return path if path.endswith(suffix) else path + suffix


def _write(file: Any, suffix: str, data: bytes, fn: str) -> None:
    if _is_path(file):
        path = _with_suffix(file, suffix)
        try:
            f = open(path, "wb")
        except OSError:
            # MLX's C++ writers report an unopenable path as a RuntimeError.
            if fn == "save_gguf":
                raise RuntimeError("[save_gguf] gguf_create failed") from None
            raise RuntimeError(f"[{fn}] Failed to open file {path}") from None
        with f:
            f.write(data)
    else:
        file.write(data)


# -- .npy --------------------------------------------------------------------------------------


def _npy_bytes(a: array) -> bytes:
    """One array as MLX writes a .npy file (header text and padding included)."""
    x = _host(a)
    if not (x.flags.c_contiguous or x.flags.f_contiguous):
        x = np.ascontiguousarray(x)  # MLX copies too; the copy's flags then decide
    if x.flags.f_contiguous:
        fortran, data = True, x.tobytes(order="F")
    else:
        fortran, data = False, np.ascontiguousarray(x).tobytes()
    header = ("{'descr': '" + _NPY_DESCR[a._dtype.name] + "', 'fortran_order': "
              + ("True" if fortran else "False") + ", 'shape': ("
              + "".join(f"{d}, " for d in x.shape) + ")}")
    n = len(header)
    v1 = n + 15 < 65535
    header += " " * ((n + (13 if v1 else 15)) % 16) + "\n"
    raw = header.encode("latin1")
    prefix = b"\x93NUMPY" + (b"\x01\x00" + struct.pack("<H", len(raw)) if v1
                             else b"\x02\x00" + struct.pack("<I", len(raw)))
    return prefix + raw + data


def save(file: FileLike, arr: array) -> None:
    """Save ``arr`` to a ``.npy`` file (``.npy`` is appended to a path without it, as MLX)."""
    if not isinstance(arr, array):
        raise TypeError("save(): incompatible function arguments. The following argument types "
                        "are supported:\n    1. save(file: file | str | pathlib.Path, arr: array)"
                        f" -> None\n\nInvoked with types: {_type_name(file)}, {_type_name(arr)}")
    if not (_is_path(file) or hasattr(file, "write")):  # MLX's own check, past the binding
        raise ValueError("[save] Input must be a file-like object, or string")
    _write(file, ".npy", _npy_bytes(arr), "save")


class _Reader:
    """Reads exact byte counts, raising MLX's error on a short read."""

    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.pos = 0
        self.name = name

    def read(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise RuntimeError("[read] Unable to read from file.")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def _parse_npy(data: bytes, name: str) -> np.ndarray:
    r = _Reader(data, name)
    if len(data) < 10 or data[:6] != b"\x93NUMPY":
        raise RuntimeError(f"[load] Invalid header in file {name}")
    r.pos = 6
    major = r.read(2)[0]
    hlen = struct.unpack("<H", r.read(2))[0] if major == 1 else struct.unpack("<I", r.read(4))[0]
    try:
        header = ast.literal_eval(r.read(hlen).decode("latin1").strip())
        descr, fortran, shape = header["descr"], bool(header["fortran_order"]), header["shape"]
        shape = tuple(int(d) for d in shape)
    except RuntimeError:
        raise
    except Exception:  # noqa: BLE001 - any malformed header is MLX's header error
        raise RuntimeError(f"[load] Invalid header in file {name}") from None
    if not isinstance(descr, str) or len(descr) < 2:
        raise RuntimeError(f"[load] Invalid header in file {name}")
    order, code = (descr[0], descr[1:]) if descr[0] in "<>|=" else ("=", descr)
    dtype = _NPY_READ.get(code)
    if dtype is None:
        # MLX quotes the header's first three characters after the quote ('|O' -> |O')
        raise ValueError("[from_str] Unsupported array protocol type-string: "
                         f"{(descr + chr(39))[:3]}")
    count = 1
    for d in shape:
        count *= d
    raw = r.read(count * dtype.size)
    if dtype is dt.bfloat16:
        host = np.frombuffer(raw, "<u2" if order != ">" else ">u2").astype("=u2").view(
            dtype.np_dtype)
    else:
        src = np.dtype(code).newbyteorder(order if order in "<>" else "=")
        host = np.frombuffer(raw, src)
        if src.byteorder not in "=|":
            host = host.astype(src.newbyteorder("="))
    host = host.reshape(shape, order="F" if fortran else "C")
    return np.array(host, order="C")  # our own writable copy (0-d stays 0-d)


# -- .npz --------------------------------------------------------------------------------------


def _savez(file: FileLike, args: tuple, kwargs: dict, compress: bool, fn: str) -> None:
    arrays: dict[str, array] = {}
    for i, a in enumerate(args):
        arrays[f"arr_{i}"] = a
    for k, a in kwargs.items():
        if k in arrays:
            raise ValueError(f"[{fn}] Cannot use un-named variables and keyword {k}")
        arrays[k] = a
    for k, a in arrays.items():
        if not isinstance(a, array):
            raise RuntimeError(f"[{fn}] Array '{k}' must be an mx.array, got {_type_name(a)} "
                               "(MLX raises std::bad_cast here)")
    # MLX adds the keywords to its map first, then arr_0, arr_1, ...; members follow the map.
    names = map_order([*kwargs, *(f"arr_{i}" for i in range(len(args)))])
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    target = _with_suffix(file, ".npz") if _is_path(file) else file
    with zipfile.ZipFile(target, "w", compression=method) as z:
        for k in names:
            a = arrays[k]
            info = zipfile.ZipInfo(k + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            info.external_attr = 0o600 << 16
            z.writestr(info, _npy_bytes(a))


def savez(file: FileLike, *args: array, **kwargs: array) -> None:
    """Save arrays to an uncompressed ``.npz`` (positional ones as ``arr_0``, ``arr_1``...)."""
    _savez(file, args, kwargs, False, "savez")


def savez_compressed(file: FileLike, *args: array, **kwargs: array) -> None:
    """Save arrays to a deflate-compressed ``.npz``."""
    _savez(file, args, kwargs, True, "savez_compressed")


def _load_npz(file: Any, data: bytes | None, name: str) -> dict[str, array]:
    import io

    try:
        z = zipfile.ZipFile(io.BytesIO(data) if data is not None else file)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ValueError("[load_npz] Input must be a zip file or a file-like object that can be "
                         "opened with zipfile.ZipFile") from None
    out: dict[str, array] = {}
    with z:
        for member in z.namelist():
            key = member[:-4] if member.endswith(".npy") else member
            out[key] = _to_array(_parse_npy(z.read(member), member))
    return {k: out[k] for k in map_order(out)}


# -- .safetensors ------------------------------------------------------------------------------


def _check_str_keys(d: dict, fn: str) -> None:
    """Names must be strings: MLX's dict[str, ...] cast fails (std::bad_cast) otherwise."""
    for k in d:
        if not isinstance(k, str):
            raise RuntimeError(f"[{fn}] Key {k!r} must be a str, got {type(k).__name__} "
                               "(MLX raises std::bad_cast here)")


def save_safetensors(file: FileLike, arrays: dict[str, array],
                     metadata: dict[str, str] | None = None) -> None:
    """Save a dict of arrays (and string metadata) to a ``.safetensors`` file."""
    if not isinstance(arrays, dict) or not (metadata is None or isinstance(metadata, dict)):
        # nanobind's overload error, as MLX raises it
        types = ", ".join(_type_name(x) for x in (file, arrays) + (
            () if metadata is None else (metadata,)))
        raise TypeError(
            "save_safetensors(): incompatible function arguments. The following argument types "
            "are supported:\n    1. save_safetensors(file: file | str | pathlib.Path, arrays: "
            "dict[str, array], metadata: dict[str, str] | None = None)\n\nInvoked with types: "
            + types)
    if not (_is_path(file) or hasattr(file, "write")):
        raise ValueError("[save_safetensors] Input must be a file-like object, or string")
    if metadata is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise ValueError("[save_safetensors] Metadata must be a dictionary with string keys and "
                         "values")
    _check_str_keys(arrays, "save_safetensors")
    header: dict[str, Any] = {"__metadata__": metadata or None}
    chunks = []
    offset = 0
    for k in map_order(arrays):   # the data in MLX's order; the header's keys are sorted
        a = arrays[k]
        if not isinstance(a, array):
            raise RuntimeError(f"[save_safetensors] Value of '{k}' must be an mx.array, got "
                               f"{_type_name(a)} (MLX raises std::bad_cast here)")
        if a._dtype is dt.float64:  # MLX 0.32.4 has no F64 safetensors; it leaves an empty file
            _write(file, ".safetensors", b"", "save_safetensors")
            raise RuntimeError("[save_safetensors] received invalid dtype.")
        data = np.ascontiguousarray(_host(a)).tobytes()
        header[k] = {"data_offsets": [offset, offset + len(data)],
                     "dtype": _ST_NAME[a._dtype.name], "shape": list(a._shape)}
        offset += len(data)
        chunks.append(data)
    # Raw UTF-8 keys, as MLX writes them (not \u escapes).
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    _write(file, ".safetensors", struct.pack("<Q", len(text)) + text + b"".join(chunks),
           "save_safetensors")


def _load_safetensors(data: bytes, name: str) -> tuple[dict[str, array], dict[str, str]]:
    if len(data) < 8:
        raise RuntimeError(f"[load_safetensors] Invalid json header length file {name}")
    n = struct.unpack("<Q", data[:8])[0]
    if n == 0 or 8 + n > len(data):
        raise RuntimeError(f"[load_safetensors] Invalid json header length file {name}")
    try:
        header = json.loads(data[8:8 + n])
    except ValueError:
        raise RuntimeError(f"[load_safetensors] Invalid json header file {name}") from None
    if not isinstance(header, dict):
        raise RuntimeError(f"[load_safetensors] Invalid json header file {name}")
    meta = header.pop("__metadata__", None) or {}
    base = 8 + n
    out: dict[str, array] = {}
    for k, info in header.items():
        dtype = _ST_READ.get(info.get("dtype"))
        if dtype is None:
            raise RuntimeError(f"[safetensor] unsupported dtype {info.get('dtype')}")
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(v) for v in info["data_offsets"])
        count = 1
        for d in shape:
            count *= d
        if base + end > len(data):
            raise RuntimeError(f"[load_safetensors] Tensor '{k}' invalid data offsets ({begin}, "
                               f"{end}) exceeding the size of the file. Perhaps an incomplete "
                               "download or corrupt file?")
        if end - begin != count * dtype.size:
            raise RuntimeError(f"[load_safetensors] Invalid data offsets for '{k}' in file "
                               f"{name}")
        host = np.frombuffer(data, dtype.np_dtype, count, base + begin).reshape(shape)
        out[k] = _to_array(host.copy())
    for v in meta.values():  # MLX reads each value as a JSON string
        if not isinstance(v, str):
            raise RuntimeError("[json.exception.type_error.302] type must be string, but is "
                               f"{_JSON_KIND.get(type(v), 'object')}")
    # MLX parses the header into a sorted map, then fills its unordered maps from it.
    return ({k: out[k] for k in map_order(sorted(out))},
            {k: meta[k] for k in map_order(sorted(meta))})


# -- gguf --------------------------------------------------------------------------------------
# GGUF v3 (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), the subset MLX reads and
# writes: F32/F16/I8/I16/I32 tensors; Q4_0/Q4_1/Q8_0 load as MLX's affine-quantized triple
# (``name`` packed uint32, ``prefix.scales`` and ``prefix.biases`` float16); BF16 loads as
# float16 and Q4_K dequantized to float16 (MLX 0.32.4 converts types it has no equivalent for
# to float16 through gguflib; other quantized types raise NotImplementedError).

_GGUF_ALIGN = 32
_GGUF_TENSOR = {"float32": 0, "float16": 1, "int8": 24, "int16": 25, "int32": 26}
_GGUF_TENSOR_READ = {0: dt.float32, 1: dt.float16, 24: dt.int8, 25: dt.int16, 26: dt.int32}
# type id -> (name, bits, bytes per block, elements per block)
_GGUF_QUANT = {2: ("Q4_0", 4, 18, 32), 3: ("Q4_1", 4, 20, 32), 8: ("Q8_0", 8, 34, 32)}
_GGUF_Q4_K = 12  # MLX 0.32.4 dequantizes it to float16 (gguflib), as we do
_GGUF_BF16 = 30
# metadata value types: id -> (struct code, dtype of the loaded array)
_GGUF_VALUE = {0: ("B", dt.uint8), 1: ("b", dt.int8), 2: ("H", dt.uint16), 3: ("h", dt.int16),
               4: ("I", dt.uint32), 5: ("i", dt.int32), 6: ("f", dt.float32),
               7: ("?", dt.bool_), 10: ("Q", dt.uint64), 11: ("q", dt.int64),
               12: ("d", dt.float32)}
_GGUF_META_TYPE = {"float32": 6, "int64": 11, "int32": 5, "int16": 3, "int8": 1, "uint64": 10,
                   "uint32": 4, "uint16": 2, "uint8": 0, "bool": 7}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def _gguf_str(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _gguf_meta_value(key: str, value: Any) -> bytes:
    """One metadata value (type id + payload) as MLX writes it."""
    if isinstance(value, str):
        return struct.pack("<I", _GGUF_STRING) + _gguf_str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return (struct.pack("<IIQ", _GGUF_ARRAY, _GGUF_STRING, len(value))
                + b"".join(_gguf_str(v) for v in value))
    if isinstance(value, array):
        if value.ndim > 1:
            raise RuntimeError("[save_gguf] Cannot save arrays with more than one dimension.")
        if value.size == 0:
            raise RuntimeError("[save_gguf] Cannot save empty arrays.")
        vtype = _GGUF_META_TYPE.get(value._dtype.name)
        if vtype is None:
            raise ValueError(f"[save_gguf] array type {value._dtype.name} not support for "
                             "metadata.")
        data = np.ascontiguousarray(_host(value)).tobytes()
        if value.ndim == 1:
            return struct.pack("<IIQ", _GGUF_ARRAY, vtype, value.size) + data
        return struct.pack("<I", vtype) + data
    raise RuntimeError(f"[save_gguf] Metadata value of '{key}' must be an mx.array, a str or a "
                       f"list of str, got {type(value).__name__} (MLX raises std::bad_cast here)")


def _pad(n: int, align: int) -> int:
    return (align - n % align) % align


def save_gguf(file: FileLike, arrays: dict[str, array],
              metadata: dict[str, Any] | None = None) -> None:
    """Save arrays (float32, float16, int8, int16, int32) and metadata (arrays of at most one
    dimension, str, list of str) to a GGUF v3 file, laid out as MLX writes it."""
    if not isinstance(arrays, dict) or not (metadata is None or isinstance(metadata, dict)):
        types = ", ".join(_type_name(x) for x in (file, arrays) + (
            () if metadata is None else (metadata,)))
        raise TypeError(
            "save_gguf(): incompatible function arguments. The following argument types are "
            "supported:\n    1. save_gguf(file: file | str | pathlib.Path, arrays: dict[str, "
            "array], metadata: dict[str, array | str | list[str]])\n\nInvoked with types: "
            + types)
    if not _is_path(file):  # MLX's GGUF writer takes a path only (no file objects)
        raise ValueError("[save_gguf] Input must be a string")
    metadata = metadata or {}
    _check_str_keys(arrays, "save_gguf")
    _check_str_keys(metadata, "save_gguf")
    kvs = [_gguf_str(k) + _gguf_meta_value(k, metadata[k]) for k in map_order(metadata)]
    infos, chunks = [], []
    offset = 0
    for k in map_order(arrays):
        a = arrays[k]
        if not isinstance(a, array):
            raise RuntimeError(f"[save_gguf] Value of '{k}' must be an mx.array, got "
                               f"{_type_name(a)} (MLX raises std::bad_cast here)")
        ttype = _GGUF_TENSOR.get(a._dtype.name)
        if ttype is None:
            raise RuntimeError(f"[save_gguf] dtype {a._dtype.name} is not supported")
        offset += _pad(offset, _GGUF_ALIGN)
        data = np.ascontiguousarray(_host(a)).tobytes()
        infos.append(_gguf_str(k) + struct.pack("<I", a.ndim)
                     + struct.pack(f"<{a.ndim}Q", *a._shape[::-1])
                     + struct.pack("<IQ", ttype, offset))
        chunks.append((offset, data))
        offset += len(data)
    head = (b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs)) + b"".join(kvs)
            + b"".join(infos))
    out = bytearray(head + (bytes(_pad(len(head), _GGUF_ALIGN)) if infos else b""))
    base = len(out)
    for off, data in chunks:
        out += bytes(base + off - len(out)) + data
    _write(file, ".gguf", bytes(out), "save_gguf")


class _GGUFReader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise RuntimeError("[load_gguf] gguf_init failed")
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return v[0] if len(v) == 1 else v

    def string(self) -> str:
        n = self.take("Q")
        if self.pos + n > len(self.data):
            raise RuntimeError("[load_gguf] gguf_init failed")
        raw = self.data[self.pos:self.pos + n]
        self.pos += n
        return raw.decode("utf-8", "replace")

    def value(self, vtype: int) -> Any:
        if vtype == _GGUF_STRING:
            return self.string()
        if vtype == _GGUF_ARRAY:
            etype, n = self.take("I"), self.take("Q")
            if etype == _GGUF_STRING:
                return [self.string() for _ in range(n)]
            if etype == _GGUF_ARRAY:
                raise ValueError("[load_gguf] Only supports loading 1-layer of nested arrays.")
            code, dtype = self._scalar_type(etype)
            host = np.frombuffer(self.data, np.dtype("<" + code), n, self.pos)
            self.pos += n * host.itemsize
            return _to_array(host.astype(dtype.np_dtype))
        code, dtype = self._scalar_type(vtype)
        return _to_array(np.array(self.take(code), dtype.np_dtype))

    @staticmethod
    def _scalar_type(vtype: int) -> tuple[str, dt.Dtype]:
        if vtype not in _GGUF_VALUE:
            raise RuntimeError("[load_gguf] Received unexpected type.")
        return _GGUF_VALUE[vtype]


def _gguf_quantized(name: str, kind: int, shape: tuple[int, ...], raw: bytes
                    ) -> dict[str, array]:
    """Q4_0/Q4_1/Q8_0 blocks as MLX's (packed uint32 weights, float16 scales, biases)."""
    label, bits, block, _ = _GGUF_QUANT[kind]
    if not shape or shape[-1] % 32:
        raise RuntimeError(f"[load_gguf] tensor {name}has incompatible last dim shape: "
                           f"{shape[-1] if shape else 0}")
    n_blocks = len(raw) // block
    blocks = np.frombuffer(raw, np.uint8, n_blocks * block).reshape(n_blocks, block)
    scales = blocks[:, :2].copy().view(np.float16)[:, 0]
    if kind == 8:
        q = blocks[:, 2:] ^ np.uint8(0x80)
        biases = (scales.astype(np.float32) * -128).astype(np.float16)
    else:
        nib = blocks[:, 4:] if kind == 3 else blocks[:, 2:]
        elems = np.concatenate([nib & 0x0F, nib >> 4], axis=1)  # element order
        q = (elems[:, 0::2] | (elems[:, 1::2] << 4)).astype(np.uint8)
        biases = (blocks[:, 2:4].copy().view(np.float16)[:, 0] if kind == 3
                  else (scales.astype(np.float32) * -8).astype(np.float16))
    wshape = shape[:-1] + (shape[-1] * bits // 32,)
    sshape = shape[:-1] + (shape[-1] // 32,)
    # MLX drops the last 7 characters (".weight"), or keeps a shorter name whole
    prefix = name[:len(name) - 7] if len(name) >= 7 else name
    out = {name: _to_array(np.ascontiguousarray(q).view("<u4").astype(np.uint32)
                           .reshape(wshape))}
    for key, val in ((prefix + ".scales", scales), (prefix + ".biases", biases)):
        if key in out:
            raise RuntimeError(f"[load_gguf] Duplicate parameter name {key} this can happend "
                               "when loading quantized tensors.")
        out[key] = _to_array(np.ascontiguousarray(val).reshape(sshape))
    return out


def _gguf_q4_k_to_f16(raw: bytes, shape: tuple[int, ...]) -> np.ndarray:
    """Q4_K super-blocks (256 weights: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
    128 bytes of nibbles) dequantized to float16: y = d * scale * q - dmin * min."""
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, 144)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    sc = blocks[:, 4:16].astype(np.uint16)
    scale = np.concatenate([sc[:, 0:4] & 63, (sc[:, 8:12] & 0xF) | ((sc[:, 0:4] >> 6) << 4)], 1)
    mins = np.concatenate([sc[:, 4:8] & 63, (sc[:, 8:12] >> 4) | ((sc[:, 4:8] >> 6) << 4)], 1)
    qs = blocks[:, 16:].reshape(-1, 4, 32)
    q = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
    y = (d * scale)[:, :, None] * q - (dmin * mins)[:, :, None]
    return y.astype(np.float16).reshape(shape)


def _load_gguf(data: bytes) -> tuple[dict[str, array], dict[str, Any]]:
    r = _GGUFReader(data)
    if data[:4] != b"GGUF":
        raise RuntimeError("[load_gguf] gguf_init failed")
    r.pos = 4
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    if version not in (2, 3):
        raise RuntimeError("[load_gguf] gguf_init failed")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    align = _GGUF_ALIGN
    if isinstance(meta.get("general.alignment"), array):
        align = int(meta["general.alignment"].item()) or _GGUF_ALIGN
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ndim = r.take("I")
        dims = [r.take("Q") for _ in range(ndim)]
        infos.append((name, tuple(int(d) for d in dims[::-1]), r.take("I"), r.take("Q")))
    base = r.pos + _pad(r.pos, align)
    arrays: dict[str, array] = {}
    for name, shape, kind, offset in infos:
        count = 1
        for d in shape:
            count *= d
        start = base + offset
        if kind in _GGUF_TENSOR_READ:
            dtype = _GGUF_TENSOR_READ[kind]
            nbytes = count * dtype.size
        elif kind in _GGUF_QUANT:
            nbytes = count // _GGUF_QUANT[kind][3] * _GGUF_QUANT[kind][2]
        elif kind == _GGUF_BF16:
            nbytes = count * 2
        elif kind == _GGUF_Q4_K and count % 256 == 0:
            nbytes = count // 256 * 144
        else:
            raise NotImplementedError(
                f"[load_gguf] tensor {name}: GGUF tensor type {kind} is not supported by "
                "pycudamlx (F32, F16, BF16, I8, I16, I32, Q4_0, Q4_1, Q8_0 and Q4_K are); "
                "dequantize it with the `gguf` Python package and save it as .safetensors.")
        if start + nbytes > len(data):
            raise RuntimeError(f"[load_gguf] tensor {name} lies past the end of the file")
        raw = data[start:start + nbytes]
        if kind in _GGUF_QUANT:
            new = _gguf_quantized(name, kind, shape, raw)
        elif kind == _GGUF_Q4_K:
            new = {name: _to_array(_gguf_q4_k_to_f16(raw, shape))}
        elif kind == _GGUF_BF16:  # MLX converts what it has no type for to float16
            host = np.frombuffer(raw, "<u2").astype(np.uint16).view(dt.bfloat16.np_dtype)
            new = {name: _to_array(host.astype(np.float16).reshape(shape))}
        else:
            host = np.frombuffer(raw, dtype.np_dtype.newbyteorder("<"), count)
            new = {name: _to_array(host.astype(dtype.np_dtype).reshape(shape))}
        for k, v in new.items():
            if k in arrays:
                raise RuntimeError(f"[load_gguf] Duplicate parameter name {k} this can "
                                   "happend when loading quantized tensors.")
            arrays[k] = v
    return ({k: arrays[k] for k in map_order(arrays)}, {k: meta[k] for k in map_order(meta)})


# -- load --------------------------------------------------------------------------------------


def _to_array(host: np.ndarray) -> array:
    """An evaluated array over host data (its dtype kept exactly: float64 stays float64)."""
    return from_data(host, dt.exact_dtype_from_numpy(host.dtype))


_FORMATS = ("npy", "npz", "safetensors", "gguf")


def _open_error(format: str, name: str, is_dir: bool) -> Exception:
    """MLX's error for a path it cannot read: each format's reader words its own (``npz``
    goes through Python's zipfile, hence a ValueError; the C++ readers raise RuntimeError)."""
    if format == "npz":
        return ValueError("[load_npz] Input must be a zip file or a file-like object that can "
                          "be opened with zipfile.ZipFile")
    if is_dir:
        return RuntimeError("[read] Unable to read 8 bytes from file.")
    reader = "load_safetensors" if format == "safetensors" else "load"
    return RuntimeError(f"[{reader}] Failed to open file {name}")


def load(file: FileLike, /, format: str | None = None, return_metadata: bool = False, *,
         stream: Any = None) -> Any:
    """Load a ``.npy`` (one array), ``.npz`` or ``.safetensors`` (a dict) file, as MLX does;
    the format comes from the extension unless ``format`` names it."""
    if return_metadata is not True and return_metadata is not False:
        from ._nanobind import argument_error  # nanobind's bool takes only True/False

        raise argument_error("load", "load(): incompatible function arguments: return_metadata "
                                     f"must be a bool, not {type(return_metadata).__name__}")
    if stream is not None:
        from . import device as dev

        dev.resolve_stream(stream)  # validates it; loaded data is read by any stream
    if format is not None and not isinstance(format, str):
        from ._nanobind import argument_error

        raise argument_error("load", "load(): incompatible function arguments: format must be "
                                     f"a str or None, not {type(format).__name__}")
    is_path = _is_path(file)
    if not is_path and not hasattr(file, "read"):  # MLX's own check, past the binding
        raise ValueError("[load] Input must be a file-like object opened in binary mode, or "
                         "string")
    name = os.fsdecode(os.fspath(file)) if is_path else None
    if format is None:
        fname = name if is_path else file.name  # AttributeError without .name, as MLX
        ext = os.path.splitext(str(fname))[1]
        if not ext:
            raise ValueError("[load] Could not infer file format from extension")
        format = ext[1:]
    if format not in _FORMATS:
        raise ValueError(f"[load] Unknown file format {format}")
    if return_metadata and format not in ("safetensors", "gguf"):
        raise ValueError(f"[load] metadata not supported for format {format}")
    if format == "gguf" and not is_path:  # MLX's GGUF reader opens paths only
        raise ValueError("[load_gguf] Input must be a string")
    if is_path and format == "gguf" and not os.path.isfile(name):
        raise ValueError(f"[load_gguf] Failed to open {name}")
    if is_path:
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as e:
            raise _open_error(format, name, isinstance(e, IsADirectoryError)) from None
    else:
        name = str(getattr(file, "name", "<file>"))
        data = file.read()
    if format == "npy":
        return _to_array(_parse_npy(data, name))
    if format == "npz":
        return _load_npz(file, data, name)
    if format == "gguf":
        arrays, meta = _load_gguf(data)
    else:
        arrays, meta = _load_safetensors(data, name)
    return (arrays, meta) if return_metadata else arrays
