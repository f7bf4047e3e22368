"""Compiled training steps whose captured state holds optimizer state, schedules, BatchNorm
running statistics and the random key (Dropout), the mlx-examples way."""
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

mx.random.seed(21)
X = mx.random.normal((96, 10))
labels = (X[:, :3].sum(axis=1) > 0).astype(mx.int32) + (X[:, 3] > 0.5).astype(mx.int32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(10, 32, bias=False)  # BatchNorm removes a bias: its gradient is rounding noise
        self.bn = nn.BatchNorm(32, momentum=0.2)
        self.drop = nn.Dropout(0.1)
        self.l2 = nn.Linear(32, 3)

    def __call__(self, x):
        return self.l2(self.drop(nn.silu(self.bn(self.l1(x)))))


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def train(make_opt, steps=10, bs=32):
    mx.random.seed(5)
    model = Net()
    mx.eval(model.parameters())
    opt = make_opt()
    state = [model.state, opt.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
        grads, norm = optim.clip_grad_norm(grads, 1.0)
        opt.update(model, grads)
        return loss, norm

    for i in range(steps):
        idx = mx.random.permutation(X.shape[0])[:bs]
        loss, norm = step(X[idx], labels[idx])
        mx.eval(state)
    model.eval()
    acc = (model(X).argmax(axis=1) == labels).mean()
    return model, opt, loss, norm, acc


makers = {
    "sgd_cos": lambda: optim.SGD(optim.cosine_decay(0.2, 10, 0.02), momentum=0.9, nesterov=True),
    "adamw_warm": lambda: optim.AdamW(optim.join_schedules([optim.linear_schedule(1e-3, 2e-2, 4), optim.cosine_decay(2e-2, 6)], [4]), weight_decay=0.05),
    "rmsprop_a95": lambda: optim.RMSprop(5e-3, alpha=0.95),
    "lion_step": lambda: optim.Lion(optim.step_decay(3e-3, 0.5, 4), weight_decay=0.1),
    "adafactor": lambda: optim.Adafactor(learning_rate=3e-2, relative_step=False, beta_1=0.9),
    "multi": lambda: optim.MultiOptimizer([optim.Adam(1e-2), optim.SGD(0.05, momentum=0.9)], [lambda path, p: path.startswith("l1")]),
}
for name, make in makers.items():
    model, opt, loss, norm, acc = train(make)
    rm = model.bn.running_mean
    print(f"{name:12s}", f"loss {loss.item():.4f}", f"norm {norm.item():.4f}", f"acc {acc.item():.4f}",
          f"bn {rm.abs().sum().item():.4f} {model.bn.running_var.sum().item():.4f}")
    print("   state", sorted({k.split(".")[-1] for k, _ in tree_flatten(opt.state)}))
