import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_reduce


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 2)

    def __call__(self, x):
        return self.fc2(nn.relu(self.fc1(x)))


mx.random.seed(12)
X = mx.random.normal((64, 6))
y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(mx.int32)
model = Net()
mx.eval(model.parameters())
opt = optim.SGD(learning_rate=0.5)


def example_loss(params, x, t):
    model.update(params)
    return nn.losses.cross_entropy(model(x[None]), t[None]).squeeze()


per_example_grad = mx.vmap(mx.grad(example_loss), in_axes=(None, 0, 0))
clip, sigma, batch = 1.0, 0.5, 16
for it in range(12):
    idx = mx.random.permutation(64)[:batch]
    params = model.trainable_parameters()
    g = per_example_grad(params, X[idx], y[idx])
    norms = mx.sqrt(tree_reduce(lambda acc, v: acc + (v * v).reshape(batch, -1).sum(1), g, mx.zeros(batch)))
    scale = mx.minimum(1.0, clip / (norms + 1e-6))
    g = tree_map(lambda v: (v * scale.reshape((batch,) + (1,) * (v.ndim - 1))).sum(0), g)
    g = tree_map(lambda v: (v + sigma * clip * mx.random.normal(v.shape)) / batch, g)
    model.update(params)
    opt.update(model, g)
    mx.eval(model.parameters())
    if it % 4 == 0 or it == 11:
        loss = nn.losses.cross_entropy(model(X), y, reduction="mean")
        print(it, f"{loss.item():.5f}", f"{norms.mean().item():.5f}", f"{(scale < 1).sum().item()}")
acc = (model(X).argmax(1) == y).mean()
print("acc", f"{acc.item():.4f}")
shapes = {k: v.shape for k, v in tree_flatten(g)}
print(sorted(shapes))
