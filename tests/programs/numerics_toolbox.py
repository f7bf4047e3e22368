"""Data-processing numerics as users write them with mlx.core alone: sliding windows through
as_strided, running statistics with cumulative scans (reverse / exclusive), robust statistics
(median, ddof variance, count_nonzero), tensordot / kron / einsum contractions, dynamic slices,
along-axis gathers and scatters, padding, rolling, triangular masks, grids and ranges."""
import mlx.core as mx

mx.random.seed(7)

# --- a noisy signal, its sliding windows and running statistics ---------------------------
t = mx.linspace(0, 4, 41)
signal = mx.sin(2 * t) + 0.1 * mx.random.normal((41,))
win = mx.as_strided(signal, (37, 5), (1, 1))  # length-5 windows, stride 1
print("windows", win.shape, f"{win[3].sum().item():.4f}", f"{win.mean(axis=1)[:4].tolist()[0]:.4f}")
print("rolling max", mx.round(win.max(axis=1)[:6], 3).tolist())
cs = mx.cumsum(signal)
excl = mx.cumsum(signal, inclusive=False)
print("cumsum", f"{cs[-1].item():.4f}", f"{excl[0].item():.1f}", mx.allclose(cs - excl, signal, atol=1e-5).item())
rev = mx.cumsum(signal, reverse=True)
print("suffix sums", mx.round(rev[:3], 3).tolist(), f"{rev[0].item() - cs[-1].item():.3f}")
print("running max/min", mx.round(mx.cummax(signal)[::8], 3).tolist(), mx.round(mx.cummin(signal, reverse=True)[::8], 3).tolist())
print("logcumsumexp", mx.round(mx.logcumsumexp(signal[:6]), 4).tolist())
print("logcumsumexp rev excl", mx.round(mx.logcumsumexp(signal[:5], reverse=True, inclusive=False), 4).tolist())
growth = mx.array([1.01, 0.98, 1.05, 1.02, 0.97])
print("compound", mx.round(mx.cumprod(growth), 4).tolist(), mx.round(mx.cumprod(growth, inclusive=False, reverse=True), 4).tolist())

# --- robust statistics --------------------------------------------------------------------
data = mx.random.uniform(-1, 1, (6, 8))
data = mx.where(data > 0.8, mx.array(float("nan")), data)
clean = mx.nan_to_num(data, nan=0.0)
print("nan count", mx.isnan(data).sum().item(), mx.count_nonzero(clean, axis=0).tolist())
print("var ddof", mx.round(mx.var(clean, axis=1, ddof=1), 4).tolist())
print("std ddof", f"{mx.std(clean, ddof=2).item():.4f}", f"{clean.std(axis=0, keepdims=True).shape}")
print("median", f"{mx.median(clean).item():.4f}", mx.round(mx.median(clean, axis=0), 4).tolist())
print("diff", mx.round(mx.diff(clean[0]), 4).tolist()[:4], mx.diff(clean, n=2, axis=0).shape)
print("isclose", mx.isclose(data, data).sum().item(), mx.isclose(data, data, equal_nan=True).sum().item())
print("allclose", mx.allclose(data, data).item(), mx.allclose(data, data, equal_nan=True).item(), mx.allclose(clean, clean + 1e-6, atol=1e-5).item())
print("clip arrays", mx.round(mx.clip(clean[:2], mx.array(-0.5), mx.full((8,), 0.25)), 3).tolist()[0][:4])
q, r = mx.divmod(mx.arange(-5, 6), 3)
print("divmod", q.tolist(), r.tolist())
print("logaddexp", mx.round(mx.logaddexp(mx.array([0.0, -50.0, 30.0]), mx.array([0.0, -49.0, -30.0])), 4).tolist())
print("round", mx.round(mx.array([3.14159, -2.71828, 1234.5678]), 2).tolist(), mx.round(mx.array([1234.5678, 150.0]), -2).tolist())

# --- contractions -------------------------------------------------------------------------
A = mx.random.normal((3, 4, 5))
B = mx.random.normal((4, 5, 2))
td = mx.tensordot(A, B, axes=2)
td2 = mx.tensordot(A, B, axes=([1, 2], [0, 1]))
es = mx.einsum("ijk,jkl->il", A, B)
print("tensordot", td.shape, mx.allclose(td, td2).item(), mx.allclose(td, es, atol=1e-4).item(), f"{td.sum().item():.3f}")
print("tensordot outer", mx.tensordot(mx.arange(3.0), mx.arange(2.0), axes=0).tolist())
K = mx.kron(mx.eye(2), mx.array([[1.0, 2.0], [3.0, 4.0]]))
print("kron", K.shape, K.sum().item(), K[2:, 2:].tolist())
M = mx.random.normal((4, 4))
print("einsum trace/diag", f"{mx.einsum('ii', M).item():.4f}", f"{mx.trace(M).item():.4f}", mx.round(mx.einsum("ii->i", M), 3).tolist())
batch = mx.random.normal((2, 3, 4, 4))
print("einsum ellipsis", mx.einsum("...ij,...jk->...ik", batch, batch).shape, mx.einsum("...ii->...", batch).shape, f"{mx.einsum('...ii->...', batch).sum().item():.3f}")
print("einsum implicit", mx.einsum("ij,jk", M, M).shape, f"{mx.einsum('i,i', M[0], M[1]).item():.4f}")

# --- gathers, scatters and dynamic slices ------------------------------------------------
scores = mx.random.normal((5, 6))
order = mx.argsort(scores, axis=1)
print("take_along", mx.round(mx.take_along_axis(scores, order[:, :2], axis=1), 3).tolist()[0])
best = mx.argmax(scores, axis=1, keepdims=True)
onehot = mx.put_along_axis(mx.zeros_like(scores), best, mx.array(1.0), axis=1)
print("put_along", onehot.sum(axis=1).tolist(), mx.argmax(onehot, axis=1).tolist() == best.squeeze(1).tolist())
print("put_along flat", mx.put_along_axis(mx.zeros((6,), mx.int32), mx.array([1, 4]), mx.array([7, 9]), axis=None).tolist())
start = mx.array([1, 2])
print("slice", mx.round(mx.slice(scores, start, (0, 1), (2, 3)), 3).tolist())
upd = mx.slice_update(mx.zeros((4, 5)), mx.ones((2, 2)), start, (0, 1))
print("slice_update", upd.sum(axis=0).tolist(), mx.slice_update(mx.arange(6), mx.array([-1, -2]), mx.array([3]), [0]).tolist())
print("where bcast", mx.where(mx.arange(4) % 2 == 0, mx.arange(3)[:, None], -1).tolist())

# --- shaping the grid ---------------------------------------------------------------------
img = mx.arange(12).reshape(3, 4)
print("pad", mx.pad(img, 1).shape, mx.pad(img, ((0, 1), (2, 0)), constant_values=-1)[0].tolist(), mx.pad(img, 1, mode="edge")[0].tolist())
print("roll", mx.roll(img, (1, -1), axis=(0, 1))[0].tolist(), mx.roll(img, 2).reshape(-1)[:4].tolist())
print("tri", mx.tri(3, 4, k=1).tolist(), mx.tril(img, k=-1).tolist(), mx.triu(img, 1).sum().item())
X, Y = mx.meshgrid(mx.arange(3), mx.arange(2))
I, J = mx.meshgrid(mx.arange(3), mx.arange(2), indexing="ij")
print("meshgrid", X.shape, X.tolist(), Y.tolist(), I.shape, J.tolist())
print("linspace", mx.linspace(-1, 1, 5).tolist(), mx.linspace(3, 3, 1).tolist(), mx.linspace(0, 10, 4, dtype=mx.int32).tolist())
print("arange", mx.arange(0, 1, 0.25).tolist(), mx.arange(5, 0, -2).tolist(), mx.arange(3, 1).shape, mx.arange(2.5).tolist(), mx.arange(4, dtype=mx.float16).dtype)
print("repeat/tile", mx.repeat(mx.array([1, 2]), 3).tolist(), mx.repeat(img[:2, :2], 2, axis=1).tolist(), mx.tile(mx.array([1, 2]), (2, 2)).tolist())
