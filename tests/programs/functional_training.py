import math

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten


def init_mlp(key, sizes):
    params = []
    keys = mx.random.split(key, len(sizes) - 1)
    for k, (din, dout) in zip(keys, zip(sizes[:-1], sizes[1:])):
        w = mx.random.normal((din, dout), key=k) * math.sqrt(2.0 / din)
        params.append({"w": w, "b": mx.zeros((dout,))})
    return params


def forward(params, x):
    for layer in params[:-1]:
        x = mx.maximum(x @ layer["w"] + layer["b"], 0.0)
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    logits = forward(params, x)
    logp = logits - mx.logsumexp(logits, axis=1, keepdims=True)
    return -mx.take_along_axis(logp, y[:, None], axis=1).mean()


@mx.compile
def sgd_step(params, velocity, x, y, lr):
    loss, grads = mx.value_and_grad(loss_fn)(params, x, y)
    velocity = tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = tree_map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity, loss


key = mx.random.key(0)
dkey, pkey = mx.random.split(key)
X = mx.random.normal((200, 10), key=dkey)
W = mx.random.normal((10, 3), key=pkey)
y = mx.argmax(X @ W, axis=1)
params = init_mlp(pkey, [10, 32, 32, 3])
velocity = tree_map(mx.zeros_like, params)
lr = mx.array(0.05)
for epoch in range(3):
    perm = mx.random.permutation(200, key=mx.random.key(epoch))
    for i in range(0, 200, 50):
        idx = perm[i:i + 50]
        params, velocity, loss = sgd_step(params, velocity, X[idx], y[idx], lr)
        mx.eval(params, velocity)
    acc = (mx.argmax(forward(params, X), axis=1) == y).mean()
    print("epoch", epoch, f"{loss.item():.5f}", f"{acc.item():.4f}")

flat = tree_flatten(params)
print("keys", [k for k, _ in flat][:4], len(flat))
norm = mx.sqrt(tree_reduce(lambda a, p: a + (p * p).sum(), params, mx.array(0.0)))
print("norm", f"{norm.item():.5f}")
restored = tree_unflatten(flat)
print("restored", isinstance(restored, list), f"{loss_fn(restored, X, y).item():.5f}")
# per-layer gradient norms through vmap over a stacked batch of examples
g1 = mx.vmap(mx.grad(lambda p, x, t: loss_fn(p, x[None], t[None])), in_axes=(None, 0, 0))(params, X[:8], y[:8])
print("per-example", g1[0]["w"].shape, f"{mx.sqrt((g1[0]['w'] ** 2).sum(axis=(1, 2))).mean().item():.5f}")
