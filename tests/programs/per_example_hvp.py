import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map

mx.random.seed(11)
N, D, H = 12, 5, 7
X = mx.random.normal((N, D))
y = mx.random.normal((N,))
params = {"w1": mx.random.normal((D, H)) * 0.5, "b1": mx.zeros((H,)), "w2": mx.random.normal((H,)) * 0.5}


def predict(p, x):
    return mx.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]


def loss(p, x, t):
    return mx.square(predict(p, x) - t).mean()


# per-example gradients: vmap over the data, not the parameters
per_ex = mx.vmap(mx.grad(loss), in_axes=(None, 0, 0))(params, X[:, None], y[:, None])
for k, v in sorted(per_ex.items()):
    print("per_ex", k, v.shape, f"{v.sum().item():.6f}")
full = mx.grad(loss)(params, X, y)
diff = max(mx.abs(per_ex[k].mean(0) - full[k]).max().item() for k in full)
print("mean matches", diff < 1e-5)
norms = mx.sqrt(sum(mx.square(v).reshape(N, -1).sum(1) for v in per_ex.values()))
print("norms", norms.shape, f"{norms.max().item():.6f}", f"{norms.min().item():.6f}")

# Hessian-vector products two ways, over the flattened parameter list
keys = sorted(params)
v = tree_map(lambda a: mx.random.normal(a.shape), params)
def grad_list(*arrays):
    g = mx.grad(loss)(dict(zip(keys, arrays)), X, y)
    return [g[k] for k in keys]
primals = [params[k] for k in keys]
tangents = [v[k] for k in keys]
_, hvp_fwd = mx.jvp(grad_list, primals, tangents)
_, hvp_rev = mx.vjp(grad_list, primals, tangents)
hvp_fwd = dict(zip(keys, hvp_fwd))
hvp_rev = dict(zip(keys, hvp_rev))
for k in keys:
    print("hvp", k, f"{hvp_fwd[k].sum().item():.5f}", f"{hvp_rev[k].sum().item():.5f}")
vHv = sum((hvp_fwd[k] * v[k]).sum() for k in params)
print("vHv", f"{vHv.item():.5f}")

# exact Hessian of a small function through jacfwd-style vmap of jvp
f = lambda w: mx.sum(mx.sin(w) * w ** 2)
w0 = mx.array([0.3, -1.2, 2.0])
grad_f = mx.grad(f)
basis = mx.eye(3)
hess = mx.vmap(lambda e: mx.jvp(grad_f, [w0], [e])[1][0])(basis)
print("hess", hess.shape, " ".join(f"{x:.5f}" for x in hess.diag().tolist()))
print("sym", f"{mx.abs(hess - hess.T).max().item():.6f}")

# second derivative of a scalar function
d2 = mx.grad(mx.grad(lambda x: x ** 3 * mx.exp(-x)))(mx.array(1.5))
print("d2", f"{d2.item():.6f}")
