import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim


@mx.custom_function
def ste_sign(x):
    return mx.sign(x)


@ste_sign.vjp
def ste_sign_vjp(primals, cotangent, output):
    x = primals
    return cotangent * (mx.abs(x) <= 1).astype(cotangent.dtype)


@mx.custom_function
def clip_grad(x, bound):
    return x


@clip_grad.vjp
def clip_grad_vjp(primals, cotangent, output):
    x, bound = primals
    return mx.clip(cotangent, -bound, bound), mx.zeros_like(bound)


@mx.custom_function
def scaled_square(x):
    return x * x


@scaled_square.jvp
def scaled_square_jvp(primals, tangents):
    x, t = primals, tangents
    return 2 * x * t


class BinaryNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(10, 32)
        self.l2 = nn.Linear(32, 3)

    def __call__(self, x):
        w = ste_sign(self.l1.weight)
        h = x @ w.T + self.l1.bias
        h = clip_grad(mx.tanh(h), mx.array(0.05))
        return self.l2(h)


mx.random.seed(5)
X = mx.random.normal((96, 10))
y = mx.argmax(X[:, :3] - X[:, 3:6], axis=1)
model = BinaryNet()
mx.eval(model.parameters())
opt = optim.SGD(learning_rate=0.05, momentum=0.9, nesterov=True)


def loss_fn(model, x, t):
    return nn.losses.cross_entropy(model(x), t, reduction="mean")


step = nn.value_and_grad(model, loss_fn)
for it in range(20):
    loss, grads = step(model, X, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if it % 5 == 0 or it == 19:
        acc = mx.mean(mx.argmax(model(X), axis=1) == y).item()
        print(it, f"{loss.item():.5f}", f"{acc:.4f}")

x = mx.array([-2.0, -0.5, 0.0, 0.7, 3.0])
print("ste", mx.grad(lambda x: (ste_sign(x) * mx.arange(5)).sum())(x).tolist())
g = mx.grad(lambda x: (clip_grad(x, mx.array(0.5)) * mx.array([1.0, -3.0, 0.2, 2.0, -0.1])).sum())(x)
print("clip", g.tolist())
_, tan = mx.jvp(scaled_square, [x], [mx.ones_like(x)])
print("jvp", tan[0].tolist())
vals, vjps = mx.vjp(ste_sign, [x], [mx.ones_like(x)])
print("vjp", vals[0].tolist(), vjps[0].tolist())
print("vmap", mx.vmap(mx.grad(lambda v: ste_sign(v).sum()))(mx.array([[0.5, 2.0], [-3.0, 0.1]])).tolist())


# a custom batching rule: a matrix-vector product vmapped as one matrix-matrix product
@mx.custom_function
def matvec(m, v):
    return m @ v


calls = []


def matvec_vmap(inputs, axes):
    calls.append(axes)
    m, v = inputs
    am, av = axes
    if am is None:
        return mx.moveaxis(v, av, 0) @ m.T, 0
    return mx.vmap(lambda a, b: a @ b, in_axes=(am, av))(m, v), 0


matvec.vmap(matvec_vmap)
M = mx.random.normal((3, 4))
V = mx.random.normal((6, 4))
out = mx.vmap(matvec, in_axes=(None, 0))(M, V)
print("rule calls", float(len(calls)))
print("matvec", out.shape, f"{out.sum().item():.5f}", mx.allclose(out, V @ M.T, atol=1e-5).item())
