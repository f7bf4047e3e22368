"""File IO: ``mx.save``/``savez``/``savez_compressed``/``save_safetensors``/``load``.

The files are byte-compatible with MLX 0.32.4's: ``.npy`` headers are written exactly as MLX
writes them (its padding, ``fortran_order`` for column-contiguous data, bfloat16 as ``'<V2'``,
which MLX reads back as bfloat16 and numpy as raw 2-byte records), ``.npz`` is a zip of such
``.npy`` members, ``.safetensors`` a compact JSON header with sorted keys. Loading accepts what
numpy, MLX and the safetensors library write. Arrays are evaluated (on any device) and read
through their host view; loaded arrays are host data that ops on any stream read directly.
GGUF is not implemented (a clear NotImplementedError names the alternatives).
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


def _write(file: Any, suffix: str, data: bytes) -> None:
    if _is_path(file):
        with open(_with_suffix(file, suffix), "wb") as f:
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
    if not isinstance(arr, array) or not (_is_path(file) or hasattr(file, "write")):
        raise TypeError("save(): incompatible function arguments. The following argument types "
                        "are supported:\n    1. save(file: file | str | pathlib.Path, arr: array)"
                        f" -> None\n\nInvoked with types: {_type_name(file)}, {_type_name(arr)}")
    _write(file, ".npy", _npy_bytes(arr))


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
        raise ValueError(f"[from_str] Unsupported array protocol type-string: {descr[:3]}")
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
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    target = _with_suffix(file, ".npz") if _is_path(file) else file
    with zipfile.ZipFile(target, "w", compression=method) as z:
        for k, a in arrays.items():
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
    return out


# -- .safetensors ------------------------------------------------------------------------------


def save_safetensors(file: FileLike, arrays: dict[str, array],
                     metadata: dict[str, str] | None = None) -> None:
    """Save a dict of arrays (and string metadata) to a ``.safetensors`` file."""
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError("[save_safetensors] Metadata must be a dictionary with string keys and "
                         "values")
    if not isinstance(arrays, dict):
        raise TypeError("save_safetensors(): arrays must be a dict[str, array], got "
                        f"{_type_name(arrays)}")
    header: dict[str, Any] = {"__metadata__": metadata or None}
    chunks = []
    offset = 0
    for k, a in arrays.items():
        if not isinstance(a, array):
            raise RuntimeError(f"[save_safetensors] Value of '{k}' must be an mx.array, got "
                               f"{_type_name(a)} (MLX raises std::bad_cast here)")
        data = np.ascontiguousarray(_host(a)).tobytes()
        header[k] = {"data_offsets": [offset, offset + len(data)],
                     "dtype": _ST_NAME[a._dtype.name], "shape": list(a._shape)}
        offset += len(data)
        chunks.append(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    _write(file, ".safetensors", struct.pack("<Q", len(text)) + text + b"".join(chunks))


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
            raise ValueError(f"[safetensor] Unsupported dtype {info.get('dtype')}")
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(v) for v in info["data_offsets"])
        count = 1
        for d in shape:
            count *= d
        if end - begin != count * dtype.size or base + end > len(data):
            raise RuntimeError(f"[load_safetensors] Invalid data offsets for '{k}' in file "
                               f"{name}")
        host = np.frombuffer(data, dtype.np_dtype, count, base + begin).reshape(shape)
        out[k] = _to_array(host.copy())
    return out, {str(k): str(v) for k, v in meta.items()}


# -- gguf --------------------------------------------------------------------------------------


def save_gguf(file: FileLike, arrays: dict[str, array],
              metadata: dict[str, Any] | None = None) -> None:
    """Not implemented: GGUF (and its quantized tensor types) is out of scope for now."""
    raise NotImplementedError(
        "[save_gguf] GGUF files are not supported by pycudamlx yet; use mx.save_safetensors "
        "(or mx.savez), which real MLX reads too, or the `gguf` Python package.")


# -- load --------------------------------------------------------------------------------------


def _to_array(host: np.ndarray) -> array:
    """An evaluated array over host data (its dtype kept exactly: float64 stays float64)."""
    return from_data(host, dt.exact_dtype_from_numpy(host.dtype))


_FORMATS = ("npy", "npz", "safetensors", "gguf")


def load(file: FileLike, /, format: str | None = None, return_metadata: bool = False, *,
         stream: Any = None) -> Any:
    """Load a ``.npy`` (one array), ``.npz`` or ``.safetensors`` (a dict) file, as MLX does;
    the format comes from the extension unless ``format`` names it."""
    if stream is not None:
        from . import device as dev

        dev.resolve_stream(stream)  # validates it; loaded data is read by any stream
    is_path = _is_path(file)
    if not is_path and not hasattr(file, "read"):
        raise TypeError("load(): incompatible function arguments: file must be a str, "
                        f"pathlib.Path or a readable file object, got {_type_name(file)}")
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
    if format == "gguf":
        raise NotImplementedError(
            "[load] GGUF files are not supported by pycudamlx yet; convert them to "
            ".safetensors (e.g. with the `gguf` Python package) and load that.")
    if is_path:
        try:
            with open(name, "rb") as f:
                data = f.read()
        except IsADirectoryError:
            raise RuntimeError("[read] Unable to read from file.") from None
        except OSError:
            raise RuntimeError(f"[load] Failed to open file {name}") from None
    else:
        name = str(getattr(file, "name", "<file>"))
        data = file.read()
    if format == "npy":
        return _to_array(_parse_npy(data, name))
    if format == "npz":
        return _load_npz(file, data, name)
    arrays, meta = _load_safetensors(data, name)
    return (arrays, meta) if return_metadata else arrays
