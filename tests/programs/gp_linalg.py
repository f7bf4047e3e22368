import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

mx.random.seed(21)
N, D = 40, 3
X = mx.random.uniform(-2, 2, (N, D))
w_true = mx.array([1.5, -0.7, 0.3])
y = X @ w_true + 0.1 * mx.random.normal((N,))

# ordinary least squares three ways
A = mx.concatenate([X, mx.ones((N, 1))], axis=1)
Q, R = mx.linalg.qr(A, stream=mx.cpu)
w_qr = mx.linalg.solve_triangular(R, (Q.T @ y)[:, None], upper=True, stream=mx.cpu)[:, 0]
w_inv = mx.linalg.inv(A.T @ A, stream=mx.cpu) @ (A.T @ y)
U, S, Vt = mx.linalg.svd(A, stream=mx.cpu)
w_svd = Vt.T @ ((U[:, :D + 1].T @ y) / S)
w_pinv = mx.linalg.pinv(A, stream=mx.cpu) @ y
print("ols", " ".join(f"{v:.5f}" for v in w_qr.tolist()))
print("agree", f"{mx.linalg.norm(w_qr - w_inv).item() < 1e-4}", f"{mx.linalg.norm(w_qr - w_svd).item() < 1e-4}",
      f"{mx.linalg.norm(w_qr - w_pinv).item() < 1e-4}")
print("cond", f"{(S[0] / S[-1]).item():.4f}", "fro", f"{mx.linalg.norm(A, 'fro').item():.4f}",
      "nuc", f"{mx.linalg.norm(A, 'nuc', stream=mx.cpu).item():.4f}")


# Gaussian process regression with an RBF kernel
def rbf(a, b, ls, var):
    d2 = mx.sum(a * a, 1)[:, None] + mx.sum(b * b, 1)[None, :] - 2 * a @ b.T
    return var * mx.exp(-0.5 * mx.maximum(d2, 0) / ls ** 2)


def neg_log_marginal(params, x, t):
    ls, var, noise = mx.exp(params["log_ls"]), mx.exp(params["log_var"]), mx.exp(params["log_noise"])
    K = rbf(x, x, ls, var) + (noise + 1e-4) * mx.eye(x.shape[0])
    L = mx.linalg.cholesky(K, stream=mx.cpu)
    alpha = mx.linalg.solve_triangular(L, t[:, None], upper=False, stream=mx.cpu)
    return 0.5 * mx.sum(alpha * alpha) + mx.sum(mx.log(mx.diag(L))) + 0.5 * x.shape[0] * mx.log(2 * mx.array(3.14159265))


xs = mx.random.uniform(-3, 3, (25, 1))
ts = mx.sin(2 * xs[:, 0]) + 0.1 * mx.random.normal((25,))
params = {"log_ls": mx.array(0.0), "log_var": mx.array(0.0), "log_noise": mx.array(-2.0)}
print("nlml0", f"{neg_log_marginal(params, xs, ts).item():.5f}")

K = rbf(xs, xs, 1.0, 1.0) + 0.1 * mx.eye(25)
L = mx.linalg.cholesky(K, stream=mx.cpu)
print("chol", f"{mx.abs(L @ L.T - K).max().item() < 1e-5}", f"{mx.linalg.norm(L).item():.5f}")
Kinv = mx.linalg.cholesky_inv(L, stream=mx.cpu)
print("cinv", f"{mx.abs(Kinv @ K - mx.eye(25)).max().item() < 1e-3}")
x_test = mx.linspace(-3, 3, 7)[:, None]
Ks = rbf(x_test, xs, 1.0, 1.0)
mean = Ks @ mx.linalg.solve(K, ts[:, None], stream=mx.cpu)
v = mx.linalg.solve_triangular(L, Ks.T, upper=False, stream=mx.cpu)
var = 1.0 - mx.sum(v * v, 0)
print("mean", " ".join(f"{m:.4f}" for m in mean[:, 0].tolist()))
print("var", " ".join(f"{m:.4f}" for m in var.tolist()))
evals, evecs = mx.linalg.eigh(K, stream=mx.cpu)
print("eigh", f"{evals.min().item():.5f}", f"{evals.max().item():.5f}", f"{evals.sum().item():.4f}")
print("trace", f"{mx.trace(K).item():.4f}")
