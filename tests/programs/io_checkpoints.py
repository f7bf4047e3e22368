"""Files the way checkpoints travel: pathlib paths for every format, in-memory buffers (GGUF
takes paths only), views and broadcasts saved as their values, empty dicts and arrays, and module
weights through npz/safetensors (bfloat16 included, strict and partial loads)."""
import io
import pathlib
import tempfile

import numpy as np
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

tmp = pathlib.Path(tempfile.mkdtemp())
mx.random.seed(2)
w = mx.random.normal((3, 5))
# pathlib paths everywhere
mx.save(tmp / "w", w)
mx.savez(tmp / "z", w=w)
mx.save_safetensors(tmp / "s", {"w": w})
mx.save_gguf(tmp / "g", {"w": w})
print(sorted(p.name for p in tmp.iterdir()))
for name in ["w.npy", "z.npz", "s.safetensors", "g.gguf"]:
    out = mx.load(tmp / name)
    arr = out if isinstance(out, mx.array) else out["w"]
    print("path", name, type(out).__name__, mx.array_equal(arr, w).item())
    out = mx.load(str(tmp / name), stream=mx.cpu)
# file objects for every format
for fmt, saver in [("npz", lambda f: mx.savez(f, w=w)), ("safetensors", lambda f: mx.save_safetensors(f, {"w": w}, {"k": "v"})),
                   ("gguf", lambda f: mx.save_gguf(f, {"w": w}))]:
    buf = io.BytesIO()
    try:
        saver(buf)
        buf.seek(0)
        out = mx.load(buf, format=fmt)
        print("buffer", fmt, sorted(out), mx.array_equal(out["w"], w).item())
    except Exception as e:
        print("buffer", fmt, type(e).__name__, e)
buf = io.BytesIO()
mx.save_safetensors(buf, {"w": w}, metadata={"a": "b"})
buf.seek(0)
arrs, meta = mx.load(buf, format="safetensors", return_metadata=True)
print("buffer meta", meta)
try:
    buf.seek(0)
    mx.load(buf)
except Exception as e:
    print("buffer no format", type(e).__name__, e)
# non-contiguous and broadcast arrays
views = {"t": w.T, "step": w[::2, 1::2], "bcast": mx.broadcast_to(mx.arange(3.0), (2, 3)), "neg": w[::-1]}
mx.save_safetensors(tmp / "views", views)
mx.savez(tmp / "views", **views)
a = mx.load(tmp / "views.safetensors")
b = mx.load(tmp / "views.npz")
print("views", all(mx.array_equal(a[k], v).item() and mx.array_equal(b[k], v).item() for k, v in views.items()),
      [a[k].shape for k in sorted(a)])
for k, v in views.items():
    mx.save(tmp / f"v_{k}.npy", v)
    print("npy view", k, mx.array_equal(mx.load(tmp / f"v_{k}.npy"), v).item(), np.load(tmp / f"v_{k}.npy").flags["C_CONTIGUOUS"])
# empty dicts and empty arrays
mx.save_safetensors(tmp / "empty", {})
print("empty st", mx.load(tmp / "empty.safetensors"), mx.load(tmp / "empty.safetensors", return_metadata=True))
mx.savez(tmp / "emptyz")
print("empty npz", mx.load(tmp / "emptyz.npz"))
mx.save_safetensors(tmp / "zero", {"z": mx.zeros((0, 4), dtype=mx.int32), "s": mx.array(1.5, dtype=mx.bfloat16)})
zz = mx.load(tmp / "zero.safetensors")
print("zero", zz["z"].shape, zz["z"].dtype, zz["s"].shape, zz["s"].dtype, zz["s"].item())
# module weights through every format
mx.random.seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x = mx.random.normal((3, 4))
ref = model(x)
for ext in ["npz", "safetensors"]:
    model.save_weights(str(tmp / f"model.{ext}"))
    fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    fresh.load_weights(str(tmp / f"model.{ext}"))
    print("module", ext, mx.allclose(fresh(x), ref).item(), sorted(k for k, _ in tree_flatten(fresh.parameters())))
try:
    model.save_weights(str(tmp / "model.bin"))
except Exception as e:
    print("module bin", type(e).__name__, str(e).replace(str(tmp), "<tmp>"))
half = {k: v.astype(mx.bfloat16) for k, v in tree_flatten(model.parameters())}
mx.save_safetensors(str(tmp / "half.safetensors"), half)
model.load_weights(str(tmp / "half.safetensors"))
print("bf16 weights", model.layers[0].weight.dtype, f"{mx.abs(model(x).astype(mx.float32) - ref).max().item():.2f}")
try:
    model.load_weights([("layers.0.weight", mx.zeros((2, 2)))])
except Exception as e:
    print("bad shape", type(e).__name__, e)
try:
    model.load_weights([("layers.9.weight", mx.zeros((2, 2)))])
except Exception as e:
    print("bad key", type(e).__name__, e)
model.load_weights([("layers.0.bias", mx.zeros((8,)))], strict=False)
print("partial", model.layers[0].bias.sum().item())
