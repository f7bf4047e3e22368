"""Bayesian linear regression and a Kalman filter written the way scientific code does it:
Cholesky factors and triangular solves for the posterior, slogdet for the evidence, posterior
draws with multivariate_normal and explicit keys, tri_inv/cholesky_inv for covariances, and a
constant-velocity Kalman filter with solve on a CPU stream."""
import math

import mlx.core as mx

cpu = mx.cpu


def fmt(x, d=4):
    return " ".join(f"{v:.{d}f}" for v in mx.array(x).flatten().tolist())


key = mx.random.key(2024)
k_x, k_noise, k_post, k_kf = mx.random.split(key, 4)
N, D = 30, 3
X = mx.concatenate([mx.ones((N, 1)), mx.random.uniform(-1, 1, (N, D - 1), key=k_x)], axis=1)
w_true = mx.array([0.5, -1.0, 2.0])
y = X @ w_true + 0.2 * mx.random.normal((N,), key=k_noise)

alpha, beta = 1.0, 25.0
A = alpha * mx.eye(D) + beta * X.T @ X
L = mx.linalg.cholesky(A, stream=cpu)
z = mx.linalg.solve_triangular(L, beta * X.T @ y, upper=False, stream=cpu)
mean = mx.linalg.solve_triangular(L.T, z, upper=True, stream=cpu)
print("posterior mean", fmt(mean))
cov = mx.linalg.cholesky_inv(L, stream=cpu)
print("posterior sd", fmt(mx.sqrt(mx.diag(cov))))
Linv = mx.linalg.tri_inv(L, stream=cpu)
print("tri_inv check", mx.allclose(Linv.T @ Linv, cov, atol=1e-5).item())
U = mx.linalg.cholesky(A, upper=True, stream=cpu)
print("upper chol", mx.allclose(U, L.T, atol=1e-5).item(), mx.allclose(mx.linalg.cholesky_inv(U, upper=True, stream=cpu), cov, atol=1e-5).item())

sign, logdet = mx.linalg.slogdet(A, stream=cpu)
resid = y - X @ mean
evidence = (D / 2 * math.log(alpha) + N / 2 * math.log(beta) - beta / 2 * (resid @ resid)
            - alpha / 2 * (mean @ mean) - 0.5 * logdet - N / 2 * math.log(2 * math.pi))
print("log evidence", f"{evidence.item():.3f}", "sign", sign.item(), "logdet", f"{logdet.item():.4f}")
print("det", f"{mx.linalg.det(A, stream=cpu).item():.2f}", f"{math.exp(logdet.item()):.2f}")

draws = mx.random.multivariate_normal(mean, cov, shape=(2000,), key=k_post, stream=cpu)
print("draws", draws.shape, fmt(draws.mean(0), 2), fmt(draws.std(0), 3))
keys = mx.random.split(k_post, 3)
few = mx.stack([mx.random.multivariate_normal(mean, cov, key=k, stream=cpu) for k in keys])
print("few", fmt(few, 3))

# Kalman filter: constant velocity, noisy positions
dt = 0.1
F = mx.array([[1.0, dt], [0.0, 1.0]])
H = mx.array([[1.0, 0.0]])
Q = 0.01 * mx.eye(2)
R = mx.array([[0.25]])
truth = mx.stack([mx.arange(20) * dt * 1.5, mx.full((20,), 1.5)], axis=1)
obs = truth[:, :1] + 0.5 * mx.random.normal((20, 1), key=k_kf)
x = mx.zeros((2,))
P = mx.eye(2)
for t in range(20):
    x = F @ x
    P = F @ P @ F.T + Q
    S = H @ P @ H.T + R
    K = mx.linalg.solve(S, H @ P, stream=cpu).T
    x = x + K @ (obs[t] - H @ x)
    P = (mx.eye(2) - K @ H) @ P
    if t % 5 == 4:
        print("kf", t, fmt(x, 3), fmt(mx.diag(P), 4))
print("kf inv", fmt(mx.linalg.inv(P, stream=cpu), 2), "eig", fmt(mx.linalg.eigvalsh(P, stream=cpu), 5))
print("cond", f"{mx.linalg.norm(A, 2, stream=cpu).item() * mx.linalg.norm(mx.linalg.inv(A, stream=cpu), 2, stream=cpu).item():.3f}")
