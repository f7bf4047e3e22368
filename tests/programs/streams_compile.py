"""Devices, streams, the memory API (printing only what is deterministic) and mx.compile
patterns: shapeless functions, captured state outputs, nested compiled functions, compiled
gradients, and a compiled training step that runs while work is placed on explicit streams."""
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

print(mx.default_device() == mx.cpu or mx.default_device() == mx.gpu, mx.is_available(mx.cpu), mx.cpu)
s = mx.new_stream(mx.cpu)
print(s.device, s == mx.default_stream(mx.cpu), mx.default_stream(mx.cpu).device)
with mx.stream(mx.cpu):
    a = mx.arange(6.0).reshape(2, 3) * 2
with mx.stream(s):
    b = mx.exp(a / 10).sum(axis=1)
c = mx.add(a, 1, stream=mx.cpu)
mx.synchronize(s)
mx.synchronize()
print(b, c.sum(axis=0, stream=s))
mx.eval(a, b, c)

# memory API: types and relations only (sizes depend on the allocator)
mx.reset_peak_memory()
big = mx.ones((256, 256))
mx.eval(big)
print(isinstance(mx.get_active_memory(), int), mx.get_peak_memory() >= 0, mx.get_cache_memory() >= 0)
old = mx.set_cache_limit(1 << 28)
print(isinstance(old, int), mx.set_cache_limit(old) == 1 << 28)
old = mx.set_memory_limit(1 << 33)
print(isinstance(old, int), mx.set_memory_limit(old) == 1 << 33)
del big
mx.clear_cache()
print(mx.get_cache_memory(), isinstance(mx.metal.is_available(), bool), isinstance(mx.cuda.is_available(), bool))

# compile: plain, shapeless, nested, with captured outputs
@mx.compile
def gelu_tanh(x):
    return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x**3)))


print(gelu_tanh(mx.array([-2.0, -0.5, 0.0, 0.5, 2.0])))


@partial(mx.compile, shapeless=True)
def rms(x, eps):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + eps)


for n in (3, 5, 8):
    r = rms(mx.arange(1.0, n + 1).reshape(1, n), 1e-5)
    print("rms", r.shape, f"{r.sum().item():.5f}")

inner = mx.compile(lambda x: mx.logsumexp(x, axis=-1))


@mx.compile
def outer(x, y):
    return inner(x) - inner(y) + inner(x + y)


print("nested", outer(mx.arange(6.0).reshape(2, 3) / 3, mx.ones((2, 3))))

counter = {"calls": mx.array(0), "total": mx.array(0.0)}


@partial(mx.compile, inputs=counter, outputs=counter)
def track(x):
    counter["calls"] = counter["calls"] + 1
    counter["total"] = counter["total"] + x.sum()
    return x * 2


for i in range(4):
    track(mx.full((3,), float(i)))
print("tracked", counter["calls"].item(), counter["total"].item())

cache = [mx.zeros((4,))]


@partial(mx.compile, outputs=cache)
def write(x):
    cache[0] = mx.maximum(cache[0], x)
    return x.sum()


write(mx.array([1.0, -1.0, 3.0, 0.0]))
print("cache", cache[0])


def loss(w, x, y):
    return mx.mean((x @ w - y) ** 2)


grad_fn = mx.compile(mx.value_and_grad(loss))
x = mx.random.normal((16, 3), key=mx.random.key(1))
y = x @ mx.array([[1.0], [-2.0], [0.5]])
w = mx.zeros((3, 1))
for i in range(20):
    l, g = grad_fn(w, x, y)
    w = w - 0.1 * g
print("fit", f"{l.item():.6f}", [f"{v:.4f}" for v in w.reshape(-1).tolist()])
print("vmap", mx.compile(mx.vmap(lambda v: (v * v).sum()))(mx.arange(6.0).reshape(3, 2)))

# a compiled training step
mx.random.seed(4)
model = nn.Sequential(nn.Linear(3, 16), nn.GELU(), nn.Linear(16, 1))
opt = optim.Lion(learning_rate=3e-3, weight_decay=0.01)
state = [model.state, opt.state]


@partial(mx.compile, inputs=state, outputs=state)
def step(x, y):
    l, g = nn.value_and_grad(model, lambda m: nn.losses.mse_loss(m(x), y))(model)
    opt.update(model, g)
    return l


for i in range(10):
    l = step(x, y)
    mx.eval(state)
    if i % 3 == 0:
        print("train", i, f"{l.item():.5f}")
mx.disable_compile()
print("disabled", f"{step(x, y).item():.5f}", gelu_tanh(mx.array(1.0)))
mx.enable_compile()
