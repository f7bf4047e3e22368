"""Double precision, complex Hermitian and gradient-carrying uses of mx.linalg: float64 through
every factorization on the CPU, complex64 eigh/svd/eigvals/norm, gradients through norms and
cross products, and which factorizations have no derivative (MLX raises for them)."""
import mlx.core as mx

cpu = mx.cpu
def fmt(x, d=4):
    return " ".join(f"{v:.{d}f}" for v in mx.array(x).flatten().tolist())
mx.random.seed(11)
A = mx.random.normal((4, 4))
S = A @ A.T + mx.eye(4)
print([n for n in dir(mx.linalg) if not n.startswith("_")])
# float64 on the CPU (MLX's GPU has no float64: the whole section on the CPU stream)
with mx.stream(cpu):
    A64 = A.astype(mx.float64)
    print("f64 inv", mx.linalg.inv(A64, stream=cpu).dtype, fmt(mx.linalg.inv(A64, stream=cpu)[0]))
    print("f64 svd", [t.dtype for t in mx.linalg.svd(A64, stream=cpu)], fmt(mx.linalg.svd(A64, compute_uv=False, stream=cpu)))
    print("f64 eigh", fmt(mx.linalg.eigvalsh(S.astype(mx.float64), stream=cpu)), mx.linalg.eigh(S.astype(mx.float64), stream=cpu)[1].dtype)
    print("f64 cholesky", mx.linalg.cholesky(S.astype(mx.float64), stream=cpu).dtype, mx.linalg.qr(A64, stream=cpu)[0].dtype)
    print("f64 norm", mx.linalg.norm(A64).dtype, mx.linalg.norm(A64, 2, stream=cpu).dtype, f'{mx.linalg.norm(A64, "nuc", stream=cpu).item():.10f}')
    print("f64 solve", mx.linalg.solve(A64, mx.ones(4, dtype=mx.float64), stream=cpu).dtype, mx.linalg.solve(A64, mx.ones(4), stream=cpu).dtype)
    print("f64 lu", [t.dtype for t in mx.linalg.lu(A64, stream=cpu)], mx.linalg.pinv(A64, stream=cpu).dtype)
    print("f64 eig", mx.linalg.eigvals(A64, stream=cpu).dtype)
# complex
H = mx.array([[2.0, 1 - 1j], [1 + 1j, 3.0]])
w, V = mx.linalg.eigh(H, stream=cpu)
print("herm", w.dtype, V.dtype, fmt(w))
print("herm vals", mx.linalg.eigvalsh(H, stream=cpu).dtype)
Uc, Sc, Vc = mx.linalg.svd(H, stream=cpu)
print("csvd", Uc.dtype, Sc.dtype, fmt(Sc))
print("cnorm", mx.linalg.norm(H).dtype, f"{mx.linalg.norm(H).item():.4f}", f"{mx.linalg.norm(H, 1).item():.4f}")
ev = mx.linalg.eigvals(H.astype(mx.complex64), stream=cpu)
print("ceig", ev.dtype, sorted(round(z.real, 4) for z in ev.tolist()))
# grads through linalg
def f(x):
    return mx.linalg.norm(x)
print("grad norm", fmt(mx.grad(f)(mx.array([3.0, 4.0]))))
def g(x):
    return mx.linalg.norm(x, ord=1, axis=1).sum()
print("grad norm1", fmt(mx.grad(g)(A[:2])))
for name, fn in [("inv", lambda x: mx.linalg.inv(x, stream=cpu).sum()),
                 ("cholesky", lambda x: mx.linalg.cholesky(x @ x.T + mx.eye(4), stream=cpu).sum()),
                 ("solve", lambda x: mx.linalg.solve(x, mx.ones(4), stream=cpu).sum()),
                 ("svd", lambda x: mx.linalg.svd(x, compute_uv=False, stream=cpu).sum()),
                 ("svd_uv", lambda x: sum(t.sum() for t in mx.linalg.svd(x, stream=cpu))),
                 ("qr", lambda x: mx.linalg.qr(x, stream=cpu)[1].sum()),
                 ("eigh", lambda x: mx.linalg.eigvalsh(x + x.T, stream=cpu).sum()),
                 ("eigh_vec", lambda x: mx.linalg.eigh(x + x.T, stream=cpu)[1].sum()),
                 ("tri_inv", lambda x: mx.linalg.tri_inv(mx.tril(x) + 3 * mx.eye(4), stream=cpu).sum()),
                 ("solve_tri", lambda x: mx.linalg.solve_triangular(mx.tril(x) + 3 * mx.eye(4), mx.ones(4), stream=cpu).sum()),
                 ("lu", lambda x: mx.linalg.lu(x, stream=cpu)[2].sum()),
                 ("pinv", lambda x: mx.linalg.pinv(x, stream=cpu).sum()),
                 ("cross", lambda x: mx.linalg.cross(x[0, :3], x[1, :3]).sum()),
                 ("norm2", lambda x: mx.linalg.norm(x, 2, stream=cpu)),
                 ("nuc", lambda x: mx.linalg.norm(x, "nuc", stream=cpu)),
                 ("eigvals", lambda x: mx.real(mx.linalg.eigvals(x, stream=cpu)).sum())]:
    try:
        gr = mx.grad(fn)(A)
        print("grad", name, gr.shape, fmt(gr[0], 3))
    except Exception as e:
        print("grad", name, type(e).__name__, e)
