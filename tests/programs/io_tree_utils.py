"""Files and trees: mx.save/load of .npy, savez/savez_compressed, safetensors and GGUF with
metadata, a model's parameters through tree_flatten (prefixes, is_leaf), tree_unflatten,
tree_map_with_path, tree_reduce and tree_merge, as checkpoint tooling uses them."""
import os
import tempfile

import numpy as np

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map, tree_map_with_path, tree_merge, tree_reduce, tree_unflatten


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(12, 6)
        self.layers = [nn.TransformerEncoderLayer(6, 2, mlp_dims=12) for _ in range(2)]
        self.proj = nn.Linear(6, 3, bias=False)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, None)
        return self.proj(x.mean(axis=1))


mx.random.seed(8)
model = Encoder()
model.eval()
tokens = mx.random.randint(0, 12, (2, 5))
ref = model(tokens)
print("out", ref.shape, f"{ref.abs().sum().item():.5f}")

params = model.parameters()
flat = tree_flatten(params)
print("leaves", len(flat), flat[0][0], flat[-1][0])
print("prefixed", tree_flatten(params["proj"], prefix=".model")[0][0])
blocks = tree_flatten(params, is_leaf=lambda v: isinstance(v, dict) and "attention" in v)
print("blocks", [k for k, v in blocks if isinstance(v, dict)])
count = tree_reduce(lambda acc, v: acc + v.size, params, 0)
sq = tree_reduce(lambda acc, v: acc + (v * v).sum(), params, mx.array(0.0))
print("count", count, "sqnorm", f"{sq.item():.4f}")
shapes = tree_map(lambda v: v.shape, params)
print("shapes", shapes["layers"][1]["linear1"]["weight"], shapes["proj"])
decay = tree_map_with_path(lambda path, v: 0.0 if ("ln" in path or path.endswith("bias")) else 0.01, params)
print("decay", sorted({k.split(".")[-1]: v for k, v in tree_flatten(decay)}.items()))
rebuilt = tree_unflatten(flat)
print("rebuilt", type(rebuilt["layers"]).__name__, len(rebuilt["layers"]), sorted(rebuilt))
merged = tree_merge({"a": {"x": 1}, "b": [1, None]}, {"a": {"y": 2}, "b": [None, 2]})
print("merged", sorted(merged["a"].items()), merged["b"])
print(tree_flatten([1, (2, {"z": 3})]), tree_unflatten([("0.k", 1), ("1.k", 2)]))

tmp = tempfile.mkdtemp()
# npy: one array; a name without extension gets one
mx.save(os.path.join(tmp, "emb"), params["embed"]["weight"])
emb = mx.load(os.path.join(tmp, "emb.npy"))
print("npy", emb.shape, emb.dtype, mx.array_equal(emb, model.embed.weight).item())
np.save(os.path.join(tmp, "np16.npy"), np.linspace(0, 1, 4).astype(np.float16))
print("numpy file", mx.load(os.path.join(tmp, "np16.npy")))

# npz, plain and compressed, keyword and positional
mx.savez(os.path.join(tmp, "ckpt.npz"), **dict(flat))
mx.savez_compressed(os.path.join(tmp, "small"), tokens, ref)
back = mx.load(os.path.join(tmp, "ckpt.npz"))
small = mx.load(os.path.join(tmp, "small.npz"))
print("npz", len(back), sorted(small), small["arr_0"].dtype, small["arr_1"].shape)
print("first keys", list(back)[:6])
print(mx.load(os.path.join(tmp, "small.npz")))

# safetensors with metadata, half precision weights
half = {k: v.astype(mx.float16) for k, v in flat}
mx.save_safetensors(os.path.join(tmp, "model.safetensors"), half, metadata={"dtype": "float16", "layers": "2"})
loaded, meta = mx.load(os.path.join(tmp, "model.safetensors"), return_metadata=True)
print("safetensors", len(loaded), loaded["proj.weight"].dtype, meta)
print("layer keys", [k for k in loaded if k.startswith("layers.1.")][:5])
model16 = Encoder()
model16.load_weights(list(loaded.items()))
model16.set_dtype(mx.float32)
model16.eval()
print("fp16 roundtrip", f"{mx.abs(model16(tokens) - ref).max().item():.3g}")

# GGUF with metadata (strings, lists, arrays)
mx.save_gguf(os.path.join(tmp, "model.gguf"), {k: v for k, v in flat if v.ndim <= 2},
             {"general.name": "encoder", "tags": ["toy", "mlx"], "ctx": mx.array(5, dtype=mx.uint32)})
g, gmeta = mx.load(os.path.join(tmp, "model.gguf"), return_metadata=True)
print("gguf", len(g), g["proj.weight"].shape, gmeta["general.name"], gmeta["tags"], gmeta["ctx"])
print("gguf keys", list(g)[:4], list(gmeta))
model.load_weights(os.path.join(tmp, "ckpt.npz"))
print("reload", mx.array_equal(model(tokens), ref).item(), sorted(os.listdir(tmp)))
