import math

import mlx.core as mx

mx.random.seed(10)

# 1. EM for a 1-D Gaussian mixture (log-domain responsibilities with logsumexp)
true_mu = mx.array([-2.0, 0.5, 3.0])
comp = mx.random.categorical(mx.log(mx.array([0.3, 0.5, 0.2])), num_samples=400)
x = true_mu[comp] + 0.5 * mx.random.normal((400,))
mu, log_var, log_pi = mx.array([-1.0, 0.0, 1.0]), mx.zeros(3), mx.log(mx.ones(3) / 3)
for it in range(15):
    ll = -0.5 * ((x[:, None] - mu) ** 2 / mx.exp(log_var) + log_var + math.log(2 * math.pi)) + log_pi
    log_r = ll - mx.logsumexp(ll, axis=1, keepdims=True)
    r = mx.exp(log_r)
    nk = r.sum(0)
    mu = (r * x[:, None]).sum(0) / nk
    log_var = mx.log((r * (x[:, None] - mu) ** 2).sum(0) / nk)
    log_pi = mx.log(nk / x.shape[0])
    if it % 7 == 0 or it == 14:
        print("em", it, f"{mx.logsumexp(ll, axis=1).mean().item():.5f}")
order = mx.argsort(mu)
print("mu", " ".join(f"{v:.4f}" for v in mu[order].tolist()), "pi", " ".join(f"{v:.4f}" for v in mx.exp(log_pi)[order].tolist()))

# 2. Sinkhorn iterations for entropic optimal transport between two point clouds
a_pts = mx.random.normal((30, 2))
b_pts = mx.random.normal((40, 2)) + mx.array([1.0, 0.0])
C = ((a_pts[:, None, :] - b_pts[None, :, :]) ** 2).sum(-1)
eps = 0.5
log_a, log_b = mx.full((30,), -math.log(30)), mx.full((40,), -math.log(40))
f, g = mx.zeros(30), mx.zeros(40)
for _ in range(25):
    f = -eps * mx.logsumexp((g[None, :] - C) / eps + log_b[None, :], axis=1)
    g = -eps * mx.logsumexp((f[:, None] - C) / eps + log_a[:, None], axis=0)
P = mx.exp((f[:, None] + g[None, :] - C) / eps + log_a[:, None] + log_b[None, :])
print("sinkhorn", f"{(P * C).sum().item():.5f}", f"{mx.abs(P.sum(1) - 1 / 30).max().item() * 30:.4f}",
      f"{P.sum().item():.5f}")

# 3. Poisson equation on a periodic grid solved spectrally: -lap(u) = f
n = 32
k = mx.fft.fftfreq(n, d=1.0 / n)  # integer wavenumbers on [0, 2 pi)
kx, ky = k[:, None], k[None, :]
grid = mx.arange(n) / n * 2 * math.pi
X, Y = grid[:, None], grid[None, :]
u_true = mx.sin(X) * mx.cos(2 * Y)
rhs = 5 * u_true
denom = kx ** 2 + ky ** 2
denom = mx.where(denom == 0, 1.0, denom)
u_hat = mx.fft.fft2(rhs.astype(mx.complex64)) / denom
u = mx.real(mx.fft.ifft2(u_hat))
print("poisson", f"{mx.abs(u - u_true).max().item() < 1e-4}", f"{mx.sqrt((u ** 2).mean()).item():.5f}")

# 4. A Kalman filter tracking a constant-velocity target
F = mx.array([[1.0, 1.0], [0.0, 1.0]])
H = mx.array([[1.0, 0.0]])
Q = 0.01 * mx.eye(2)
R = mx.array([[0.25]])
state = mx.array([0.0, 1.0])
true_pos = mx.arange(20).astype(mx.float32) * 1.0
obs = true_pos + 0.5 * mx.random.normal((20,))
xk, Pk = mx.zeros(2), mx.eye(2)
for t in range(20):
    xk = F @ xk
    Pk = F @ Pk @ F.T + Q
    S = H @ Pk @ H.T + R
    K = Pk @ H.T @ mx.linalg.inv(S, stream=mx.cpu)
    xk = xk + (K @ (obs[t:t + 1] - H @ xk))
    Pk = (mx.eye(2) - K @ H) @ Pk
print("kalman", " ".join(f"{v:.4f}" for v in xk.tolist()), f"{mx.trace(Pk).item():.5f}")
