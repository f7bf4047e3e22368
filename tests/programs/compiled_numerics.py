from functools import partial

import mlx.core as mx

mx.random.seed(17)

# per-dataset ridge fits with vmap over a batch of problems
B, n, d = 8, 40, 3
X = mx.random.normal((B, n, d))
w_true = mx.random.normal((B, d))
y = (X @ w_true[..., None])[..., 0] + 0.1 * mx.random.normal((B, n))


def ridge(Xi, yi, lam=0.1):
    A = Xi.T @ Xi + lam * mx.eye(Xi.shape[1])
    return mx.linalg.solve(A, Xi.T @ yi, stream=mx.cpu)


W = mx.stack([ridge(X[i], y[i]) for i in range(B)])
print("ridge", W.shape, f"{mx.abs(W - w_true).max().item():.4f}")

# the same normal equations through a compiled, vmapped Cholesky-free CG solver


@mx.compile
def cg(A, b):
    x = mx.zeros_like(b)
    r = b - A @ x
    p = r
    rs = (r * r).sum()
    for _ in range(6):
        Ap = A @ p
        alpha = rs / (p * Ap).sum()
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = (r * r).sum()
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


A = X.transpose(0, 2, 1) @ X + 0.1 * mx.eye(d)
b = (X.transpose(0, 2, 1) @ y[..., None])[..., 0]
Wcg = mx.vmap(cg)(A, b)
print("cg vs solve", f"{mx.abs(Wcg - W).max().item() < 1e-3}", f"{Wcg.sum().item():.4f}")

# per-example gradients of a logistic loss with vmap(grad)
Xc = mx.random.normal((64, 5))
yc = (Xc[:, 0] - Xc[:, 1] > 0).astype(mx.float32)


def loss(w, x, t):
    z = x @ w
    return mx.logaddexp(0.0, z) - t * z


w = mx.zeros(5)
pex = mx.vmap(mx.grad(loss), in_axes=(None, 0, 0))(w, Xc, yc)
print("per-example", pex.shape, f"{mx.linalg.norm(pex.mean(0) - mx.grad(lambda w: loss(w, Xc, yc).mean())(w)).item() < 1e-6}")
norms = mx.linalg.norm(pex, axis=1)
print("clip frac", (norms > 1.0).sum().item(), f"{norms.mean().item():.5f}")

# Newton's method for the logistic model, one compiled step with captured random state
state = [mx.random.state]


@partial(mx.compile, inputs=state, outputs=state)
def noisy_newton_step(w):
    g = mx.grad(lambda v: loss(v, Xc, yc).mean() + 0.05 * (v * v).sum())(w)
    s = mx.sigmoid(Xc @ w)
    H = (Xc.T * (s * (1 - s))) @ Xc / 64 + 0.1 * mx.eye(5)
    step = mx.linalg.inv(H, stream=mx.cpu) @ g
    return w - step + 1e-3 * mx.random.normal(w.shape)


w = mx.zeros(5)
for it in range(5):
    w = noisy_newton_step(w)
    mx.eval(w)
    print("newton", it, f"{(loss(w, Xc, yc).mean() + 0.05 * (w * w).sum()).item():.5f}")
print("w", " ".join(f"{v:.3f}" for v in w.tolist()))

# Hessian of a small function via jacobian-of-grad built from vjp/jvp
def f(v):
    return mx.sum(mx.sin(v) * v ** 2) + v @ mx.array([[0.0, 1.0, 0.5], [0.0, 0.0, -1.0], [0.0, 0.0, 0.0]]) @ v


v0 = mx.array([0.3, -0.7, 1.1])
gf = mx.grad(f)
H = mx.stack([mx.jvp(gf, (v0,), (e,))[1][0] for e in mx.eye(3)])
Hv = mx.stack([mx.vjp(gf, (v0,), (e,))[1][0] for e in mx.eye(3)])
print("hessian", f"{mx.abs(H - H.T).max().item() < 1e-5}", f"{mx.abs(H - Hv).max().item() < 1e-5}", " ".join(f"{x:.4f}" for x in mx.diag(H).tolist()))
Hvm = mx.vmap(lambda e: mx.jvp(gf, (v0,), (e,))[1][0])(mx.eye(3))
print("vmapped hvp", f"{mx.abs(Hvm - H).max().item() < 1e-5}")
ev = mx.linalg.eigvalsh(H, stream=mx.cpu)
print("hessian eig", " ".join(f"{x:.4f}" for x in ev.tolist()))

# shapeless compile of an elementwise kernel reused on several shapes


@partial(mx.compile, shapeless=True)
def softclip(x, lo, hi):
    return lo + (hi - lo) * mx.sigmoid(4 * (x - (lo + hi) / 2) / (hi - lo))


for shape in [(3,), (2, 5), (4, 1, 3)]:
    z = softclip(mx.random.normal(shape) * 3, mx.array(-1.0), mx.array(2.0))
    print("softclip", z.shape, f"{z.min().item():.4f}", f"{z.max().item():.4f}")

# value_and_grad with argnums over two arguments and auxiliary output
def objective(a, b):
    r = X[0] @ a + b - y[0]
    return (r * r).mean(), r


(val, resid), (ga, gb) = mx.value_and_grad(objective, argnums=(0, 1))(mx.zeros(d), mx.array(0.0))
print("value_and_grad", f"{val.item():.5f}", resid.shape, f"{mx.linalg.norm(ga).item():.5f}", f"{gb.item():.5f}")
