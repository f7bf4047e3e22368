import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


def augment(x, pad=2):
    """Random horizontal flip and random crop after zero padding (one offset per batch)."""
    B, H, W, _ = x.shape
    flip = mx.random.uniform(shape=(B, 1, 1, 1)) < 0.5
    x = mx.where(flip, x[:, :, ::-1, :], x)
    xp = mx.pad(x, [(0, 0), (pad, pad), (pad, pad), (0, 0)])
    oy, ox = mx.random.randint(0, 2 * pad + 1, (2,)).tolist()
    return xp[:, oy : oy + H, ox : ox + W, :]


class SmallNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
            nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.head = nn.Linear(8, num_classes)

    def __call__(self, x):
        x = self.features(x).mean(axis=(1, 2))
        return self.head(x)


mx.random.seed(21)
N, H, W, C, K = 64, 10, 10, 3, 5
y = mx.random.randint(0, K, (N,))
protos = mx.random.normal((K, 1, 1, C))
x = protos[y] + mx.random.normal((N, H, W, C))
mean = x.mean(axis=(0, 1, 2), keepdims=True)
std = x.std(axis=(0, 1, 2), keepdims=True)
x = (x - mean) / std
print("normalised", f"{x.mean().item():.5f}", f"{x.var().item():.5f}")
xa = augment(x[:8])
print("augmented", xa.shape, f"{mx.abs(xa).sum().item():.4f}")

model = SmallNet(K)
mx.eval(model.parameters())
optimizer = optim.AdamW(learning_rate=5e-3, weight_decay=0.05)


def loss_fn(model, x, y, smoothing):
    return nn.losses.cross_entropy(model(x), y, label_smoothing=smoothing, reduction="mean")


lg = nn.value_and_grad(model, loss_fn)
for it in range(12):
    xb = augment(x)
    loss, grads = lg(model, xb, y, 0.1)
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state)
    if it % 4 == 3:
        print(f"it {it} loss {loss.item():.5f}")

model.eval()
logits = model(x)
pred = mx.argmax(logits, axis=-1)
conf = mx.zeros((K, K), dtype=mx.int32).at[y, pred].add(1)
print("confusion total", conf.sum().item(), "correct", mx.trace(conf).item(), conf.dtype)
per_class = mx.diag(conf) / mx.maximum(conf.sum(axis=1), 1)
print("per-class recall", " ".join(f"{v:.4f}" for v in per_class.tolist()))
top2 = mx.argpartition(-logits, kth=1, axis=-1)[:, :2]
print("top2 acc", f"{mx.any(top2 == y[:, None], axis=-1).mean().item():.4f}")
probs = mx.softmax(logits, axis=-1)
print("soft-label ce", f"{nn.losses.cross_entropy(logits, probs).mean().item():.5f}",
      "nll", f"{nn.losses.nll_loss(nn.log_softmax(logits), y, reduction='mean').item():.5f}")

# Per-example gradient norms of the head with vmap(grad)
feats = model.features(x).mean(axis=(1, 2))
head_params = model.head.trainable_parameters()


def example_loss(params, f, t):
    model.head.update(params)
    return nn.losses.cross_entropy(model.head(f[None]), t[None]).sum()


per_ex = mx.vmap(mx.grad(example_loss), in_axes=(None, 0, 0))(head_params, feats, y)
model.head.update(head_params)
sq = sum(mx.sum(g.reshape(N, -1) ** 2, axis=1) for _, g in tree_flatten(per_ex))
print("per-example grad norms", sq.shape, f"{mx.sqrt(sq).mean().item():.5f}")
mean_grad = tree_map(lambda g: g.mean(axis=0), per_ex)
full = mx.grad(lambda p: (model.head.update(p), nn.losses.cross_entropy(model.head(feats), y).mean())[1])(head_params)
model.head.update(head_params)
print("mean of per-example = batch grad",
      mx.allclose(mean_grad["weight"], full["weight"], atol=1e-6).item())
