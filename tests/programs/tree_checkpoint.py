import os
import tempfile

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten, tree_map_with_path


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.norm = nn.RMSNorm(dim)

    def __call__(self, x):
        return x + self.lin(nn.gelu(self.norm(x)))


class DeepMLP(nn.Module):
    def __init__(self, din, dim, depth, dout, checkpoint):
        super().__init__()
        self.inp = nn.Linear(din, dim)
        self.blocks = [Block(dim) for _ in range(depth)]
        self.out = nn.Linear(dim, dout)
        self.checkpoint = checkpoint

    def __call__(self, x):
        x = self.inp(x)
        for b in self.blocks:
            if self.checkpoint == "module":
                x = nn.utils.checkpoint(b)(x)
            elif self.checkpoint:
                x = mx.checkpoint(b)(x)
            else:
                x = b(x)
        return self.out(x)


mx.random.seed(13)
X = mx.random.normal((64, 8))
y = mx.sin(X[:, :2].sum(1, keepdims=True))
model = DeepMLP(8, 16, 6, 1, checkpoint=True)
mx.eval(model.parameters())

flat = tree_flatten(model.parameters())
print("leaves", len(flat), flat[0][0], flat[-1][0])
n = tree_reduce(lambda acc, v: acc + v.size, model.parameters(), 0)
sq = tree_reduce(lambda acc, v: acc + mx.sum(v * v), model.parameters(), mx.array(0.0))
print("count", n, "sqnorm", f"{sq.item():.5f}")
shapes = tree_map(lambda v: v.shape, model.parameters())
print("block0", shapes["blocks"][0]["lin"]["weight"], len(shapes["blocks"]))
rebuilt = tree_unflatten(flat)
print("roundtrip", all(mx.array_equal(a, b).item() for (_, a), (_, b) in zip(flat, tree_flatten(rebuilt))))
decayed = tree_map_with_path(lambda path, v: v * 0.5 if path.endswith("weight") else v, model.parameters())
print("half", f"{tree_reduce(lambda acc, v: acc + v.abs().sum(), decayed, mx.array(0.0)).item():.4f}")

# gradients with and without checkpointing agree
loss_fn = lambda m, x, t: nn.losses.mse_loss(m(x), t)
l1, g1 = nn.value_and_grad(model, loss_fn)(model, X, y)
model.checkpoint = False
l2, g2 = nn.value_and_grad(model, loss_fn)(model, X, y)
diff = tree_reduce(max, tree_map(lambda a, b: mx.abs(a - b).max().item(), g1, g2))
print("ckpt loss", f"{l1.item():.6f}", f"{l2.item():.6f}", "maxdiff", f"{diff:.5f}")
model.checkpoint = "module"
l3, g3 = nn.value_and_grad(model, loss_fn)(model, X, y)
diff = tree_reduce(max, tree_map(lambda a, b: mx.abs(a - b).max().item(), g3, g2))
print("module ckpt", f"{l3.item():.6f}", "maxdiff<1e-6", diff < 1e-6)

# train with manual SGD through tree_map, then with an optimizer
step = nn.value_and_grad(model, loss_fn)
for i in range(10):
    loss, grads = step(model, X, y)
    gnorm = mx.sqrt(tree_reduce(lambda acc, g: acc + (g * g).sum(), grads, mx.array(0.0)))
    model.update(tree_map(lambda p, g: p - 0.05 * g, model.parameters(), grads))
    mx.eval(model.parameters())
    if i % 3 == 0:
        print("sgd", i, f"{loss.item():.6f}", f"{gnorm.item():.5f}")

# freeze all but the head, save and reload weights
model.freeze()
model.out.unfreeze()
print("trainable", [k for k, _ in tree_flatten(model.trainable_parameters())])
opt = optim.Adam(learning_rate=1e-2)
for i in range(5):
    loss, grads = step(model, X, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
print("head", f"{loss.item():.6f}", sorted(k for k, _ in tree_flatten(opt.state)))
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "w.safetensors")
    model.save_weights(path)
    other = DeepMLP(8, 16, 6, 1, checkpoint=False)
    other.load_weights(path)
    mx.eval(other.parameters())
    print("reload", f"{mx.abs(other(X) - model(X)).max().item():.6f}")
    npz = os.path.join(d, "w.npz")
    mx.savez(npz, **dict(tree_flatten(model.parameters())))
    loaded = mx.load(npz)
    print("npz", len(loaded), f"{loaded['out.weight'].sum().item():.5f}")
