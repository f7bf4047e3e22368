"""Saving and loading arrays in every format MLX writes: .npy (with and without extension,
from file objects), .npz plain and compressed, safetensors with metadata, GGUF with metadata,
format inference from the extension, explicit format=, return_metadata, and dtype round trips
including bfloat16, float16, unsigned and boolean arrays."""
import io
import os
import tempfile

import numpy as np

import mlx.core as mx

tmp = tempfile.mkdtemp()
p = lambda name: os.path.join(tmp, name)  # noqa: E731

mx.random.seed(5)
base = mx.random.normal((3, 4))
arrays = {
    "f32": base,
    "f16": base.astype(mx.float16),
    "bf16": base.astype(mx.bfloat16),
    "i8": mx.array([-128, 0, 127], dtype=mx.int8),
    "u8": mx.array([0, 7, 255], dtype=mx.uint8),
    "i16": mx.array([-300, 300], dtype=mx.int16),
    "u16": mx.array([65535, 1], dtype=mx.uint16),
    "i32": mx.arange(5, dtype=mx.int32) - 2,
    "u32": mx.array([4000000000], dtype=mx.uint32),
    "i64": mx.array([2**40, -3], dtype=mx.int64),
    "u64": mx.array([2**62 + 5], dtype=mx.uint64),
    "b": mx.array([True, False, True]),
    "scalar": mx.array(3.5),
    "empty": mx.zeros((0, 3)),
    "c64": mx.array([1 + 2j, -3j]),
}


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and mx.array_equal(a, b).item()


# npy: one file per array, extension added when missing
for name, a in arrays.items():
    if name == "bf16":
        continue
    mx.save(p(f"{name}_arr"), a)
    back = mx.load(p(f"{name}_arr.npy"))
    print("npy", name, back.dtype, back.shape, same(a, back))
mx.save(p("explicit.npy"), base)
print("npy explicit", same(mx.load(p("explicit.npy")), base), os.path.exists(p("explicit.npy.npy")))
transposed = base.T
mx.save(p("transposed.npy"), transposed)
print("npy transposed", same(mx.load(p("transposed.npy")), transposed), np.load(p("transposed.npy")).shape)
sliced = base[:, ::2]
mx.save(p("sliced.npy"), sliced)
print("npy sliced", np.load(p("sliced.npy")).round(3).tolist())
np.save(p("from_numpy.npy"), np.arange(6, dtype=np.float64).reshape(2, 3))
npd = mx.load(p("from_numpy.npy"))
print("numpy written", npd.dtype, npd.shape, npd.sum().item())
np.save(p("fortran.npy"), np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)))
print("fortran", mx.load(p("fortran.npy")).tolist())
np.save(p("bool.npy"), np.array([[True], [False]]))
print("np bool", mx.load(p("bool.npy")).dtype, mx.load(p("bool.npy")).shape)

# file objects
buf = io.BytesIO()
mx.save(buf, mx.arange(4))
buf.seek(0)
print("bytesio npy", mx.load(buf, format="npy").tolist())
with open(p("handle.npy"), "wb") as f:
    mx.save(f, base[0])
with open(p("handle.npy"), "rb") as f:
    print("handle", same(mx.load(f), base[0]))

# npz
plain = {k: v for k, v in arrays.items() if k not in ("bf16",)}
mx.savez(p("all"), **plain)
back = mx.load(p("all.npz"))
print("npz", type(back).__name__, len(back), sorted(back) == sorted(plain), all(same(plain[k], back[k]) for k in plain))
mx.savez(p("pos.npz"), base, mx.ones(2), weights=mx.zeros(3))
pos = mx.load(p("pos.npz"))
print("npz positional", sorted(pos), pos["arr_1"].tolist(), pos["weights"].shape)
mx.savez_compressed(p("comp"), big=mx.zeros((200, 50)), small=arrays["i16"])
comp = mx.load(p("comp.npz"))
print("npz compressed", comp["big"].shape, comp["big"].dtype, comp["small"].tolist(),
      os.path.getsize(p("comp.npz")) < 40000)
with np.load(p("all.npz")) as z:
    print("numpy reads npz", sorted(z.files)[:4], z["u64"].dtype, z["c64"].tolist())
np.savez(p("np_written.npz"), x=np.eye(2, dtype=np.float32), y=np.array([1, 2], dtype=np.uint16))
npw = mx.load(p("np_written.npz"))
print("numpy npz", npw["x"].tolist(), npw["y"].dtype)

# safetensors: dtypes incl. bfloat16, metadata, return_metadata
st = {k: v for k, v in arrays.items() if k not in ("c64", "scalar")}
mx.save_safetensors(p("model"), st, metadata={"format": "mlx", "epoch": "3"})
loaded = mx.load(p("model.safetensors"))
print("st", len(loaded), all(same(st[k], loaded[k]) for k in st), loaded["bf16"].dtype, loaded["empty"].shape)
loaded, meta = mx.load(p("model.safetensors"), return_metadata=True)
print("st meta", sorted(meta.items()))
mx.save_safetensors(p("nometa.safetensors"), {"w": base})
print("st no meta", mx.load(p("nometa.safetensors"), return_metadata=True)[1])
print("st bf16 values", loaded["bf16"][0].astype(mx.float32).round(3).tolist())
mx.save_safetensors(p("scalar.safetensors"), {"s": mx.array(2.0), "c": mx.array([1 + 1j])})
sc = mx.load(p("scalar.safetensors"))
print("st scalar", sc["s"].shape, sc["s"].item(), sc["c"].dtype)
print("st explicit format", sorted(mx.load(p("model.safetensors"), format="safetensors"))[:3])

# gguf: float types and ints, metadata of several kinds
gg = {"f32": base, "f16": arrays["f16"], "i32": arrays["i32"],
      "i8": arrays["i8"], "i16": arrays["i16"]}
mx.save_gguf(p("weights"), gg, {"name": "toy", "layers": mx.array(4), "scale": mx.array(0.5),
                                "ids": mx.array([1, 2, 3], dtype=mx.int32), "tags": ["a", "b"]})
g, gm = mx.load(p("weights.gguf"), return_metadata=True)
print("gguf", sorted(g), all(same(gg[k], g[k]) for k in gg))
print("gguf dtypes", [g[k].dtype for k in sorted(g)])
print("gguf meta", sorted(gm), gm["name"], gm["tags"], gm["layers"].dtype, gm["layers"].item(),
      gm["scale"].item(), gm["ids"].tolist())
mx.save_gguf(p("nometa.gguf"), {"x": mx.ones((2, 2))})
print("gguf no meta", mx.load(p("nometa.gguf"), return_metadata=True)[1])
print("gguf plain", type(mx.load(p("nometa.gguf"))).__name__)

# format inference vs explicit format
mx.save_safetensors(p("weights.bin"), {"w": base})
print("st suffix", sorted(f for f in os.listdir(tmp) if f.startswith("weights.bin")))
os.rename(p("weights.bin.safetensors"), p("weights.bin"))
print("explicit st", same(mx.load(p("weights.bin"), format="safetensors")["w"], base))
mx.save(p("data.npy"), base)
os.rename(p("data.npy"), p("data.raw"))
print("explicit npy", same(mx.load(p("data.raw"), format="npy"), base))
print("files", sorted(os.listdir(tmp))[:8])
