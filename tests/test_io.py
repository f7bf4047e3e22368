"""mx.save / savez / savez_compressed / save_safetensors / load: files readable both ways with
MLX 0.32.4 and numpy (.npy byte-identical to MLX's), every dtype, 0-d, empty, non-contiguous
arrays, file objects and pathlib paths, MLX's suffix rules and errors."""

from __future__ import annotations

import io
import json
import pathlib
import struct
import zipfile

import ml_dtypes
import numpy as np
import pytest

import pycudamlx.core as mx

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "complex64"]


@pytest.fixture(scope="module")
def mlx():
    return pytest.importorskip("mlx.core")


def _np_data(dtype_name: str, shape=(3, 5), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype_name == "bool_":
        return rng.integers(0, 2, shape).astype(bool)
    np_dt = getattr(mx, dtype_name).np_dtype
    if np_dt.kind in "iu":
        info = np.iinfo(np_dt)
        return rng.integers(info.min, info.max, shape, dtype=np_dt, endpoint=True)
    if np_dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np_dt)
    return rng.standard_normal(shape).astype(np_dt)


def _layouts(m, x, dtype_name):
    """The same values as several layouts: contiguous, transposed, strided, 0-d, empty, ..."""
    a = m.array(x).astype(getattr(m, dtype_name))
    return {"c": a, "T": m.transpose(a), "strided": a[::2, 1::2], "zero_d": a[1, 2],
            "empty": a[:0], "row": a[1:2], "col": a[:, 1:2], "rev": a[::-1],
            "bcast": m.broadcast_to(a[:1], (3, a.shape[1])), "Tcol": m.transpose(a[:, :1])}


def _bits(x) -> bytes:
    """Bytes of an array, ours or MLX's (MLX's bfloat16 has no numpy form: view as uint16)."""
    if type(x).__module__.startswith("mlx"):
        import mlx.core as m

        if x.dtype == m.bfloat16:
            x = m.view(x, m.uint16)
        return np.ascontiguousarray(np.array(x)).tobytes()
    return np.ascontiguousarray(x._numpy()).tobytes()


def _same(ours, theirs) -> None:
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert repr(ours.dtype).split(".")[-1] == repr(theirs.dtype).split(".")[-1]
    assert _bits(ours) == _bits(theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_npy_byte_identical_to_mlx(mlx, tmp_path, dtype):
    x = _np_data(dtype, (4, 6))
    if dtype == "bfloat16":
        x = x.astype(np.float32)
    ours, theirs = _layouts(mx, x, dtype), _layouts(mlx, x, dtype)
    for k in ours:
        o, t = ours[k], theirs[k]
        mx.save(tmp_path / f"o_{k}.npy", o)
        mlx.save(str(tmp_path / f"t_{k}.npy"), t)
        ob, tb = (tmp_path / f"o_{k}.npy").read_bytes(), (tmp_path / f"t_{k}.npy").read_bytes()
        assert ob == tb, k
        _same(mlx.load(str(tmp_path / f"o_{k}.npy")), t)
        _same(mx.load(tmp_path / f"t_{k}.npy"), t)
        if dtype != "bfloat16":
            np.testing.assert_array_equal(np.load(tmp_path / f"o_{k}.npy"), np.array(o))


def test_npy_from_numpy(tmp_path):
    cases = {"f8": np.arange(6.0).reshape(2, 3), "fortran": np.asfortranarray(
        np.arange(6, dtype=np.int16).reshape(2, 3)), "be": np.arange(5, dtype=">i4"),
        "u8": np.arange(3, dtype=np.uint64), "f2": np.ones(3, np.float16),
        "b": np.array([True, False]), "z": np.array(7, np.int8), "e": np.zeros((0, 3), np.float32)}
    for k, v in cases.items():
        np.save(tmp_path / f"{k}.npy", v)
        got = mx.load(str(tmp_path / f"{k}.npy"))
        assert got.shape == v.shape and got.dtype.np_dtype == v.dtype.newbyteorder("=")
        np.testing.assert_array_equal(np.array(got), v)


def test_bfloat16_npy_is_v2_records(tmp_path):
    x = np.array([1.0, -2.5, 3.25], ml_dtypes.bfloat16)
    mx.save(tmp_path / "b.npy", mx.array(x))
    raw = np.load(tmp_path / "b.npy")  # numpy sees MLX's bfloat16 as 2-byte void records
    assert raw.dtype == np.dtype("V2") and raw.tobytes() == x.tobytes()
    back = mx.load(str(tmp_path / "b.npy"))
    assert back.dtype == mx.bfloat16 and np.array(back).tobytes() == x.tobytes()


def test_suffix_rules_and_paths(tmp_path):
    mx.save(str(tmp_path / "a"), mx.arange(3))
    mx.save(tmp_path / "b.NPY", mx.arange(3))
    mx.save(str(tmp_path / "c.txt"), mx.arange(3))
    mx.savez(tmp_path / "d", x=mx.ones(2))
    mx.save_safetensors(str(tmp_path / "e"), {"x": mx.ones(2)})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["a.npy", "b.NPY.npy", "c.txt.npy", "d.npz", "e.safetensors"]


def test_file_objects():
    buf = io.BytesIO()
    mx.save(buf, mx.arange(4))
    np.testing.assert_array_equal(np.load(io.BytesIO(buf.getvalue())), np.arange(4))
    buf.seek(0)
    np.testing.assert_array_equal(np.array(mx.load(buf, format="npy")), np.arange(4))
    with pytest.raises(AttributeError):  # no .name to infer the format from, as MLX
        mx.load(io.BytesIO(buf.getvalue()))
    z = io.BytesIO()
    mx.savez(z, a=mx.ones(2))
    z.seek(0)
    assert list(mx.load(z, format="npz")) == ["a"]
    s = io.BytesIO()
    mx.save_safetensors(s, {"a": mx.ones(2)}, {"k": "v"})
    s.seek(0)
    arrays, meta = mx.load(s, format="safetensors", return_metadata=True)
    assert meta == {"k": "v"} and list(arrays) == ["a"]


def test_real_files_objects(tmp_path):
    with open(tmp_path / "f.npy", "wb") as f:
        mx.save(f, mx.arange(3))
    with open(tmp_path / "f.npy", "rb") as f:
        np.testing.assert_array_equal(np.array(mx.load(f)), np.arange(3))


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_both_ways(mlx, tmp_path, compressed):
    save_ours = mx.savez_compressed if compressed else mx.savez
    save_theirs = mlx.savez_compressed if compressed else mlx.savez
    arrs = {d: _np_data(d, (2, 3), i) for i, d in enumerate(DTYPES) if d != "bfloat16"}
    pos = np.arange(4, dtype=np.int32)
    save_ours(tmp_path / "o.npz", mx.array(pos), bf=mx.ones((2,), mx.bfloat16),
              t=mx.transpose(mx.array(arrs["int16"])), **{k: mx.array(v) for k, v in arrs.items()})
    save_theirs(str(tmp_path / "t.npz"), mlx.array(pos), bf=mlx.ones((2,), mlx.bfloat16),
                t=mlx.transpose(mlx.array(arrs["int16"])),
                **{k: mlx.array(v) for k, v in arrs.items()})
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    assert {i.compress_type for i in zipfile.ZipFile(tmp_path / "o.npz").infolist()} == {method}
    ours_from_theirs = mx.load(tmp_path / "t.npz")
    theirs_from_ours = mlx.load(str(tmp_path / "o.npz"))
    theirs = mlx.load(str(tmp_path / "t.npz"))
    assert set(ours_from_theirs) == set(theirs_from_ours) == set(theirs)
    for k in theirs:
        _same(ours_from_theirs[k], theirs[k])
        _same(mx.load(tmp_path / "o.npz")[k], theirs_from_ours[k])
    with np.load(tmp_path / "o.npz") as npz:
        np.testing.assert_array_equal(npz["arr_0"], pos)
        for k, v in arrs.items():
            np.testing.assert_array_equal(npz[k], np.array(mx.array(v)))
    np.savez(tmp_path / "n.npz", a=np.arange(3), b=np.ones((2, 2), np.float32))
    got = mx.load(tmp_path / "n.npz")
    assert got["a"].dtype == mx.int64 and got["b"].shape == (2, 2)


def test_savez_errors(mlx, tmp_path):
    with pytest.raises(ValueError, match="Cannot use un-named variables and keyword arr_0"):
        mx.savez(tmp_path / "x", mx.ones(1), arr_0=mx.ones(2))
    with pytest.raises(RuntimeError):
        mx.savez(tmp_path / "y", 1)
    with pytest.raises(RuntimeError):
        mlx.savez(str(tmp_path / "y2"), 1)


@pytest.mark.parametrize("meta", [None, {}, {"format": "mlx", "x": "1"}])
def test_safetensors_both_ways(mlx, tmp_path, meta):
    arrs = {d: _np_data(d, (3, 2), i) for i, d in enumerate(DTYPES) if d != "bfloat16"}
    ours = {k: mx.array(v) for k, v in arrs.items()}
    theirs = {k: mlx.array(v) for k, v in arrs.items()}
    ours.update(bf=mx.arange(5).astype(mx.bfloat16), z=mx.array(2.5), e=mx.zeros((0, 3)),
                t=mx.transpose(mx.array(arrs["int32"])), A=mx.ones((1,)))
    theirs.update(bf=mlx.arange(5).astype(mlx.bfloat16), z=mlx.array(2.5), e=mlx.zeros((0, 3)),
                  t=mlx.transpose(mlx.array(arrs["int32"])), A=mlx.ones((1,)))
    mx.save_safetensors(tmp_path / "o", ours, meta)
    mlx.save_safetensors(str(tmp_path / "t"), theirs, meta)
    # same header (MLX sorts the JSON keys; data order within the file may differ)
    def header(p):
        raw = p.read_bytes()
        n = struct.unpack("<Q", raw[:8])[0]
        h = json.loads(raw[8:8 + n])
        return {k: (v if k == "__metadata__" else (v["dtype"], v["shape"])) for k, v in h.items()}
    assert header(tmp_path / "o.safetensors") == header(tmp_path / "t.safetensors")
    a1, m1 = mx.load(tmp_path / "t.safetensors", return_metadata=True)
    a2, m2 = mlx.load(str(tmp_path / "o.safetensors"), return_metadata=True)
    assert m1 == m2 == (meta or {})
    for k in theirs:
        _same(a1[k], theirs[k])
        _same(ours[k], a2[k])


def test_safetensors_errors(tmp_path):
    with pytest.raises(ValueError, match="Metadata must be a dictionary with string keys"):
        mx.save_safetensors(tmp_path / "m", {"a": mx.ones(1)}, {"k": 1})
    with pytest.raises(RuntimeError):
        mx.save_safetensors(tmp_path / "m", {"a": [1, 2]})
    (tmp_path / "bad.safetensors").write_bytes(b"hello world, not st")
    with pytest.raises(RuntimeError, match="Invalid json header length"):
        mx.load(tmp_path / "bad.safetensors")


def test_load_errors(mlx, tmp_path):
    mx.save(tmp_path / "x.npy", mx.arange(3))
    (tmp_path / "dir.npz").mkdir()
    (tmp_path / "dir.safetensors").mkdir()
    cases = [
        (lambda m: m.load(str(tmp_path / "missing.npy")), RuntimeError, "Failed to open file"),
        # each reader words its own failure (model.load_weights of a missing file shows it)
        (lambda m: m.load(str(tmp_path / "missing.npz")), ValueError, r"\[load_npz\] Input must"),
        (lambda m: m.load(str(tmp_path / "missing.safetensors")), RuntimeError,
         r"\[load_safetensors\] Failed to open file .*missing.safetensors"),
        (lambda m: m.load(str(tmp_path / "dir.npz")), ValueError, "Input must be a zip file"),
        (lambda m: m.load(str(tmp_path / "dir.safetensors")), RuntimeError,
         r"\[read\] Unable to read 8 bytes from file"),
        (lambda m: m.load(str(tmp_path / "x")), ValueError, "Could not infer file format"),
        (lambda m: m.load(str(tmp_path / "x.npy"), format="abc"), ValueError,
         "Unknown file format abc"),
        (lambda m: m.load(str(tmp_path / "x.npy"), format=".npy"), ValueError,
         "Unknown file format .npy"),
        (lambda m: m.load(str(tmp_path / "x.npy"), return_metadata=True), ValueError,
         "metadata not supported for format npy"),
    ]
    (tmp_path / "bad.npy").write_bytes(b"hello world, not npy")
    (tmp_path / "bad.npz").write_bytes(b"hello world, not npz")
    np.save(tmp_path / "u.npy", np.array(["a"]))
    np.save(tmp_path / "c16.npy", np.array([1j]))
    cases += [
        (lambda m: m.load(str(tmp_path / "bad.npy")), RuntimeError, "Invalid header in file"),
        (lambda m: m.load(str(tmp_path / "bad.npz")), ValueError, "Input must be a zip file"),
        (lambda m: m.load(str(tmp_path / "u.npy")), ValueError, "Unsupported array protocol"),
        (lambda m: m.load(str(tmp_path / "c16.npy")), ValueError, "Unsupported array protocol"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call(mx)
        with pytest.raises(exc, match=msg):
            call(mlx)
    (tmp_path / "tr.npy").write_bytes((tmp_path / "x.npy").read_bytes()[:-3])
    with pytest.raises(RuntimeError, match="Unable to read"):  # MLX: at eval, here at load
        mx.load(tmp_path / "tr.npy")
    with pytest.raises(TypeError):
        mx.save(tmp_path / "l.npy", [1, 2])
    with pytest.raises(TypeError):
        mx.save(tmp_path / "l.npy", np.ones(2))


# -- gguf --------------------------------------------------------------------------------------


def _gstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _gguf_file(tensors) -> bytes:
    """A GGUF v3 file written by hand: tensors = [(name, shape, ggml type id, raw bytes)]."""
    infos, chunks, off = b"", [], 0
    for name, shape, kind, raw in tensors:
        off += (-off) % 32
        infos += (_gstr(name) + struct.pack("<I", len(shape))
                  + struct.pack(f"<{len(shape)}Q", *shape[::-1]) + struct.pack("<IQ", kind, off))
        chunks.append((off, raw))
        off += len(raw)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0) + infos
    out = bytearray(head + bytes((-len(head)) % 32))
    base = len(out)
    for o, raw in chunks:
        out += bytes(base + o - len(out)) + raw
    return bytes(out)


def _q_blocks(kind: int, n: int, rng) -> bytes:
    out = b""
    for _ in range(n):
        d = np.array([rng.uniform(0.01, 1)], np.float16).tobytes()
        if kind == 8:
            out += d + rng.integers(0, 256, 32, dtype=np.uint8).tobytes()
        elif kind == 2:
            out += d + rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
        elif kind == 12:
            out += (np.array(rng.uniform(0.01, 1, 2), np.float16).tobytes()
                    + rng.integers(0, 256, 140, dtype=np.uint8).tobytes())
        else:
            out += (d + np.array([rng.uniform(-1, 1)], np.float16).tobytes()
                    + rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
    return out


def _same_dict(ours: dict, theirs: dict) -> None:
    assert set(ours) == set(theirs)
    for k in theirs:
        if isinstance(theirs[k], (str, list)):
            assert ours[k] == theirs[k]
        else:
            _same(ours[k], theirs[k])


def test_gguf_both_ways(mlx, tmp_path):
    rng = np.random.default_rng(2)
    arrs = {d: _np_data(d, (3, 4), i) for i, d in enumerate(["float32", "float16", "int8",
                                                             "int16", "int32"])}
    meta_np = {"u8": np.array(7, np.uint8), "i64v": np.array([1, -2, 3], np.int64),
               "f": np.array(1.5, np.float32), "bv": np.array([True, False]),
               "u64": np.array([2**63], np.uint64)}

    def build(m):
        arrays = {k: m.array(v) for k, v in arrs.items()}
        arrays.update(t=m.transpose(m.array(arrs["float32"])), z=m.array(2.5),
                      e=m.zeros((0, 3)), s=m.array(arrs["int16"])[::2, 1::2])
        meta = {k: m.array(v) for k, v in meta_np.items()}
        meta.update(name="llama", tokens=["a", "bc", ""], empty=[])
        return arrays, meta
    ours, ometa = build(mx)
    theirs, tmeta = build(mlx)
    mx.save_gguf(tmp_path / "o", ours, ometa)
    mlx.save_gguf(str(tmp_path / "t"), theirs, tmeta)
    a1, m1 = mx.load(tmp_path / "t.gguf", return_metadata=True)
    a2, m2 = mlx.load(str(tmp_path / "o.gguf"), return_metadata=True)
    _same_dict(a1, theirs)
    _same_dict(a2, theirs)
    _same_dict(m1, tmeta)
    _same_dict(m2, tmeta)
    assert mx.load(tmp_path / "t.gguf").keys() == a1.keys()
    # the same file when there is one tensor and one key (MLX orders several by its hash maps)
    mx.save_gguf(tmp_path / "o1", {"w": ours["float16"]}, {"k": ometa["i64v"]})
    mlx.save_gguf(str(tmp_path / "t1"), {"w": theirs["float16"]}, {"k": tmeta["i64v"]})
    assert (tmp_path / "o1.gguf").read_bytes() == (tmp_path / "t1.gguf").read_bytes()
    mx.save_gguf(tmp_path / "o2", {})
    mlx.save_gguf(str(tmp_path / "t2"), {})
    assert (tmp_path / "o2.gguf").read_bytes() == (tmp_path / "t2.gguf").read_bytes()


def test_gguf_quantized_and_converted_tensors(mlx, tmp_path):
    rng = np.random.default_rng(3)
    bf = (np.arange(6, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    data = _gguf_file([("blk.q8.weight", (3, 64), 8, _q_blocks(8, 6, rng)),
                       ("blk.q40.weight", (2, 32), 2, _q_blocks(2, 2, rng)),
                       ("q41", (1, 2, 96), 3, _q_blocks(3, 6, rng)),
                       ("bf", (2, 3), 30, bf)])
    (tmp_path / "q.gguf").write_bytes(data)
    ours, theirs = mx.load(tmp_path / "q.gguf"), mlx.load(str(tmp_path / "q.gguf"))
    assert "q41.scales" in ours and "blk.q40.biases" in ours
    _same_dict(ours, theirs)
    bad = _gguf_file([("x.weight", (2, 48), 8, _q_blocks(8, 3, rng))])
    (tmp_path / "bad_q.gguf").write_bytes(bad)
    with pytest.raises(RuntimeError, match="incompatible last dim shape"):
        mx.load(tmp_path / "bad_q.gguf")
    with pytest.raises(RuntimeError, match="incompatible last dim shape"):
        mlx.load(str(tmp_path / "bad_q.gguf"))
    (tmp_path / "i64.gguf").write_bytes(_gguf_file([("x", (2, 4), 27, bytes(64))]))
    with pytest.raises(RuntimeError):  # NotImplementedError (a RuntimeError) naming the type
        mx.load(tmp_path / "i64.gguf")
    with pytest.raises(RuntimeError):
        mlx.load(str(tmp_path / "i64.gguf"))


def test_gguf_q4_k_dequantizes_to_float16(mlx, tmp_path):
    """Q4_K loads as float16 as in MLX 0.32.4, by ggml's formula. MLX's gguflib gives the odd
    32-weight sub-blocks the scale and min of the even one before them (a bug): those rows are
    the documented difference, the even ones match MLX bit for bit."""
    rng = np.random.default_rng(4)
    raw = _q_blocks(12, 4, rng)
    (tmp_path / "k.gguf").write_bytes(_gguf_file([("w", (2, 512), 12, raw)]))
    ours = mx.load(tmp_path / "k.gguf")["w"]
    theirs = mlx.load(str(tmp_path / "k.gguf"))["w"]
    assert ours.dtype == mx.float16 and ours.shape == (2, 512)
    o = np.array(ours).reshape(-1, 8, 32)
    t = np.array(theirs).reshape(-1, 8, 32)
    np.testing.assert_array_equal(o[:, 0::2], t[:, 0::2])
    # ggml's dequantize_row_q4_K, one weight at a time
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, 144)
    for b, blk in enumerate(blocks):
        d = np.float32(blk[0:2].view(np.float16)[0])
        dmin = np.float32(blk[2:4].view(np.float16)[0])
        sc = [int(v) for v in blk[4:16]]
        for j in range(8):
            if j < 4:
                s_, m_ = sc[j] & 63, sc[j + 4] & 63
            else:
                s_ = (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4)
                m_ = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4)
            q = blk[16 + 32 * (j // 2):16 + 32 * (j // 2 + 1)]
            q = (q & 0xF) if j % 2 == 0 else (q >> 4)
            ref = (d * np.float32(s_)) * q.astype(np.float32) - dmin * np.float32(m_)
            np.testing.assert_array_equal(o[b, j], ref.astype(np.float16))


def test_gguf_errors(mlx, tmp_path):
    (tmp_path / "bad.gguf").write_bytes(b"not a gguf file at all....")
    cases = [
        (lambda m: m.load(str(tmp_path / "missing.gguf")), ValueError, "Failed to open"),
        (lambda m: m.load(str(tmp_path / "bad.gguf")), RuntimeError, "gguf_init failed"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {"a": m.ones(2, m.bfloat16)}),
         RuntimeError, "dtype bfloat16 is not supported"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {"a": m.ones(2, m.bool_)}),
         RuntimeError, "dtype bool is not supported"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {}, {"k": m.ones(2, m.float16)}),
         ValueError, "array type float16 not support for metadata"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {}, {"k": m.ones((2, 2))}),
         RuntimeError, "more than one dimension"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {}, {"k": m.ones((0,))}),
         RuntimeError, "Cannot save empty arrays"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {}, {"k": 1}), RuntimeError, None),
        # names that are not strings: MLX's dict[str, ...] cast fails (std::bad_cast)
        (lambda m: m.save_gguf(str(tmp_path / "x"), {1: m.ones(2)}), RuntimeError, None),
        (lambda m: m.save_gguf(str(tmp_path / "x"), {"a": m.ones(2)}, {1: "v"}), RuntimeError,
         None),
        (lambda m: m.save_safetensors(str(tmp_path / "x"), {"a": m.ones(2), 2: m.ones(1)}),
         RuntimeError, None),
        # GGUF reads and writes paths only
        (lambda m: m.save_gguf(io.BytesIO(), {"a": m.ones(2)}), ValueError,
         r"^\[save_gguf\] Input must be a string$"),
        (lambda m: m.load(open(tmp_path / "bad.gguf", "rb")), ValueError,
         r"^\[load_gguf\] Input must be a string$"),
        (lambda m: m.load(io.BytesIO(b"GGUF"), format="gguf"), ValueError,
         r"^\[load_gguf\] Input must be a string$"),
        (lambda m: m.save_gguf(str(tmp_path / "x"), [m.ones(2)]), TypeError,
         r"save_gguf\(\): incompatible function arguments(.|\n)*Invoked with types: str, list$"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            call(mx)
        with pytest.raises(exc, match=msg):
            call(mlx)


def test_load_stream_and_use(tmp_path):  # noqa: D103
    mx.save(tmp_path / "s.npy", mx.arange(3, dtype=mx.float32))
    a = mx.load(tmp_path / "s.npy", stream=mx.cpu)
    np.testing.assert_array_equal(np.array(a + 1), np.arange(3) + 1)
    assert isinstance(pathlib.Path, type)


# -- key order: MLX's maps are C++ unordered_maps ---------------------------------------------


def _random_keys(rng: np.random.Generator, n: int) -> list[str]:
    parts = ["layers", "weight", "bias", "attn", "q_proj", "mlp", "scales", "x", "é"]
    keys: list[str] = []
    while len(keys) < n:
        k = ".".join(str(rng.choice(parts)) if rng.random() < 0.7 else str(rng.integers(0, 40))
                     for _ in range(rng.integers(1, 5)))
        if k not in keys:
            keys.append(k)
    return keys


@pytest.mark.parametrize("n", [1, 2, 7, 13, 14, 30, 61, 140, 300])
def test_file_dicts_come_back_in_mlx_order(mlx, tmp_path, n):
    """savez members, the data of safetensors/gguf and every dict load returns follow MLX's
    std::unordered_map order (so printing mx.load(path) prints what MLX prints)."""
    rng = np.random.default_rng(n)
    keys = _random_keys(rng, n)
    meta = {k.replace(".", "_"): str(i) for i, k in enumerate(keys[:6])}
    for m, tag in ((mlx, "theirs"), (mx, "ours")):
        arrays = {k: m.array([i]) for i, k in enumerate(keys)}
        m.savez(str(tmp_path / f"{tag}.npz"), m.array([-1]), **arrays)
        m.save_safetensors(str(tmp_path / f"{tag}.safetensors"), arrays, metadata=meta)
        m.save_gguf(str(tmp_path / f"{tag}.gguf"), arrays, dict(meta))
    members = {t: zipfile.ZipFile(tmp_path / f"{t}.npz").namelist() for t in ("theirs", "ours")}
    assert members["ours"] == members["theirs"]
    st = {t: (tmp_path / f"{t}.safetensors").read_bytes() for t in ("theirs", "ours")}
    assert st["ours"] == st["theirs"]
    np.savez(tmp_path / "numpy.npz", **{k: np.array([i]) for i, k in enumerate(keys)})
    for name in ("theirs.npz", "ours.npz", "numpy.npz", "theirs.safetensors", "theirs.gguf",
                 "ours.gguf"):
        want, want_meta = (mlx.load(str(tmp_path / name), return_metadata=True)
                           if not name.endswith("npz") else (mlx.load(str(tmp_path / name)), {}))
        got, got_meta = (mx.load(str(tmp_path / name), return_metadata=True)
                         if not name.endswith("npz") else (mx.load(str(tmp_path / name)), {}))
        assert list(got) == list(want), name
        assert list(got_meta) == list(want_meta), name
        assert [v.item() for v in got.values()] == [v.item() for v in want.values()], name


def test_save_errors_match_mlx(mlx, tmp_path):
    """An unopenable path is MLX's RuntimeError (not Python's FileNotFoundError); wrong
    argument types for save_safetensors are nanobind's TypeError, a bad file a ValueError."""
    missing = tmp_path / "no" / "x"
    calls = [lambda m: m.save(str(missing), m.ones(2)),
             lambda m: m.save(str(missing) + ".npy", m.ones(2)),
             lambda m: m.save_safetensors(str(missing), {"a": m.ones(2)}),
             lambda m: m.save_gguf(str(missing), {"a": m.ones(2)}),
             lambda m: m.save_safetensors(str(tmp_path / "a"), [m.ones(2)]),
             lambda m: m.save_safetensors(str(tmp_path / "a"), {"a": m.ones(2)}, [1]),
             lambda m: m.save_safetensors(3, {"a": m.ones(2)}),
             lambda m: m.save_safetensors(str(tmp_path / "a"), {"a": m.ones(2)}, {"k": 1})]
    for call in calls:
        errors = []
        for m in (mlx, mx):
            with pytest.raises(Exception) as info:
                call(m)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1]


def _raw_safetensors(path, header, data=b""):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_safetensors_reader_edge_cases_match_mlx(mlx, tmp_path):
    f32 = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
    files = {
        "f8": ({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, b"\x00\x01"),
        "bad_dtype": ({"a": {"dtype": "XX", "shape": [2], "data_offsets": [0, 2]}}, b"\x00\x01"),
        "f64": ({"a": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}}, b"\x00" * 8),
        "short": ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\x00" * 8),
        "meta_int": ({"__metadata__": {"k": 1}, "a": f32}, b"\x00" * 4),
        "meta_null": ({"__metadata__": {"k": None}, "a": f32}, b"\x00" * 4),
        "meta_list": ({"__metadata__": {"k": ["x"]}, "a": f32}, b"\x00" * 4),
    }
    for name, (header, data) in files.items():
        path = tmp_path / f"{name}.safetensors"
        _raw_safetensors(path, header, data)
        try:
            theirs = mlx.load(str(path))
        except Exception as e:  # noqa: BLE001 - compared below
            with pytest.raises(type(e)) as ours:
                mx.load(str(path))
            assert str(ours.value) == str(e), name
            continue
        ours = mx.load(str(path))
        assert {k: (str(v.dtype), v.tolist()) for k, v in ours.items()} == \
            {k: (str(v.dtype), v.tolist()) for k, v in theirs.items()}, name


def test_float64_safetensors_are_refused_as_in_mlx(mlx, tmp_path):
    for m, stem in ((mx, "ours"), (mlx, "theirs")):
        with pytest.raises(RuntimeError, match=r"^\[save_safetensors\] received invalid dtype\.$"):
            m.save_safetensors(str(tmp_path / stem), {"a": m.ones(2, dtype=m.float64)})
        assert (tmp_path / f"{stem}.safetensors").stat().st_size == 0


def test_npy_unsupported_descr_quotes_three_characters(mlx, tmp_path):
    np.save(tmp_path / "obj.npy", np.array([1, "x"], dtype=object), allow_pickle=True)
    np.save(tmp_path / "str.npy", np.array(["ab"]))
    for name in ("obj.npy", "str.npy"):
        with pytest.raises(ValueError) as theirs:
            mlx.load(str(tmp_path / name))
        with pytest.raises(ValueError) as ours:
            mx.load(str(tmp_path / name))
        assert str(ours.value) == str(theirs.value)


def test_load_return_metadata_must_be_a_bool(mlx, tmp_path):
    mx.save_safetensors(str(tmp_path / "c"), {"x": mx.ones(2)})
    path = str(tmp_path / "c.safetensors")
    for bad in (1, "yes", None):
        with pytest.raises(TypeError) as theirs:
            mlx.load(path, return_metadata=bad)
        with pytest.raises(TypeError) as ours:
            mx.load(path, return_metadata=bad)
        assert str(ours.value) == str(theirs.value)


def test_file_and_format_argument_errors_match_mlx(mlx, tmp_path):
    cases = [
        lambda m: m.load(123),
        lambda m: m.load(str(tmp_path / "x.npy"), format=1),
        lambda m: m.save(5, m.ones(2)),
        lambda m: m.save(str(tmp_path / "x.npy"), np.ones(2)),
        lambda m: m.save_safetensors(5, {"a": m.ones(2)}),
    ]
    for call in cases:
        with pytest.raises(Exception) as theirs:
            call(mlx)
        with pytest.raises(type(theirs.value)) as ours:
            call(mx)
        assert str(ours.value) == str(theirs.value)
