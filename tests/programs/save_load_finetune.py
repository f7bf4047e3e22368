import os
import tempfile

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Linear(8, 32), nn.ReLU(), nn.LayerNorm(32), nn.Linear(32, 32), nn.GELU()
        )
        self.bn = nn.BatchNorm(32)
        self.head = nn.Linear(32, 3)

    def __call__(self, x):
        return self.head(self.bn(self.backbone(x)))


def count(tree):
    return sum(v.size for _, v in tree_flatten(tree))


mx.random.seed(5)
X = mx.random.normal((64, 8))
y = mx.argmax(X[:, :3] * mx.array([1.0, -1.0, 0.5]), axis=1)


def loss_fn(model, X, y):
    return nn.losses.cross_entropy(model(X), y, reduction="mean")


model = Net()
mx.eval(model.parameters())
print("all", count(model.parameters()), "trainable", count(model.trainable_parameters()))
opt = optim.Adam(learning_rate=1e-2)
lg = nn.value_and_grad(model, loss_fn)
for it in range(10):
    loss, grads = lg(model, X, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
print("pretrain loss", f"{loss.item():.5f}")
model.eval()
ref = model(X)

tmp = tempfile.mkdtemp()
for ext in ("safetensors", "npz"):
    path = os.path.join(tmp, "weights." + ext)
    model.save_weights(path)
    fresh = Net()
    fresh.load_weights(path)
    fresh.eval()
    out = fresh(X)
    print(ext, "max diff", f"{mx.abs(out - ref).max().item():.6f}",
          "bn var", f"{fresh.bn.running_var.sum().item():.5f}")

loaded = mx.load(os.path.join(tmp, "weights.safetensors"))
print("keys", len(loaded), sorted(loaded)[:3], loaded["head.weight"].shape, loaded["head.weight"].dtype)

# strict loading rejects a partial file; strict=False accepts it
try:
    Net().load_weights([("head.weight", mx.zeros((3, 32)))])
except ValueError as e:
    print("strict error", type(e).__name__)
partial_net = Net().load_weights([("head.weight", mx.zeros((3, 32)))], strict=False)
print("partial head", f"{partial_net.head.weight.sum().item():.1f}")

# Fine-tune only the head on new labels: freeze everything, unfreeze the head
new_y = (y + 1) % 3
model.train()
model.freeze()
model.head.unfreeze()
print("frozen trainable", count(model.trainable_parameters()),
      sorted(k for k, _ in tree_flatten(model.trainable_parameters())))
backbone_before = model.backbone.layers[0].weight
opt = optim.SGD(learning_rate=0.5)
lg = nn.value_and_grad(model, loss_fn)
for it in range(15):
    loss, grads = lg(model, X, new_y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if it % 7 == 0:
        print("finetune", it, f"{loss.item():.5f}", sorted(k for k, _ in tree_flatten(grads)))
print("backbone unchanged", mx.array_equal(backbone_before, model.backbone.layers[0].weight).item())
model.unfreeze()
print("unfrozen trainable", count(model.trainable_parameters()))
model.freeze(keys=["bias"])
print("bias frozen trainable", count(model.trainable_parameters()))
model.eval()
acc = mx.mean(mx.argmax(model(X), axis=1) == new_y)
print("acc", f"{acc.item():.4f}")
