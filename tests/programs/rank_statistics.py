import mlx.core as mx

mx.random.seed(21)
x = mx.random.normal((1001,))
xs = mx.sort(x)
print("sorted", bool(mx.all(xs[1:] >= xs[:-1]).item()), f"{xs[500].item():.5f}")
print("median", f"{mx.median(x).item():.5f}" if hasattr(mx, "median") else "")
# quantiles via partition
k = 250
part = mx.partition(x, kth=k)
print("q25", f"{part[k].item():.5f}", bool(mx.all(part[:k] <= part[k]).item()), bool(mx.all(part[k + 1:] >= part[k]).item()))
ap = mx.argpartition(x, kth=750)
print("q75", f"{x[ap[750]].item():.5f}", ap.dtype)
# linear-interpolated quantiles from the sorted array


def quantile(v, q):
    s = mx.sort(v)
    pos = q * (v.shape[0] - 1)
    lo = mx.floor(pos).astype(mx.int32)
    hi = mx.minimum(lo + 1, v.shape[0] - 1)
    frac = pos - lo
    return s[lo] * (1 - frac) + s[hi] * frac


qs = quantile(x, mx.array([0.05, 0.5, 0.95]))
print("quantiles", " ".join(f"{v:.4f}" for v in qs.tolist()))

# ranks (argsort of argsort) and Spearman correlation
a = mx.random.normal((200,))
b = a + 0.5 * mx.random.normal((200,))
ra = mx.argsort(mx.argsort(a)).astype(mx.float32)
rb = mx.argsort(mx.argsort(b)).astype(mx.float32)
spear = 1 - 6 * ((ra - rb) ** 2).sum() / (200 * (200 ** 2 - 1))
print("spearman", f"{spear.item():.5f}")
pear = ((a - a.mean()) * (b - b.mean())).mean() / (a.std() * b.std())
print("pearson", f"{pear.item():.5f}")

# top-k and descending sort
scores = mx.random.uniform(shape=(4, 20))
top = mx.topk(scores, 3, axis=-1)
print("topk", top.shape, " ".join(f"{v:.4f}" for v in mx.sort(top, axis=-1)[:, -1].tolist()))
desc = mx.argsort(-scores, axis=-1)[:, :3]
print("top idx", desc.tolist()[0], bool(mx.allclose(mx.take_along_axis(scores, desc, axis=-1).min(-1), top.min(-1)).item()))

# histogram via scatter add and via one-hot counting
vals = mx.random.normal((5000,))
edges = mx.linspace(-3, 3, 13)
bins = mx.clip(mx.floor((vals + 3) / 0.5).astype(mx.int32), 0, 11)
hist = mx.zeros((12,), dtype=mx.int32).at[bins].add(1)
print("hist", hist.tolist(), hist.sum().item())
hist2 = (bins[:, None] == mx.arange(12)[None, :]).sum(0)
print("hist agree", mx.array_equal(hist, hist2).item(), hist2.dtype)
# weighted histogram with float weights
wts = mx.abs(vals)
wh = mx.zeros((12,)).at[bins].add(wts)
print("weighted", f"{wh.sum().item():.3f}", f"{wts.sum().item():.3f}")
# searchsorted-style bucketing: count edges <= value
bucket = (vals[:, None] >= edges[None, 1:-1]).sum(1)
print("bucket agree", mx.array_equal(bucket.astype(mx.int32), bins).item())

# unique-like: sorted integer values, mask of first occurrences, counts
ints = mx.random.randint(0, 8, (60,))
si = mx.sort(ints)
first = mx.concatenate([mx.array([True]), si[1:] != si[:-1]])
uniq = [v for v, f in zip(si.tolist(), first.tolist()) if f]
print("unique", uniq, first.sum().item())
cnt = mx.zeros((8,), dtype=mx.int32).at[ints].add(mx.ones_like(ints))
print("counts", cnt.tolist())
# scatter max / min per group
gid = mx.random.randint(0, 5, (100,))
gv = mx.random.normal((100,))
gmax = mx.full((5,), -mx.inf).at[gid].maximum(gv)
gmin = mx.full((5,), mx.inf).at[gid].minimum(gv)
gsum = mx.zeros((5,)).at[gid].add(gv)
print("group", " ".join(f"{v:.4f}" for v in gmax.tolist()), " ".join(f"{v:.4f}" for v in gmin.tolist()), f"{gsum.sum().item():.4f}")
gprod = mx.ones((5,)).at[gid].multiply(mx.abs(gv) + 0.5)
print("group prod", f"{mx.log(gprod).sum().item():.4f}")

# cumulative statistics
c = mx.random.uniform(shape=(3, 8))
cs = mx.cumsum(c, axis=1)
print("cumsum", f"{cs[:, -1].sum().item():.5f}", f"{mx.cumsum(c, axis=1, reverse=True)[:, 0].sum().item():.5f}")
ex = mx.cumsum(c, axis=1, inclusive=False)
print("exclusive", f"{ex[:, 0].sum().item():.1f}", f"{ex[:, -1].sum().item():.5f}")
rx = mx.cumsum(c, axis=1, reverse=True, inclusive=False)
print("rev exclusive", f"{rx[:, -1].sum().item():.1f}", f"{rx[:, 0].sum().item():.5f}")
cp = mx.cumprod(c + 0.5, axis=0)
print("cumprod", f"{cp[-1].sum().item():.5f}", f"{mx.cumprod(c + 0.5, axis=0, reverse=True)[0].sum().item():.5f}")
cm = mx.cummax(mx.random.normal((20,)))
print("cummax", bool(mx.all(cm[1:] >= cm[:-1]).item()), f"{cm[-1].item():.5f}")
cn = mx.cummin(x[:50], reverse=True)
print("cummin rev", f"{cn[0].item():.5f}", f"{cn[-1].item():.5f}")
lc = mx.logcumsumexp(c, axis=1)
print("logcumsumexp", f"{lc[:, -1].sum().item():.5f}", f"{mx.logsumexp(c, axis=1).sum().item():.5f}")
lr = mx.logcumsumexp(c, axis=1, reverse=True, inclusive=False)
print("logcumsumexp rev excl", lr[:, -1].tolist()[0], f"{lr[:, 0].sum().item():.5f}")
ci = mx.cumsum(mx.arange(10, dtype=mx.int32))
print("int cumsum", ci.dtype, ci.tolist())
cb = mx.cumsum(mx.array([True, False, True, True]))
print("bool cumsum", cb.dtype, cb.tolist())
# running mean and moving average via cumsum
run = mx.cumsum(x[:100]) / mx.arange(1, 101)
csx = mx.concatenate([mx.zeros(1), mx.cumsum(x[:100])])
ma = (csx[5:] - csx[:-5]) / 5
print("running", f"{run[-1].item():.5f}", ma.shape, f"{ma.mean().item():.5f}")
