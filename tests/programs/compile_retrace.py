"""When mx.compile re-runs the Python body: once per new input shape/dtype, new Python constant,
new captured-state structure; side effects in the body happen at trace time only; arrays a
compiled function reads through a closure are frozen into the trace (pass them as inputs)."""
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

mx.random.seed(4)
log = []


@mx.compile
def scaled_softplus(x, beta=1.0):
    log.append(f"trace {tuple(x.shape)} {x.dtype} beta={beta}")
    return mx.logaddexp(x * beta, 0.0) / beta


x3 = mx.random.normal((3,))
for x, beta in [(x3, 1.0), (x3 * 2, 1.0), (mx.random.normal((4,)), 1.0), (x3, 2.0),
                (x3.astype(mx.float16), 1.0), (x3 + 1, 1.0), (x3, 2.0), (x3, 2)]:
    y = scaled_softplus(x, beta)
    print("softplus", y.shape, y.dtype, round(y.astype(mx.float32).sum().item(), 3))
print("\n".join(log))
print("traces", len(log))

# a model read through a closure: its weights are constants of the trace
model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
mx.eval(model.parameters())
X = mx.random.normal((16, 4))
Y = mx.random.normal((16, 2))
frozen_forward = mx.compile(lambda x: model(x))
live_forward = partial(mx.compile, inputs=model.state)(lambda x: model(x))
before = frozen_forward(X)
live_forward(X)
opt = optim.SGD(learning_rate=0.1)
loss_and_grad = nn.value_and_grad(model, lambda m, x, y: nn.losses.mse_loss(m(x), y))
for _ in range(5):
    loss, grads = loss_and_grad(model, X, Y)
    opt.update(model, grads)
    mx.eval(model.parameters())
eager = model(X)
print("frozen unchanged", mx.array_equal(frozen_forward(X), before).item())
print("live follows model", mx.allclose(live_forward(X), eager, atol=1e-5).item(),
      round(mx.abs(eager - before).sum().item(), 3))

# a compiled train step with captured state: the body runs once per trace
steps = []
state = [model.state, opt.state]


@partial(mx.compile, inputs=state, outputs=state)
def train_step(x, y):
    steps.append(tuple(x.shape))
    loss, grads = loss_and_grad(model, x, y)
    opt.update(model, grads)
    return loss


for epoch in range(3):
    for i in range(0, 16, 4):
        loss = train_step(X[i:i + 4], Y[i:i + 4])
    mx.eval(state)
    print("epoch", epoch, round(loss.item(), 4), round(nn.losses.mse_loss(model(X), Y).item(), 4))
loss = train_step(X[:6], Y[:6])  # a new batch shape: traced again
print("body runs", len(steps), steps)


# a counter captured as input and output
counter = {"calls": mx.array(0), "total": mx.array(0.0)}


@partial(mx.compile, inputs=counter, outputs=counter)
def observe(v):
    counter["calls"] = counter["calls"] + 1
    counter["total"] = counter["total"] + v.sum()
    return counter["total"] / counter["calls"]


for v in [mx.ones((2,)), mx.arange(2.0), mx.full((2,), 3.0), mx.ones((2,))]:
    mean = observe(v)
print("counter", counter["calls"].item(), round(counter["total"].item(), 3), round(mean.item(), 4))

# shapeless: one trace serves every shape of the same rank; a new rank traces again
shape_log = []
norm = mx.compile(lambda v: shape_log.append(v.ndim) or v / mx.sqrt((v * v).sum(-1, keepdims=True)), shapeless=True)
for v in [mx.ones((2, 3)), mx.ones((2, 3)), mx.ones((5,))]:
    print("norm", norm(v).shape, round(norm(v).sum().item(), 4))
print("shapeless traces", shape_log)
