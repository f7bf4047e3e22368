import math

import mlx.core as mx

mx.random.seed(8)

# inverse-CDF sampling from a tabulated density with searchsorted
grid = mx.linspace(-4, 4, 201)
pdf = mx.exp(-0.5 * (grid - 1.0) ** 2) + 0.5 * mx.exp(-2.0 * (grid + 2.0) ** 2)
cdf = mx.cumsum(pdf)
cdf = cdf / cdf[-1]
u = mx.random.uniform(shape=(5000,))
idx = mx.searchsorted(cdf, u)
print("searchsorted", idx.dtype, idx.shape, idx.min().item(), idx.max().item())
samples = grid[mx.minimum(idx, 200)]
print("inverse cdf", f"{samples.mean().item():.4f}", f"{samples.std().item():.4f}")
right = mx.searchsorted(cdf, u, side="right")
print("sides differ", (right != idx).sum().item())

# empirical CDF and the Kolmogorov-Smirnov statistic against N(0,1)
x = mx.sort(mx.random.normal((400,)))
ecdf_hi = mx.arange(1, 401) / 400
ecdf_lo = mx.arange(0, 400) / 400
ncdf = 0.5 * (1 + mx.erf(x / math.sqrt(2)))
ks = mx.maximum(mx.abs(ecdf_hi - ncdf).max(), mx.abs(ncdf - ecdf_lo).max())
print("ks", f"{ks.item():.5f}")
# ECDF evaluated at arbitrary points via searchsorted(side='right')
pts = mx.array([-1.0, 0.0, 1.0, 2.0])
print("ecdf", (mx.searchsorted(x, pts, side="right").astype(mx.float32) / 400).tolist())
# percentile ranks of a second sample
y = mx.random.normal((10,)) + 0.5
print("ranks", mx.searchsorted(x, y).tolist())

# random-walk Metropolis on a banana-shaped density, with an explicit key chain


def logp(z):
    return -0.5 * (z[..., 0] ** 2 / 4 + (z[..., 1] - 0.5 * z[..., 0] ** 2 + 1) ** 2)


key = mx.random.key(0)
chains = mx.zeros((16, 2))
lp = logp(chains)
accepted = mx.zeros((16,))
trace = []
for step in range(60):
    key, k1, k2 = mx.random.split(key, 3)
    prop = chains + 0.8 * mx.random.normal((16, 2), key=k1)
    lp_prop = logp(prop)
    acc = mx.log(mx.random.uniform(shape=(16,), key=k2)) < lp_prop - lp
    chains = mx.where(acc[:, None], prop, chains)
    lp = mx.where(acc, lp_prop, lp)
    accepted = accepted + acc
    trace.append(chains)
tr = mx.stack(trace[20:])
print("metropolis", tr.shape, f"{(accepted / 60).mean().item():.4f}", f"{tr[..., 0].mean().item():.4f}", f"{tr[..., 1].mean().item():.4f}")

# Langevin dynamics (MALA without correction) driven by mx.grad
grad_logp = mx.grad(lambda z: logp(z).sum())
z = mx.zeros((32, 2))
eps = 0.05
for step in range(40):
    z = z + eps * grad_logp(z) + math.sqrt(2 * eps) * mx.random.normal(z.shape)
print("langevin", f"{z[:, 0].var().item():.4f}", f"{z[:, 1].mean().item():.4f}")

# Gibbs sampling for a bivariate normal with correlation rho
rho = 0.7
g = mx.zeros((64, 2))
for step in range(30):
    g0 = rho * g[:, 1] + math.sqrt(1 - rho ** 2) * mx.random.normal((64,))
    g1 = rho * g0 + math.sqrt(1 - rho ** 2) * mx.random.normal((64,))
    g = mx.stack([g0, g1], axis=1)
c = g - g.mean(0)
print("gibbs corr", f"{((c[:, 0] * c[:, 1]).mean() / (c[:, 0].std() * c[:, 1].std())).item():.4f}")

# reservoir-free weighted sampling without replacement: Gumbel top-k
logits = mx.log(mx.array([0.05, 0.1, 0.15, 0.2, 0.5]))
hits = mx.zeros((5,), dtype=mx.int32)
for t in range(200):
    sel = mx.argsort(logits + mx.random.gumbel((5,)))[-2:]
    hits = hits.at[sel].add(1)
print("gumbel top-2", hits.tolist(), hits.sum().item())
# stratified sampling with a random permutation per stratum
strata = mx.stack([mx.random.permutation(10) for _ in range(3)])
print("strata", strata.shape, strata.sum(1).tolist())
# antithetic variates for E[exp(U)]
uu = mx.random.uniform(shape=(2000,))
plain = mx.exp(uu).mean()
anti = (0.5 * (mx.exp(uu) + mx.exp(1 - uu))).mean()
print("antithetic", f"{plain.item():.4f}", f"{anti.item():.5f}", f"{math.e - 1:.5f}")
