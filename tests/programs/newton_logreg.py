import mlx.core as mx

mx.random.seed(5)

# logistic regression with Newton's method (IRLS)
n, d = 200, 4
X = mx.random.normal((n, d))
X = mx.concatenate([mx.ones((n, 1)), X], axis=1)
w_true = mx.array([0.5, 1.5, -2.0, 0.0, 1.0])
p = mx.sigmoid(X @ w_true)
y = mx.random.bernoulli(p).astype(mx.float32)
print("labels", y.dtype, f"{y.mean().item():.4f}")


def nll(w):
    z = X @ w
    return mx.mean(mx.logaddexp(0.0, z) - y * z) + 0.01 * (w ** 2).sum()


w = mx.zeros(d + 1)
for it in range(6):
    g = mx.grad(nll)(w)
    s = mx.sigmoid(X @ w)
    H = (X.T * (s * (1 - s))) @ X / n + 0.02 * mx.eye(d + 1)
    step = mx.linalg.solve(H, g, stream=mx.cpu)
    w = w - step
    print("newton", it, f"{nll(w).item():.6f}", f"{mx.linalg.norm(g).item():.3e}" if it < 4 else "")
print("w", " ".join(f"{v:.4f}" for v in w.tolist()))
Hinv = mx.linalg.inv(H, stream=mx.cpu)
print("inv check", f"{mx.abs(Hinv @ H - mx.eye(d + 1)).max().item() < 1e-4}", f"{mx.trace(Hinv).item():.4f}")
acc = ((X @ w > 0) == (y > 0.5)).mean()
print("acc", f"{acc.item():.4f}")

# kernel ridge regression with an RBF kernel
xs = mx.random.uniform(-3, 3, (60, 1))
ys = mx.sin(xs[:, 0]) + 0.1 * mx.random.normal((60,))
xt = mx.linspace(-3, 3, 25)[:, None]


def rbf(a, b, ls=0.8):
    d2 = mx.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
    return mx.exp(-0.5 * d2 / ls ** 2)


for lam in [1e-2, 1e-1, 1.0]:
    K = rbf(xs, xs)
    alpha = mx.linalg.solve(K + lam * mx.eye(60), ys, stream=mx.cpu)
    pred = rbf(xt, xs) @ alpha
    err = mx.sqrt(mx.mean((pred - mx.sin(xt[:, 0])) ** 2))
    print("krr", lam, f"{err.item():.4f}", f"{mx.linalg.norm(alpha).item():.3f}")
L = mx.linalg.cholesky(rbf(xs, xs) + 0.1 * mx.eye(60), stream=mx.cpu)
z = mx.linalg.solve_triangular(L, ys, upper=False, stream=mx.cpu)
alpha2 = mx.linalg.solve_triangular(L.T, z, upper=True, stream=mx.cpu)
print("chol path", f"{mx.abs(alpha2 - mx.linalg.solve(rbf(xs, xs) + 0.1 * mx.eye(60), ys, stream=mx.cpu)).max().item() < 1e-3}",
      f"{(2 * mx.log(mx.diag(L)).sum()).item():.4f}")

# Rosenbrock with gradient descent + backtracking (Armijo) line search


def rosen(v):
    return mx.sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2)


vg = mx.value_and_grad(rosen)
v = mx.array([-1.2, 1.0, -0.5, 0.8])
for it in range(25):
    f, g = vg(v)
    t = 1.0
    while rosen(v - t * g).item() > f.item() - 1e-4 * t * (g * g).sum().item():
        t *= 0.5
    v = v - t * g
    if it % 6 == 0 or it == 24:
        print("rosen", it, f"{f.item():.5f}", f"{t:.6g}")
# Hessian-vector product via jvp of grad
_, hv = mx.jvp(mx.grad(rosen), (v,), (mx.ones_like(v),))
print("hvp", " ".join(f"{x:.3f}" for x in hv[0].tolist()))
