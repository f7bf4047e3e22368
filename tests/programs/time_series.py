import math

import mlx.core as mx

mx.random.seed(23)

# simulate an AR(2) process with a Python loop over time
T = 400
phi = mx.array([0.6, -0.3])
eps = mx.random.normal((T,))
vals = [mx.array(0.0), mx.array(0.0)]
for t in range(2, T):
    vals.append(phi[0] * vals[-1] + phi[1] * vals[-2] + eps[t])
x = mx.stack(vals)
print("series", x.shape, f"{x.mean().item():.4f}", f"{x.std().item():.4f}")

# the same recursion vectorised across 8 independent series
E = mx.random.normal((8, T))
X = mx.zeros((8, 2))
cols = []
prev1, prev2 = mx.zeros(8), mx.zeros(8)
for t in range(T):
    cur = 0.6 * prev1 - 0.3 * prev2 + E[:, t]
    cols.append(cur)
    prev2, prev1 = prev1, cur
Xs = mx.stack(cols, axis=1)
print("batch", Xs.shape, f"{Xs.var(axis=1).mean().item():.4f}")

# autocorrelation via FFT (zero padded) and Yule-Walker estimates
def acf(v, nlags):
    v = v - v.mean()
    n = v.shape[-1]
    F = mx.fft.rfft(v, n=2 * n)
    r = mx.fft.irfft(F * mx.conj(F), n=2 * n)[..., :nlags + 1]
    return r / r[..., :1]


r = acf(x, 5)
print("acf", " ".join(f"{v:.4f}" for v in r.tolist()))
R = mx.array([[1.0, r[1].item()], [r[1].item(), 1.0]])
phi_hat = mx.linalg.solve(R, r[1:3], stream=mx.cpu)
print("yule-walker", " ".join(f"{v:.4f}" for v in phi_hat.tolist()))
rb = acf(Xs, 3)
print("batch acf", rb.shape, f"{rb[:, 1].mean().item():.4f}")

# least-squares AR fit with a lagged design matrix
D = mx.stack([x[1:-1], x[:-2]], axis=1)
yy = x[2:]
coef = mx.linalg.solve(D.T @ D, D.T @ yy, stream=mx.cpu)
res = yy - D @ coef
print("ols", " ".join(f"{v:.4f}" for v in coef.tolist()), f"{res.std().item():.4f}")

# one-step forecasts and a rolling-origin error
pred = D @ coef
print("rmse", f"{mx.sqrt(mx.mean((pred - yy) ** 2)).item():.4f}")

# exponential smoothing as a loop and as a convolution with decaying weights
alpha = 0.3
s = [x[0]]
for t in range(1, 60):
    s.append(alpha * x[t] + (1 - alpha) * s[-1])
s = mx.stack(s)
w = alpha * (1 - alpha) ** mx.arange(60)
conv = mx.convolve(x[:60], w)[:60] + (1 - alpha) ** (mx.arange(60) + 1) * x[0]
print("smoothing", f"{s[-1].item():.5f}", f"{mx.abs(conv - s).max().item() < 1e-4}")

# moving average and detrending with a fitted line
trend = x + 0.01 * mx.arange(T)
ma = mx.convolve(trend, mx.ones(9) / 9, mode="valid")
tt = mx.arange(T).astype(mx.float32)
A = mx.stack([mx.ones(T), tt], axis=1)
beta = mx.linalg.pinv(A, stream=mx.cpu) @ trend
print("detrend", ma.shape, f"{beta[1].item():.5f}", f"{abs((trend - A @ beta).mean().item()) < 1e-3}")

# periodogram peak of a noisy sinusoid
n = 256
tt = mx.arange(n)
sig = mx.sin(2 * math.pi * 12 * tt / n) + 0.5 * mx.random.normal((n,))
P = mx.abs(mx.fft.rfft(sig)) ** 2 / n
print("periodogram", P.shape, mx.argmax(P[1:]).item() + 1, f"{P.max().item():.3f}")
# Welch-style averaging over strided segments
segs = mx.as_strided(sig, shape=(7, 64), strides=(32, 1))
hann = 0.5 - 0.5 * mx.cos(2 * math.pi * mx.arange(64) / 64)
Pw = (mx.abs(mx.fft.rfft(segs * hann, axis=-1)) ** 2).mean(0)
print("welch", Pw.shape, mx.argmax(Pw).item(), f"{(Pw.sum() / Pw.max()).item():.3f}")
# cumulative max drawdown of a random walk
walk = mx.cumsum(mx.random.normal((500,)) * 0.01)
peak = mx.cummax(walk)
dd = (peak - walk).max()
print("drawdown", f"{dd.item():.4f}", f"{walk[-1].item():.4f}", mx.argmax(peak == peak[-1]).item())
