"""Dense linear algebra the way scientific code calls it: norms over every ord/axis combination,
QR of tall/wide/batched matrices, SVD with and without vectors, inverses (general, triangular,
Cholesky), pseudo-inverses, symmetric and general eigenproblems, LU, solves and cross products."""
import mlx.core as mx

cpu = mx.cpu


def fmt(x, d=4):
    return " ".join(f"{v:.{d}f}" for v in mx.array(x).flatten().tolist())


mx.random.seed(3)
A = mx.random.normal((4, 4))
B = mx.random.normal((2, 3, 5))
v = mx.array([3.0, -4.0, 0.0, 1.0])

# vector norms
for o in [None, 0, 1, 2, 3, 0.5, float("inf"), -float("inf")]:
    print("vnorm", o, f"{mx.linalg.norm(v, ord=o).item():.4f}")
print("vnorm keep", mx.linalg.norm(v, keepdims=True).shape, mx.linalg.norm(v, ord=1, axis=0, keepdims=True).shape)
# matrix norms
for o in ["fro", "nuc", 1, -1, 2, -2, float("inf"), -float("inf")]:
    print("mnorm", o, f"{mx.linalg.norm(A, ord=o, stream=cpu).item():.4f}")
print("rows", fmt(mx.linalg.norm(A, axis=1)), "cols", fmt(mx.linalg.norm(A, ord=1, axis=0)))
print("batched fro", fmt(mx.linalg.norm(B, ord="fro", axis=(1, 2))), mx.linalg.norm(B, axis=(0, 2)).shape)
print("batched inf", fmt(mx.linalg.norm(B, ord=float("inf"), axis=(-2, -1))),
      mx.linalg.norm(B, ord=1, axis=(2, 1), keepdims=True).shape)
print("batched 2", fmt(mx.linalg.norm(B, ord=2, axis=(1, 2), stream=cpu)))
print("whole", f"{mx.linalg.norm(B).item():.4f}", mx.linalg.norm(B).shape)
print("int input", mx.linalg.norm(mx.array([3, 4])).dtype, mx.linalg.norm(mx.array([3, 4], dtype=mx.int32), ord=1).item())
print("half", mx.linalg.norm(v.astype(mx.float16)).dtype, mx.linalg.norm(v.astype(mx.bfloat16)).item())

# QR: square, tall, wide, batched
for shape in [(4, 4), (5, 3), (3, 5), (2, 4, 3)]:
    M = mx.random.normal(shape)
    Q, R = mx.linalg.qr(M, stream=cpu)
    recon = mx.abs(Q @ R - M).max().item()
    orth = mx.abs(mx.swapaxes(Q, -1, -2) @ Q - mx.eye(Q.shape[-1])).max().item()
    print("qr", shape, Q.shape, R.shape, Q.dtype, recon < 1e-5, orth < 1e-5, fmt(mx.abs(mx.diagonal(R, axis1=-2, axis2=-1))))

# SVD
for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 4)]:
    M = mx.random.normal(shape)
    U, S, Vt = mx.linalg.svd(M, stream=cpu)
    s_only = mx.linalg.svd(M, compute_uv=False, stream=cpu)
    k = S.shape[-1]
    recon = (U[..., :, :k] * S[..., None, :]) @ Vt[..., :k, :]
    print("svd", shape, U.shape, S.shape, Vt.shape, type(s_only).__name__, s_only.shape,
          mx.abs(recon - M).max().item() < 1e-5, fmt(s_only))

# inverses
inv = mx.linalg.inv(A, stream=cpu)
print("inv", mx.abs(inv @ A - mx.eye(4)).max().item() < 1e-4, fmt(inv[0]))
Ab = mx.random.normal((3, 3, 3)) + 3 * mx.eye(3)
print("inv batched", mx.linalg.inv(Ab, stream=cpu).shape, fmt(mx.linalg.inv(Ab, stream=cpu)[1, 1]))
L = mx.tril(A) + 4 * mx.eye(4)
U_ = mx.triu(A) + 4 * mx.eye(4)
print("tri_inv lower", fmt(mx.linalg.tri_inv(L, stream=cpu)[3]))
print("tri_inv upper", fmt(mx.linalg.tri_inv(U_, upper=True, stream=cpu)[0]))
print("tri_inv upper ignores lower", mx.allclose(mx.linalg.tri_inv(U_ + mx.tril(mx.ones((4, 4)), -1), upper=True, stream=cpu),
                                                mx.linalg.tri_inv(U_, upper=True, stream=cpu)).item())

# Cholesky
S = A @ A.T + 4 * mx.eye(4)
Lc = mx.linalg.cholesky(S, stream=cpu)
Uc = mx.linalg.cholesky(S, upper=True, stream=cpu)
print("chol", fmt(mx.diag(Lc)), mx.allclose(Uc, Lc.T, atol=1e-5).item(), mx.abs(Lc @ Lc.T - S).max().item() < 1e-4)
print("chol zero upper", mx.all(mx.triu(Lc, 1) == 0).item())
Sinv = mx.linalg.cholesky_inv(Lc, stream=cpu)
Sinv_u = mx.linalg.cholesky_inv(Uc, upper=True, stream=cpu)
print("chol_inv", mx.abs(Sinv @ S - mx.eye(4)).max().item() < 1e-4, mx.allclose(Sinv, Sinv_u, atol=1e-5).item(), fmt(Sinv[0]))
Sb = mx.stack([S, 2 * S])
print("chol batched", mx.linalg.cholesky(Sb, stream=cpu).shape, fmt(mx.linalg.cholesky(Sb, stream=cpu)[1, 3]))

# pseudo-inverse
for shape in [(5, 3), (3, 5), (2, 4, 2)]:
    M = mx.random.normal(shape)
    P = mx.linalg.pinv(M, stream=cpu)
    print("pinv", shape, P.shape, mx.abs(M @ P @ M - M).max().item() < 1e-4)
rank_def = mx.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
print("pinv rank1", fmt(mx.linalg.pinv(rank_def, stream=cpu)))

# symmetric eigenproblems
w, V = mx.linalg.eigh(S, stream=cpu)
print("eigh", fmt(w), V.shape, mx.abs(S @ V - V * w).max().item() < 1e-4)
w_up, _ = mx.linalg.eigh(mx.triu(S), UPLO="U", stream=cpu)
w_lo = mx.linalg.eigvalsh(mx.tril(S), stream=cpu)
print("uplo", mx.allclose(w, w_up, atol=1e-4).item(), mx.allclose(w, w_lo, atol=1e-4).item(),
      mx.allclose(mx.linalg.eigvalsh(mx.triu(S), UPLO="U", stream=cpu), w, atol=1e-4).item())
print("eigvalsh batched", mx.linalg.eigvalsh(Sb, stream=cpu).shape, fmt(mx.linalg.eigvalsh(Sb, stream=cpu)[1]))

# general eigenproblems: complex results
R = mx.array([[0.0, -1.0], [1.0, 0.0]])
vals = mx.linalg.eigvals(R, stream=cpu)
print("eigvals rot", vals.dtype, vals.shape, sorted((round(z.real, 4), round(z.imag, 4)) for z in vals.tolist()))
T = mx.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 0.0, 5.0]])
ev, evec = mx.linalg.eig(T, stream=cpu)
print("eig", ev.dtype, evec.dtype, evec.shape, sorted(round(z.real, 4) for z in ev.tolist()))
res = mx.abs(T.astype(mx.complex64) @ evec - evec * ev).max().item()
print("eig residual", res < 1e-4, fmt(mx.abs(evec).sum(axis=0) > 0))

# LU
P, Lf, Uf = mx.linalg.lu(A, stream=cpu)
print("lu", P.shape, P.dtype, Lf.shape, Uf.shape, mx.abs(Lf[P] @ Uf - A).max().item() < 1e-5, fmt(mx.diag(Lf)))
LU, piv = mx.linalg.lu_factor(A, stream=cpu)
print("lu_factor", LU.shape, piv.dtype, piv.tolist(), mx.allclose(mx.triu(LU), Uf).item())
Pb, Lb, Ub = mx.linalg.lu(mx.random.normal((2, 3, 3)), stream=cpu)
print("lu batched", Pb.shape, Lb.shape, Ub.shape)
W = mx.random.normal((4, 3))
Lw = mx.linalg.lu(W, stream=cpu)
print("lu tall", [t.shape for t in Lw])

# solves
b = mx.arange(4, dtype=mx.float32)
x = mx.linalg.solve(A, b, stream=cpu)
print("solve", x.shape, fmt(A @ x - b < 1e-4), fmt(x, 3))
Bm = mx.random.normal((4, 2))
print("solve matrix", mx.linalg.solve(A, Bm, stream=cpu).shape)
print("solve batched", mx.linalg.solve(Ab, mx.ones((3, 3, 1)), stream=cpu).shape, mx.linalg.solve(Ab[0], mx.ones((3, 2)), stream=cpu).shape)
xl = mx.linalg.solve_triangular(L, b, stream=cpu)
xu = mx.linalg.solve_triangular(U_, b, upper=True, stream=cpu)
print("solve_tri", fmt(xl, 4), fmt(xu, 4), mx.linalg.solve_triangular(L, Bm, stream=cpu).shape)

# cross products
a3 = mx.array([1.0, 0.0, 0.0])
b3 = mx.array([0.0, 1.0, 0.0])
print("cross", mx.linalg.cross(a3, b3).tolist(), mx.linalg.cross(b3, a3).tolist())
P1 = mx.random.normal((5, 3))
P2 = mx.random.normal((5, 3))
c = mx.linalg.cross(P1, P2)
print("cross rows", c.shape, mx.abs((c * P1).sum(-1)).max().item() < 1e-5)
print("cross axis0", mx.linalg.cross(P1.T, P2.T, axis=0).shape, mx.allclose(mx.linalg.cross(P1.T, P2.T, axis=0).T, c).item())
print("cross bcast", mx.linalg.cross(mx.ones((2, 1, 3)), mx.array([[1.0, 2.0, 3.0]])).shape)
print("cross int", mx.linalg.cross(mx.array([1, 2, 3]), mx.array([4, 5, 6])).tolist(),
      mx.linalg.cross(mx.array([1, 2, 3]), mx.array([4, 5, 6])).dtype)
