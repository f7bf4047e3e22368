"""Implicit differentiation with custom_function: a fixed-point layer (adjoint by iteration),
Newton's square root with an implicit-function-theorem jvp, and a linear solve whose vjp
solves with the transpose; each checked against unrolled autodiff."""
import mlx.core as mx

mx.random.seed(9)
n = 6
W = mx.random.normal((n, n)) * (0.4 / n ** 0.5)
U = mx.random.normal((n, 3))


def cell(z, x, w):
    return mx.tanh(z @ w.T + x @ U.T)


def solve_fixed_point(x, w, iters=60):
    z = mx.zeros((x.shape[0], n))
    for _ in range(iters):
        z = cell(z, x, w)
    return z


@mx.custom_function
def deq(x, w):
    return solve_fixed_point(mx.stop_gradient(x), mx.stop_gradient(w))


@deq.vjp
def deq_vjp(primals, cotangent, output):
    x, w = primals
    z = output
    # adjoint fixed point: u = ct + J_z(cell)^T u, then pull u back to x and w
    u = cotangent
    for _ in range(60):
        u = cotangent + mx.vjp(lambda zz: cell(zz, x, w), [z], [u])[1][0]
    _, (gx, gw) = mx.vjp(lambda xx, ww: cell(z, xx, ww), [x, w], [u])
    return gx, gw


X = mx.random.normal((4, 3))
target = mx.random.normal((4, n))


def loss_implicit(x, w):
    return mx.square(deq(x, w) - target).mean()


def loss_unrolled(x, w):
    return mx.square(solve_fixed_point(x, w) - target).mean()


(li, (gxi, gwi)) = mx.value_and_grad(loss_implicit, argnums=(0, 1))(X, W)
(lu, (gxu, gwu)) = mx.value_and_grad(loss_unrolled, argnums=(0, 1))(X, W)
print("deq loss", round(li.item(), 5), round(lu.item(), 5))
print("deq grads", gxi.shape, gwi.shape, round(mx.linalg.norm(gxi).item(), 4), round(mx.linalg.norm(gwi).item(), 4))
print("deq matches unrolled", mx.allclose(gxi, gxu, atol=1e-5).item(), mx.allclose(gwi, gwu, atol=1e-5).item())
z = deq(X, W)
print("fixed point residual", mx.abs(z - cell(z, X, W)).max().item() < 1e-5)


# Newton square root with the jvp from the implicit function theorem: d sqrt(a) = da / (2 sqrt(a))
@mx.custom_function
def newton_sqrt(a):
    y = mx.maximum(a, 1.0)
    for _ in range(30):
        y = 0.5 * (y + a / y)
    return y


@newton_sqrt.jvp
def newton_sqrt_jvp(primals, tangents):
    a, t = primals, tangents
    return t / (2 * newton_sqrt(a))


@newton_sqrt.vjp
def newton_sqrt_vjp(primals, cotangent, output):
    return cotangent / (2 * output)


a = mx.array([0.25, 2.0, 9.0, 30.0])
print("sqrt", [round(v, 5) for v in newton_sqrt(a).tolist()])
print("jvp", [round(v, 5) for v in mx.jvp(newton_sqrt, [a], [mx.ones(4)])[1][0].tolist()])
print("grad", [round(v, 5) for v in mx.grad(lambda v: newton_sqrt(v).sum())(a).tolist()])
print("vmap grad", mx.vmap(mx.grad(lambda v: newton_sqrt(v)))(a).shape)
print("2nd derivative", [round(v, 5) for v in mx.grad(lambda v: mx.grad(lambda u: newton_sqrt(u).sum())(v).sum())(a).tolist()])


# linear solve: the vjp solves with A^T instead of differentiating the factorization
@mx.custom_function
def solve(A, b):
    return mx.linalg.solve(A, b, stream=mx.cpu)


@solve.vjp
def solve_vjp(primals, cotangent, output):
    A, b = primals
    gb = mx.linalg.solve(A.T, cotangent, stream=mx.cpu)
    gA = -mx.outer(gb, output) if output.ndim == 1 else -gb @ output.T
    return gA, gb


A = mx.random.normal((5, 5)) + 5 * mx.eye(5)
b = mx.random.normal((5,))
gA, gb = mx.grad(lambda A, b: (solve(A, b) * mx.arange(5)).sum(), argnums=(0, 1))(A, b)
inv = mx.linalg.inv(A, stream=mx.cpu)
print("solve grads", gA.shape, gb.shape, round(gA.sum().item(), 4), round(gb.sum().item(), 4))
print("solve gb check", mx.allclose(gb, inv.T @ mx.arange(5).astype(mx.float32), atol=1e-5).item())
B = mx.random.normal((5, 2))
gA2 = mx.grad(lambda A: solve(A, B).sum())(A)
print("matrix rhs", gA2.shape, round(gA2.sum().item(), 4))
