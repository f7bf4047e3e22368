"""Spectral methods as scientific code writes them: PCA from the SVD of centered data (components
printed as they come, signs included), the covariance eigendecomposition, a graph Laplacian's
Fiedler vector for spectral clustering, polynomial roots from a companion matrix's eigvals, and
a Rayleigh-quotient check against power iteration."""
import mlx.core as mx

cpu = mx.cpu


def fmt(x, d=4):
    return " ".join(f"{v:.{d}f}" for v in x.flatten().tolist())


mx.random.seed(42)
n, d = 60, 4
latent = mx.random.normal((n, 2))
mixing = mx.array([[2.0, 0.5, 0.0, -1.0], [0.0, 1.0, 1.5, 0.5]])
X = latent @ mixing + 0.1 * mx.random.normal((n, d))
Xc = X - X.mean(axis=0)
U, S, Vt = mx.linalg.svd(Xc, stream=cpu)
print("singular", fmt(S))
print("explained", fmt(S**2 / (S**2).sum()))
print("components")
print(fmt(Vt[:2], 3))
scores = Xc @ Vt[:2].T
print("scores", scores.shape, fmt(scores[:3], 3))
print("U head", fmt(U[:3, :2], 3))

cov = Xc.T @ Xc / (n - 1)
w, V = mx.linalg.eigh(cov, stream=cpu)
print("cov eig", fmt(w))
print("cov vecs")
print(fmt(V[:, -2:], 3))
print("agree", mx.allclose(mx.abs(V[:, ::-1][:, :2].T), mx.abs(Vt[:2]), atol=1e-3).item())

# spectral clustering on two noisy blobs
pts = mx.concatenate([mx.random.normal((6, 2)) * 0.5 + 1, mx.random.normal((6, 2)) * 0.5 - 1])
d2 = ((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)
Wg = mx.exp(-d2 / 4.0) * (1 - mx.eye(12))
L = mx.diag(Wg.sum(1)) - Wg
lw, lv = mx.linalg.eigh(L, stream=cpu)
print("laplacian", fmt(lw[:3]))
fiedler = lv[:, 1]
print("fiedler", fmt(fiedler, 3))
print("clusters", (fiedler > 0).astype(mx.int32).tolist())

# polynomial roots: x^3 - 6x^2 + 11x - 6 = (x-1)(x-2)(x-3)
coeffs = [1.0, -6.0, 11.0, -6.0]
comp = mx.zeros((3, 3))
comp[0] = -mx.array(coeffs[1:])
comp[1, 0] = 1.0
comp[2, 1] = 1.0
roots = mx.linalg.eigvals(comp, stream=cpu)
print("roots", " ".join(f"{z.real:.4f}{z.imag:+.4f}j" for z in roots.tolist()))
rot = mx.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
vals, vecs = mx.linalg.eig(rot, stream=cpu)
print("rot eig", " ".join(f"{z.real:.4f}{z.imag:+.4f}j" for z in vals.tolist()))
print("rot vec norms", fmt(mx.abs(vecs)))

# power iteration vs eigh
A = cov
v = mx.ones((d,)) / 2
for _ in range(50):
    v = A @ v
    v = v / mx.linalg.norm(v)
print("power", f"{(v @ A @ v).item():.4f}", f"{w[-1].item():.4f}", f"{mx.abs(mx.abs(v) - mx.abs(V[:, -1])).max().item() < 1e-3}")
