from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

mx.random.seed(17)
X = mx.random.normal((128, 12))
W = mx.random.normal((12, 3))
y = mx.tanh(X @ W) + 0.05 * mx.random.normal((128, 3))


def make_model():
    mx.random.seed(1)
    m = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 3))
    mx.eval(m.parameters())
    return m


def loss_fn(m, x, t):
    return nn.losses.mse_loss(m(x), t)


factories = {
    "sgd": lambda: optim.SGD(learning_rate=0.1, momentum=0.9),
    "adam": lambda: optim.Adam(learning_rate=1e-2),
    "adamw": lambda: optim.AdamW(learning_rate=1e-2, weight_decay=0.05),
    "lion": lambda: optim.Lion(learning_rate=1e-3, weight_decay=0.01),
    "adafactor": lambda: optim.Adafactor(learning_rate=1e-2, relative_step=False, scale_parameter=False),
    "adafactor_rel": lambda: optim.Adafactor(),
    "rmsprop": lambda: optim.RMSprop(learning_rate=3e-3),
    "adagrad": lambda: optim.Adagrad(learning_rate=0.05),
    "adadelta": lambda: optim.AdaDelta(learning_rate=1.0),
    "adamax": lambda: optim.Adamax(learning_rate=1e-2),
    "muon": lambda: optim.Muon(learning_rate=0.02),
}
for name, make in factories.items():
    model = make_model()
    opt = make()
    state = [model.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, t):
        loss, grads = nn.value_and_grad(model, loss_fn)(model, x, t)
        opt.update(model, grads)
        return loss

    for i in range(12):
        loss = step(X, y)
        mx.eval(state)
    final = loss_fn(model, X, y)
    keys = sorted({k.split(".")[-1] for k, _ in tree_flatten(opt.state)})
    print(f"{name:14s}", f"{final.item():.5f}", ",".join(keys))

# a schedule joined from warmup and cosine decay, driven through the optimizer's step counter
sched = optim.join_schedules([optim.linear_schedule(0.0, 1e-2, 5), optim.cosine_decay(1e-2, 20, 1e-4)], [5])
model = make_model()
opt = optim.AdamW(learning_rate=sched)
vg = nn.value_and_grad(model, loss_fn)
lrs = []
for i in range(10):
    loss, g = vg(model, X, y)
    opt.update(model, g)
    mx.eval(model.parameters(), opt.state)
    lrs.append(opt.learning_rate.item())
print("sched", " ".join(f"{v:.6f}" for v in lrs[::3]), f"{loss.item():.5f}")
print("exp", f"{optim.exponential_decay(0.1, 0.9)(mx.array(5)).item():.6f}",
      "step", f"{optim.step_decay(0.1, 0.5, 3)(mx.array(7)).item():.6f}")
