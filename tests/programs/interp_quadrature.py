import math

import mlx.core as mx

mx.random.seed(2)

# cubic spline through noisy-free samples: tridiagonal system for the second derivatives
xk = mx.linspace(0, 2 * math.pi, 12)
yk = mx.sin(xk)
h = xk[1:] - xk[:-1]
n = xk.shape[0]
main = 2 * (h[:-1] + h[1:])
rhs = 6 * ((yk[2:] - yk[1:-1]) / h[1:] - (yk[1:-1] - yk[:-2]) / h[:-1])
T = mx.diag(main) + mx.diag(h[1:-1], k=1) + mx.diag(h[1:-1], k=-1)
M_inner = mx.linalg.solve(T, rhs, stream=mx.cpu)
M = mx.concatenate([mx.zeros(1), M_inner, mx.zeros(1)])
print("spline system", T.shape, f"{M.abs().max().item():.4f}")

xq = mx.linspace(0.1, 6.1, 50)
seg = mx.clip(mx.searchsorted(xk, xq, side="right").astype(mx.int32) - 1, 0, n - 2)
x0, x1 = xk[seg], xk[seg + 1]
y0, y1 = yk[seg], yk[seg + 1]
m0, m1 = M[seg], M[seg + 1]
hh = x1 - x0
s = (m0 * (x1 - xq) ** 3 + m1 * (xq - x0) ** 3) / (6 * hh) + (y0 / hh - m0 * hh / 6) * (x1 - xq) + (y1 / hh - m1 * hh / 6) * (xq - x0)
print("spline err", f"{mx.abs(s - mx.sin(xq)).max().item():.5f}", seg.dtype, seg[:6].tolist())

# linear interpolation via searchsorted
lin = y0 + (y1 - y0) * (xq - x0) / hh
print("linear err", f"{mx.abs(lin - mx.sin(xq)).max().item():.5f}")

# Chebyshev interpolation of a Runge function and its coefficients via a DCT-like sum
N = 16
j = mx.arange(N)
nodes = mx.cos(math.pi * (j + 0.5) / N)
f = 1 / (1 + 25 * nodes ** 2)
k = mx.arange(N)[:, None]
C = (2 / N) * (f[None, :] * mx.cos(math.pi * k * (j[None, :] + 0.5) / N)).sum(1)
C = C.at[0].multiply(0.5)
t = mx.linspace(-1, 1, 101)
Tk = [mx.ones_like(t), t]
for i in range(2, N):
    Tk.append(2 * t * Tk[-1] - Tk[-2])
approx = (mx.stack(Tk) * C[:, None]).sum(0)
print("chebyshev", f"{mx.abs(approx - 1 / (1 + 25 * t ** 2)).max().item():.4f}", f"{C[0].item():.5f}", f"{mx.abs(C[1::2]).max().item() < 1e-5}")

# least-squares polynomial via Vandermonde + QR, evaluated with Horner
xs = mx.random.uniform(-1, 1, (80,))
ys = mx.exp(xs) + 0.01 * mx.random.normal((80,))
V = xs[:, None] ** mx.arange(5)
Q, R = mx.linalg.qr(V, stream=mx.cpu)
c = mx.linalg.solve_triangular(R, Q.T @ ys, upper=True, stream=mx.cpu)
print("poly coef", " ".join(f"{v:.3f}" for v in c.tolist()))
p = mx.zeros_like(t)
for ci in c[::-1]:
    p = p * t + ci
print("poly err", f"{mx.abs(p - mx.exp(t)).max().item():.4f}")
cond = mx.linalg.svd(V, compute_uv=False, stream=mx.cpu)
print("vander cond", f"{(cond[0] / cond[-1]).item():.2f}")

# quadrature: trapezoid, Simpson, and Gauss-Legendre nodes from eigh of the Jacobi matrix
def trapz(y, x):
    return ((y[1:] + y[:-1]) * (x[1:] - x[:-1])).sum() / 2


g = lambda x: mx.exp(-x ** 2)
xx = mx.linspace(0, 2, 201)
print("trapz", f"{trapz(g(xx), xx).item():.6f}")
hs = xx[1] - xx[0]
w = mx.ones(201).at[1:-1:2].multiply(4.0).at[2:-1:2].multiply(2.0)
print("simpson", f"{(hs / 3 * (w * g(xx)).sum()).item():.6f}", f"{math.sqrt(math.pi) / 2 * math.erf(2):.6f}")
m = 8
beta = mx.arange(1, m) / mx.sqrt(4 * mx.arange(1, m) ** 2 - 1)
J = mx.diag(beta, k=1) + mx.diag(beta, k=-1)
nodes, vecs = mx.linalg.eigh(J, stream=mx.cpu)
weights = 2 * vecs[0] ** 2
print("gauss nodes", f"{nodes.sum().item():.5f}", f"{weights.sum().item():.5f}")
gl = (weights * g(nodes + 1)).sum()
print("gauss-legendre", f"{gl.item():.5f}")
# cumulative integral with cumsum and its derivative back with diff
cum = mx.concatenate([mx.zeros(1), mx.cumsum((g(xx[1:]) + g(xx[:-1])) * hs / 2)])
print("cumulative", cum.shape, f"{cum[-1].item():.6f}", f"{mx.abs(mx.diff(cum) / hs - (g(xx[1:]) + g(xx[:-1])) / 2).max().item() < 1e-3}")

# vectorised root finding: bisection on many cubics at once, then Newton polish with mx.grad
a = mx.random.uniform(1, 3, (6,))
def cubic(z):
    return z ** 3 - a * z - 1


lo, hi = mx.zeros(6), mx.full((6,), 3.0)
for _ in range(20):
    mid = (lo + hi) / 2
    pos = cubic(mid) > 0
    hi = mx.where(pos, mid, hi)
    lo = mx.where(pos, lo, mid)
root = (lo + hi) / 2
dcubic = mx.grad(lambda z: cubic(z).sum())
for _ in range(3):
    root = root - cubic(root) / dcubic(root)
print("roots", " ".join(f"{v:.5f}" for v in root.tolist()), f"{mx.abs(cubic(root)).max().item() < 1e-4}")
