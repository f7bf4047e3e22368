import mlx.core as mx

mx.random.seed(3)

# three Gaussian blobs in 5-D
centers = mx.array([[0.0, 0.0, 0.0, 0.0, 0.0], [4.0, 4.0, 0.0, 0.0, 1.0], [-4.0, 3.0, 2.0, 0.0, -1.0]])
labels = mx.random.randint(0, 3, (300,))
X = centers[labels] + 0.6 * mx.random.normal((300, 5))
print("data", X.shape, X.dtype, labels.dtype, f"{X.mean().item():.5f}")


def kmeans(X, k, iters):
    idx = mx.random.permutation(X.shape[0])[:k]
    C = X[idx]
    for it in range(iters):
        d2 = (X ** 2).sum(1, keepdims=True) - 2 * X @ C.T + (C ** 2).sum(1)
        assign = mx.argmin(d2, axis=1)
        onehot = (assign[:, None] == mx.arange(k)).astype(X.dtype)
        counts = onehot.sum(0)
        C = (onehot.T @ X) / mx.maximum(counts, 1)[:, None]
        inertia = mx.take_along_axis(d2, assign[:, None], axis=1).sum()
    return C, assign, counts, inertia


C, assign, counts, inertia = kmeans(X, 3, 8)
print("kmeans counts", sorted(counts.astype(mx.int32).tolist()), f"inertia {inertia.item():.3f}")
order = mx.argsort(C[:, 0])
print("centroids x0", " ".join(f"{v:.4f}" for v in C[order, 0].tolist()))
# cluster purity against the true labels
conf = mx.zeros((3, 3), dtype=mx.int32)
conf = conf.at[labels, assign].add(1)
print("purity", f"{conf.max(axis=1).sum().item() / 300:.4f}", conf.sum().item(), conf.dtype)

# PCA via SVD of the centred data (linalg runs on the CPU stream)
Xc = X - X.mean(0)
U, S, Vt = mx.linalg.svd(Xc, stream=mx.cpu)
print("svd", U.shape, S.shape, Vt.shape)
var = S ** 2 / (X.shape[0] - 1)
ratio = var / var.sum()
print("explained", " ".join(f"{v:.4f}" for v in ratio.tolist()))
recon = (U[:, :5] * S) @ Vt
print("recon err", f"{mx.abs(recon - Xc).max().item() < 1e-4}")

# the same spectrum from eigh of the covariance
cov = Xc.T @ Xc / (X.shape[0] - 1)
w, V = mx.linalg.eigh(cov, stream=mx.cpu)
print("eigh", w.shape, V.shape, " ".join(f"{v:.4f}" for v in w[::-1].tolist()))
print("eig vs svd", f"{mx.abs(w[::-1] - var).max().item() < 1e-3}")
# project onto two components (sign-fix against the first coordinate)
pcs = V[:, ::-1][:, :2]
sign = mx.sign(pcs[mx.argmax(mx.abs(pcs), axis=0), mx.arange(2)])
Z = Xc @ (pcs * sign)
print("proj", Z.shape, f"{Z.var(axis=0)[0].item():.4f}", f"{Z.var(axis=0)[1].item():.4f}")
print("orth", f"{mx.abs(V.T @ V - mx.eye(5)).max().item() < 1e-5}")
# whitening with the eigen decomposition
W = V / mx.sqrt(w)
Zw = Xc @ W
cw = Zw.T @ Zw / (X.shape[0] - 1)
print("whitened diag", f"{mx.diag(cw).mean().item():.5f}", f"{mx.linalg.norm(cw - mx.eye(5)).item() < 1e-3}")
# norms
print("norms", f"{mx.linalg.norm(Xc, ord='fro').item():.4f}", f"{mx.linalg.norm(Xc, ord=2, axis=1).max().item():.4f}",
      f"{mx.linalg.norm(cov, ord='nuc', stream=mx.cpu).item():.4f}")
