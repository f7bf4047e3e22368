"""Data-parallel training written for several processes, run as one: the script shards its data
by rank, averages gradients with all_sum / size (by hand, and through nn.average_gradients),
reduces metrics with all_sum / all_max / all_gather, and steps a compiled function that calls
the collectives inside."""

from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_map

world = mx.distributed.init()
rank, size = world.rank(), world.size()
print("rank", rank, "size", size)

mx.random.seed(3)
n, d, classes = 96, 10, 3
centers = mx.random.normal((classes, d)) * 0.4
labels = mx.random.randint(0, classes, (n,))
features = centers[labels] + mx.random.normal((n, d))

# each rank trains on its own shard (all of it here)
x_local, y_local = features[rank::size], labels[rank::size]
print("shard", x_local.shape, y_local.shape)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(d, 32)
        self.l2 = nn.Linear(32, classes)

    def __call__(self, x):
        return self.l2(nn.gelu(self.l1(x)))


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def all_reduce_grads(grads):
    return tree_map(lambda g: mx.distributed.all_sum(g) / size, grads)


model = MLP()
opt = optim.Adam(learning_rate=0.003)
loss_and_grad = nn.value_and_grad(model, loss_fn)

for step in range(30):
    batch = mx.arange(step * 16, step * 16 + 16) % x_local.shape[0]
    loss, grads = loss_and_grad(model, x_local[batch], y_local[batch])
    grads = all_reduce_grads(grads)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if step % 10 == 9:
        global_loss = mx.distributed.all_sum(loss) / size
        print("step", step, "loss", f"{global_loss.item():.6f}")

# nn.average_gradients, as MLX's own data-parallel examples call it
model2 = MLP()
opt2 = optim.SGD(learning_rate=0.02, momentum=0.9)
loss_and_grad2 = nn.value_and_grad(model2, loss_fn)
state = [model2.state, opt2.state]


@partial(mx.compile, inputs=state, outputs=state)
def train_step(x, y):
    loss, grads = loss_and_grad2(model2, x, y)
    grads = nn.average_gradients(grads)
    opt2.update(model2, grads)
    return mx.distributed.all_sum(loss) / size


for step in range(20):
    loss = train_step(x_local, y_local)
    mx.eval(state)
    if step % 5 == 4:
        print("compiled step", step, "loss", f"{loss.item():.6f}")

# metrics reduced over ranks
logits = model(x_local)
correct = mx.distributed.all_sum((mx.argmax(logits, axis=1) == y_local).sum())
total = mx.distributed.all_sum(mx.array(y_local.size))
print("accuracy", f"{(correct / total).item():.4f}", "correct", correct.item(), total.item())
worst = mx.distributed.all_max(nn.losses.cross_entropy(logits, y_local).max())
best = mx.distributed.all_min(nn.losses.cross_entropy(logits, y_local).min())
print("worst", f"{worst.item():.5f}", "best", f"{best.item():.6f}")
gathered = mx.distributed.all_gather(mx.argmax(logits[:6], axis=1))
print("gathered", gathered.shape, gathered.dtype, gathered.tolist())
shard = mx.distributed.sum_scatter(mx.ones((size * 4, 2)))
print("sum_scatter", shard.shape, shard.sum().item())

# gradients flow through the collectives as through the identity on one process
g = mx.grad(lambda w: (mx.distributed.all_sum(w * w) * 0.5).sum())(mx.array([1.0, -2.0, 3.0]))
print("grad through all_sum", g.tolist())

try:
    mx.distributed.send(mx.ones(3), 0)
except ValueError as e:
    print("send:", e)
try:
    mx.distributed.recv_like(mx.ones(3), 0)
except ValueError as e:
    print("recv:", e)
