import math

import mlx.core as mx

mx.random.seed(11)

# pi by rejection sampling
pts = mx.random.uniform(shape=(20000, 2))
inside = (pts ** 2).sum(1) <= 1.0
print("pi", f"{4 * inside.mean().item():.4f}", inside.dtype)

# moments of several distributions, each with its own key
keys = mx.random.split(mx.random.key(7), 8)
z = mx.random.normal((10000,), key=keys[0])
print("normal", f"{z.mean().item():.4f}", f"{z.std().item():.4f}")
zl = mx.random.normal((4000,), loc=2.0, scale=0.5, key=keys[1], dtype=mx.float16)
print("normal f16", zl.dtype, f"{zl.astype(mx.float32).mean().item():.3f}")
lap = mx.random.laplace((10000,), loc=1.0, scale=2.0, key=keys[2])
print("laplace", f"{lap.mean().item():.4f}", f"{mx.abs(lap - 1.0).mean().item():.4f}")
gum = mx.random.gumbel((10000,), key=keys[3])
print("gumbel", f"{gum.mean().item():.4f}", "euler", f"{0.5772:.4f}")
tn = mx.random.truncated_normal(-1.0, 2.0, (10000,), key=keys[4])
print("truncnorm", f"{tn.min().item():.4f}", f"{tn.max().item():.4f}", f"{tn.mean().item():.4f}")
b = mx.random.bernoulli(0.3, (5000,), key=keys[5])
print("bernoulli", b.dtype, b.sum().item())
bp = mx.random.bernoulli(mx.array([0.1, 0.5, 0.9]), (2000, 3), key=keys[6])
print("bernoulli p", " ".join(f"{v:.4f}" for v in bp.mean(0).tolist()))
ri = mx.random.randint(-5, 5, (3000,), key=keys[7])
print("randint", ri.dtype, ri.min().item(), ri.max().item(), ri.sum().item())
ri8 = mx.random.randint(0, 100, (6,), dtype=mx.uint8)
print("randint u8", ri8.dtype, ri8.shape)

# categorical: empirical frequencies via bincount-style scatter add
logits = mx.log(mx.array([0.1, 0.2, 0.3, 0.4]))
samples = mx.random.categorical(logits, shape=(8000,))
counts = mx.zeros((4,), dtype=mx.int32).at[samples].add(1)
print("categorical", samples.dtype, counts.tolist())
batched = mx.random.categorical(mx.array([[0.0, 5.0, 0.0], [5.0, 0.0, 0.0]]), num_samples=50)
print("categorical batched", batched.shape, (batched == mx.array([[1], [0]])).mean().item() > 0.9)

# multivariate normal and its sample covariance
mean = mx.array([1.0, -1.0])
cov = mx.array([[1.0, 0.8], [0.8, 2.0]])
mvn = mx.random.multivariate_normal(mean, cov, (6000,), stream=mx.cpu)
c = mvn - mvn.mean(0)
emp = c.T @ c / 5999
print("mvn", mvn.shape, " ".join(f"{v:.3f}" for v in emp.flatten().tolist()))

# permutations
perm = mx.random.permutation(10)
print("perm", perm.dtype, sorted(perm.tolist()) == list(range(10)))
rows = mx.random.permutation(mx.arange(12).reshape(4, 3), axis=0)
print("perm rows", rows.shape, rows.sum().item(), sorted(rows[:, 0].tolist()))

# importance sampling estimate of E[x^2] under N(0,1) using a wider proposal
q = 2.0 * mx.random.normal((20000,))
logw = -0.5 * q ** 2 - (-0.5 * (q / 2.0) ** 2 - math.log(2.0))
w = mx.exp(logw)
print("importance", f"{(w * q ** 2).sum().item() / w.sum().item():.3f}", f"{w.mean().item():.4f}")

# Gumbel-max trick agrees with categorical in distribution
g = mx.random.gumbel((6000, 4))
gm = mx.argmax(logits + g, axis=1)
gcounts = mx.zeros((4,), dtype=mx.int32).at[gm].add(1)
print("gumbel-max", gcounts.tolist())

# bootstrap confidence interval of the mean
data = mx.random.uniform(0, 10, (200,))
idx = mx.random.randint(0, 200, (500, 200))
boot = data[idx].mean(axis=1)
sb = mx.sort(boot)
print("bootstrap", f"{data.mean().item():.4f}", f"{sb[12].item():.4f}", f"{sb[487].item():.4f}")
# state round trip: same seed same numbers
mx.random.seed(123)
a = mx.random.uniform(shape=(3,))
mx.random.seed(123)
print("reseed", mx.array_equal(a, mx.random.uniform(shape=(3,))).item())
