"""A tabular data-processing pipeline in mlx.core, as an analyst writes it: synthetic sales
records, missing values, group-by through scatter-add and one-hot matmuls, histograms,
quantiles through sort, z-scores with ddof, winsorising with clip, rolling windows, ranking,
lag features with roll/pad, and a ridge fit through the normal equations."""
import numpy as np

import mlx.core as mx

mx.random.seed(11)
N, G = 240, 6
group = mx.random.randint(0, G, (N,))
price = mx.random.uniform(5.0, 50.0, (N,))
qty = mx.random.randint(1, 20, (N,)).astype(mx.float32)
noise = 0.5 * mx.random.normal((N,))
revenue = price * qty + noise
missing = mx.random.bernoulli(0.05, (N,))
revenue_obs = mx.where(missing, mx.array(float("nan")), revenue)
print("rows", N, "missing", missing.sum().item(), "dtype", revenue_obs.dtype, group.dtype)

# --- clean --------------------------------------------------------------------------------
filled = mx.nan_to_num(revenue_obs, nan=0.0)
valid = mx.logical_not(mx.isnan(revenue_obs))
print("valid", valid.sum().item(), "nonzero", mx.count_nonzero(filled).item())

# --- group-by: counts, sums, means through scatter-add and one-hot matmul ----------------
counts = mx.zeros((G,), mx.int32).at[group].add(1)
sums = mx.zeros((G,)).at[group].add(filled)
onehot = (group[:, None] == mx.arange(G)[None, :]).astype(mx.float32)
sums2 = filled @ onehot
valid_counts = valid.astype(mx.float32) @ onehot
means = sums / mx.maximum(valid_counts, 1)
print("counts", counts.tolist(), counts.sum().item())
print("group sums agree", mx.allclose(sums, sums2, rtol=1e-4).item())
print("group means", [f"{v:.2f}" for v in means.tolist()])
gmax = mx.full((G,), -float("inf")).at[group].maximum(filled)
gmin = mx.full((G,), float("inf")).at[group].minimum(mx.where(valid, filled, float("inf")))
print("group max/min", [f"{v:.1f}" for v in gmax.tolist()], [f"{v:.1f}" for v in gmin.tolist()])

# --- histogram and quantiles ------------------------------------------------------------
edges = mx.linspace(0, 1000, 11)
bins = mx.clip((filled / 100).astype(mx.int32), 0, 9)
hist = mx.zeros((10,), mx.int32).at[bins].add(1)
print("edges", edges[:4].tolist(), "hist", hist.tolist(), hist.sum().item())
srt = mx.sort(mx.where(valid, filled, float("inf")))
nv = valid.sum().item()
q = mx.array([0.1, 0.5, 0.9])
pos = q * (nv - 1)
lo = mx.floor(pos).astype(mx.int32)
hi = mx.minimum(lo + 1, nv - 1)
frac = pos - lo.astype(mx.float32)
quant = srt[lo] * (1 - frac) + srt[hi] * frac
print("quantiles", [f"{v:.2f}" for v in quant.tolist()], f"median={mx.median(srt[:nv]).item():.2f}")

# --- z-scores, winsorising, ranks ---------------------------------------------------------
clean = srt[:nv]
mu, sd = clean.mean(), clean.std(ddof=1)
z = (clean - mu) / sd
print("mean/std", f"{mu.item():.3f}", f"{sd.item():.3f}", f"{mx.var(clean, ddof=0).item():.1f}", f"z range {z.min().item():.3f} {z.max().item():.3f}")
wins = mx.clip(filled, quant[0], quant[2])
print("winsorised", f"{wins.min().item():.2f}", f"{wins.max().item():.2f}", f"{wins.mean().item():.3f}")
ranks = mx.argsort(mx.argsort(price))
print("ranks", ranks[:8].tolist(), ranks.max().item(), (mx.sort(ranks) == mx.arange(N)).all().item())
top = mx.topk(price, 3)
print("top prices", [f"{v:.3f}" for v in mx.sort(top).tolist()])

# --- time features: cumulative, rolling and lagged ---------------------------------------
daily = filled[:60].reshape(12, 5).sum(axis=1)
print("daily", [f"{v:.1f}" for v in daily.tolist()[:4]])
print("cum", f"{mx.cumsum(daily)[-1].item():.1f}", "running max", [f"{v:.1f}" for v in mx.cummax(daily).tolist()[-3:]])
win = mx.as_strided(daily, (10, 3), (1, 1))
print("rolling mean", [f"{v:.2f}" for v in win.mean(axis=1).tolist()[:4]])
cs = mx.cumsum(mx.pad(daily, (1, 0)))
print("rolling via cumsum", mx.allclose((cs[3:] - cs[:-3]) / 3, win.mean(axis=1), rtol=1e-4).item())
lag1 = mx.roll(daily, 1)
lag1 = mx.concatenate([mx.array([float("nan")]), lag1[1:]])
growth = mx.diff(daily) / daily[:-1]
print("lag", mx.isnan(lag1).sum().item(), "growth", [f"{v:.3f}" for v in growth.tolist()[:4]])
print("reverse cummin", [f"{v:.1f}" for v in mx.cummin(daily, reverse=True).tolist()[:3]])

# --- a ridge regression fit through the normal equations ----------------------------------
X = mx.stack([mx.ones((N,)), price, qty, price * qty / 100], axis=1)
y = filled
Xv = X * valid[:, None]
A = Xv.T @ Xv + 1e-3 * mx.eye(4)
b = Xv.T @ y
w = mx.linalg.solve(A, b, stream=mx.cpu)
resid = mx.where(valid, y - X @ w, 0.0)
print("ridge interaction weight", f"{w[3].item():.1f}", w.shape)
print("rmse", f"{mx.sqrt((resid ** 2).sum() / nv).item():.2f}")
print("numpy check", np.allclose(np.array(A) @ np.array(w), np.array(b), rtol=1e-3))
