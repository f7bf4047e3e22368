"""Second-order and batched-model training written with transforms: MAML (grad through an
inner SGD step), a vmapped ensemble over stacked parameter trees, Jacobians by vmap(vjp) and
vmap(jvp), and a Gauss-Newton step from those Jacobians."""
import mlx.core as mx
from mlx.utils import tree_flatten, tree_map

mx.random.seed(42)


def init(key, d_in, d_h):
    k1, k2 = mx.random.split(key)
    return {"w1": mx.random.normal((d_in, d_h), key=k1) * 0.5, "b1": mx.zeros((d_h,)),
            "w2": mx.random.normal((d_h, 1), key=k2) * 0.5}


def net(p, x):
    return (mx.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]).squeeze(-1)


def mse(p, x, y):
    return mx.square(net(p, x) - y).mean()


# --- MAML on sine tasks: the outer gradient differentiates through the inner update
def task(key, n):
    ka, kp, kx = mx.random.split(key, 3)
    amp = mx.random.uniform(0.5, 2.0, key=ka)
    phase = mx.random.uniform(0.0, 3.0, key=kp)
    x = mx.random.uniform(-3, 3, (2 * n, 1), key=kx)
    y = amp * mx.sin(x[:, 0] + phase)
    return x[:n], y[:n], x[n:], y[n:]


def adapted(p, xs, ys, lr=0.1):
    g = mx.grad(mse)(p, xs, ys)
    return tree_map(lambda a, b: a - lr * b, p, g)


def maml_loss(p, batch):
    return sum(mse(adapted(p, xs, ys), xq, yq) for xs, ys, xq, yq in batch) / len(batch)


meta = init(mx.random.key(0), 1, 16)
keys = mx.random.split(mx.random.key(1), 20)
for it in range(8):
    batch = [task(keys[(2 * it + j) % 20], 10) for j in range(2)]
    loss, g = mx.value_and_grad(maml_loss)(meta, batch)
    fast = [adapted(meta, *b[:2]) for b in batch]
    first_order = mx.grad(lambda ps: sum(mse(q, *b[2:]) for q, b in zip(ps, batch)))(fast)
    meta = tree_map(lambda a, b: a - 0.05 * b, meta, g)
    mx.eval(meta)
    if it % 3 == 0 or it == 7:
        gn = mx.sqrt(sum(mx.square(v).sum() for _, v in tree_flatten(g))).item()
        fo = sum(mx.abs(v).sum() for _, v in tree_flatten(first_order)).item() / len(batch)
        print("maml", it, round(loss.item(), 4), round(gn, 4), round(fo, 4))

# --- an ensemble of 4 models trained at once: vmap over stacked parameters
E = 4
members = [init(k, 3, 8) for k in mx.random.split(mx.random.key(2), E)]
stacked = tree_map(lambda *xs: mx.stack(xs), *members)
X = mx.random.normal((32, 3))
Y = mx.sin(X @ mx.array([1.0, -2.0, 0.5]))
ens_grad = mx.vmap(mx.value_and_grad(mse), in_axes=(0, None, None))
for it in range(25):
    losses, g = ens_grad(stacked, X, Y)
    stacked = tree_map(lambda a, b: a - 0.2 * b, stacked, g)
    mx.eval(stacked)
print("ensemble losses", losses.shape, [round(v, 4) for v in losses.tolist()])
preds = mx.vmap(net, in_axes=(0, None))(stacked, X)
print("ensemble preds", preds.shape, round(mx.square(preds.mean(0) - Y).mean().item(), 4),
      round(preds.var(axis=0).mean().item(), 5))
single = tree_map(lambda a: a[2], stacked)
print("member 2 matches", mx.allclose(net(single, X), preds[2], atol=1e-5).item())
# bootstrapped data: both parameters and data batched, per-member batch on axis 1
boot = mx.random.randint(0, 32, (16, E))
lb = mx.vmap(mse, in_axes=(0, 1, 1))(stacked, X[boot], Y[boot])
print("bootstrap losses", lb.shape, round(lb.sum().item(), 4))

# --- Jacobians: reverse mode (vmap over cotangents) and forward mode (vmap over tangents)
p0 = members[0]
flat_keys = [k for k, _ in tree_flatten(p0)]


def residuals(w1):
    return net({**p0, "w1": w1}, X[:6]) - Y[:6]


w1 = p0["w1"]
J_rev = mx.vmap(lambda ct: mx.vjp(residuals, [w1], [ct])[1][0])(mx.eye(6))
J_fwd = mx.vmap(lambda t: mx.jvp(residuals, [w1], [t.reshape(w1.shape)])[1][0], out_axes=1)(mx.eye(w1.size))
print("jacobians", J_rev.shape, J_fwd.shape, mx.allclose(J_rev.reshape(6, -1), J_fwd, atol=1e-5).item())
# a damped Gauss-Newton step on w1 from the Jacobian
J = J_fwd
r = residuals(w1)
JtJ = J.T @ J + 1e-2 * mx.eye(J.shape[1])
step = mx.linalg.solve(JtJ, J.T @ r, stream=mx.cpu)
new_w1 = w1 - step.reshape(w1.shape)
print("gauss-newton", round(mx.square(r).sum().item(), 3), "->", round(mx.square(residuals(new_w1)).sum().item(), 3))

# --- per-example gradient norms for all parameters via vmap(grad) with tree outputs
per = mx.vmap(mx.grad(lambda p, x, y: mse(p, x[None], y[None])), in_axes=(None, 0, 0))(p0, X, Y)
norms = mx.sqrt(sum(mx.square(v).reshape(32, -1).sum(1) for v in per.values()))
print("per-example", {k: v.shape for k, v in per.items()}, round(norms.mean().item(), 4), round(norms.max().item(), 4))
