"""Module API: freeze/unfreeze with keys and recurse, trainable_parameters, leaf_modules,
named_modules, children, apply, apply_to_modules, update/update_modules, load_weights strict."""
import os
import tempfile

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map

mx.random.seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)
        self.extras = {"gate": nn.Linear(d, 1, bias=False), "scale": mx.ones((d,))}

    def __call__(self, x):
        h = self.fc(self.norm(x)) * self.extras["scale"]
        return x + mx.sigmoid(self.extras["gate"](h)) * h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)
        self.blocks = [Block(8), Block(8)]
        self.head = nn.Sequential(nn.Linear(8, 8), lambda x: nn.relu(x), nn.Linear(8, 4))
        self._private = mx.zeros((3,))

    def __call__(self, t):
        x = self.embed(t)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(axis=1))


def count(tree):
    return sum(v.size for _, v in tree_flatten(tree))


net = Net()
mx.eval(net.parameters())
print("params", count(net.parameters()), "trainable", count(net.trainable_parameters()))
print("keys", sorted(net.keys()))
print("children", sorted(net.children().keys()), type(net.children()["blocks"]).__name__)
print("leaf", [k for k, _ in tree_flatten(net.leaf_modules())])
print("named", [(k, type(m).__name__) for k, m in net.named_modules()])
print("modules", len(net.modules()), [type(m).__name__ for m in net.modules()][:4])

net.freeze()
print("frozen all", count(net.trainable_parameters()))
net.unfreeze(keys=["bias"])
print("only bias", [k for k, _ in tree_flatten(net.trainable_parameters())])
net.unfreeze()
net.blocks[0].freeze(recurse=False)
print("recurse=False", count(net.trainable_parameters()))
net.blocks[0].freeze(keys="scale", recurse=False)
print("freeze scale", [k for k, _ in tree_flatten(net.blocks[0].trainable_parameters())])
net.freeze(keys=["weight"], strict=False)
print("no weights", [k for k, _ in tree_flatten(net.trainable_parameters())])
net.unfreeze()
net.embed.freeze()
net.head.layers[2].freeze(keys="bias")
print("mixed", count(net.trainable_parameters()), len(tree_flatten(net.trainable_parameters())))
try:
    net.freeze(keys=["nonexistent"], strict=True)
except Exception as e:
    print(type(e).__name__)
net.unfreeze()

# Gradients only flow to trainable parameters
net.blocks[1].fc.freeze()
net.embed.freeze()
toks = mx.random.randint(0, 16, (3, 5))
loss_and_grad = nn.value_and_grad(net, lambda m, t: (m(t) ** 2).mean())
loss, grads = loss_and_grad(net, toks)
print("loss", f"{loss.item():.5f}", "grad leaves", len(tree_flatten(grads)), sorted(grads.keys()))
print("blocks grads", [len(tree_flatten(g)) for g in grads["blocks"]])
net.unfreeze()

# apply and apply_to_modules
net.apply(lambda p: p * 0.5, filter_fn=lambda m, k, v: k == "weight" and isinstance(m, nn.Linear))
print("halved", f"{net.head.layers[0].weight.abs().sum().item():.4f}", f"{net.embed.weight.abs().sum().item():.4f}")
seen = []
net.apply_to_modules(lambda name, m: seen.append(name) if isinstance(m, nn.Linear) else None)
print("linears", seen)

# update / update_modules
new_head = nn.Linear(8, 4, bias=False)
net.update_modules({"head": {"layers": [{}, {}, new_head]}})
print("swapped", type(net.head.layers[2]).__name__, "bias" in net.head.layers[2])
net.update({"blocks": [{"extras": {"scale": mx.full((8,), 2.0)}}, {}]})
print("scale", net.blocks[0].extras["scale"].sum().item(), net.blocks[1].extras["scale"].sum().item())
out = net(toks)
print("out", out.shape, f"{out.sum().item():.4f}")

# save_weights / load_weights with strict
tmp = tempfile.mkdtemp()
for ext in ["npz", "safetensors"]:
    path = os.path.join(tmp, f"w.{ext}")
    net.save_weights(path)
    other = Net()
    other.update_modules({"head": {"layers": [{}, {}, nn.Linear(8, 4, bias=False)]}})
    other.load_weights(path)
    print(ext, mx.allclose(other(toks), out).item(), len(mx.load(path)))

weights = list(net.parameters()["head"]["layers"][0].items())
partial = [("head.layers.0." + k, v * 0) for k, v in weights]
net.load_weights(partial, strict=False)
print("partial", net.head.layers[0].weight.abs().sum().item())
for bad in [partial, partial + [("bogus.weight", mx.zeros((2,)))],
            tree_flatten(net.parameters())[:-1] + [(tree_flatten(net.parameters())[-1][0], mx.zeros((3, 3)))]]:
    try:
        net.load_weights(bad)
        print("loaded")
    except ValueError as e:
        print("ValueError", str(e)[:60])

# Module as dict, state, and training flags
print("training", net.training, net.blocks[0].training)
net.eval()
print("eval", net.training, net.head.layers[0].training)
net.train()
print("state is params", len(tree_flatten(net.state)) == len(tree_flatten(net.parameters())) + 0)
print("private", "_private" in net, "_private" in net.parameters())
print("dtypes", {str(v.dtype) for _, v in tree_flatten(net.parameters())})
net.set_dtype(mx.float16)
print("f16", {str(v.dtype) for _, v in tree_flatten(net.parameters())})
net.set_dtype(mx.float32, predicate=lambda t: True)
print("back", net.embed.weight.dtype)
