import math
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim


class Coupling(nn.Module):
    """RealNVP affine coupling: half the coordinates scale and shift the other half."""

    def __init__(self, dim, hidden, flip):
        super().__init__()
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(dim // 2, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def __call__(self, x):
        a, b = mx.split(x, 2, axis=-1)
        if self.flip:
            a, b = b, a
        s, t = mx.split(self.net(a), 2, axis=-1)
        s = mx.tanh(s)
        b = b * mx.exp(s) + t
        out = [b, a] if self.flip else [a, b]
        return mx.concatenate(out, axis=-1), s.sum(-1)

    def inverse(self, y):
        a, b = mx.split(y, 2, axis=-1)
        if self.flip:
            b, a = a, b
        s, t = mx.split(self.net(a), 2, axis=-1)
        b = (b - t) * mx.exp(-mx.tanh(s))
        out = [b, a] if self.flip else [a, b]
        return mx.concatenate(out, axis=-1)


class Flow(nn.Module):
    def __init__(self, dim, hidden, n):
        super().__init__()
        self.layers = [Coupling(dim, hidden, i % 2 == 1) for i in range(n)]

    def __call__(self, x):
        logdet = mx.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            logdet = logdet + ld
        return x, logdet

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def nll(flow, x):
    z, logdet = flow(x)
    logp = -0.5 * mx.sum(z * z, -1) - z.shape[-1] * 0.5 * math.log(2 * math.pi)
    return -mx.mean(logp + logdet)


mx.random.seed(4)
n = 256
theta = mx.random.uniform(0, math.pi, (n,))
data = mx.stack([mx.cos(theta), mx.sin(theta) - 0.5], 1) + 0.1 * mx.random.normal((n, 2))
flow = Flow(2, 32, 4)
mx.eval(flow.parameters())
opt = optim.Adam(learning_rate=3e-3)
vg = nn.value_and_grad(flow, nll)
for i in range(15):
    loss, g = vg(flow, data)
    opt.update(flow, g)
    mx.eval(flow.parameters(), opt.state)
    if i % 5 == 0 or i == 14:
        print("flow", i, f"{loss.item():.5f}")
z, _ = flow(data)
print("invert", mx.allclose(flow.inverse(z), data, atol=1e-5).item(), f"{z.std().item():.5f}")
# the log-determinant agrees with the Jacobian computed by vmap over jacrev rows
x0 = data[:3]
jac_rows = [mx.vmap(mx.grad(lambda x, i=i: flow(x[None])[0][0, i]))(x0) for i in range(2)]
J = mx.stack(jac_rows, axis=1)
logabsdet = mx.log(mx.abs(J[:, 0, 0] * J[:, 1, 1] - J[:, 0, 1] * J[:, 1, 0]))
print("logdet", " ".join(f"{v:.5f}" for v in flow(x0)[1].tolist()), mx.allclose(logabsdet, flow(x0)[1], atol=1e-4).item())


# neural ODE: fit a spiral's vector field with fixed-step Euler integration
class ODEFunc(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.l1 = nn.Linear(3, hidden)
        self.l2 = nn.Linear(hidden, 2)

    def __call__(self, t, y):
        ty = mx.concatenate([y, mx.broadcast_to(t, y.shape[:-1] + (1,))], -1)
        return self.l2(mx.tanh(self.l1(ty)))


def odeint_euler(f, y0, ts):
    ys = [y0]
    y = y0
    for i in range(ts.shape[0] - 1):
        dt = ts[i + 1] - ts[i]
        y = y + dt * f(ts[i], y)
        ys.append(y)
    return mx.stack(ys)


A = mx.array([[-0.1, 2.0], [-2.0, -0.1]])
ts = mx.linspace(0, 1.5, 16)
true_y0 = mx.array([[2.0, 0.0]])
true_traj = odeint_euler(lambda t, y: y @ A.T, true_y0, ts)
func = ODEFunc(32)
mx.eval(func.parameters())
opt = optim.AdamW(learning_rate=1e-2, weight_decay=0.0)


def ode_loss(model, y0, ts, target):
    return mx.mean(mx.abs(odeint_euler(model, y0, ts) - target))


state = [func.state, opt.state]


@partial(mx.compile, inputs=state, outputs=state)
def step(y0, ts, target):
    loss, g = nn.value_and_grad(func, ode_loss)(func, y0, ts, target)
    opt.update(func, g)
    return loss


for i in range(20):
    loss = step(true_y0, ts, true_traj)
    mx.eval(state)
    if i % 5 == 0 or i == 19:
        print("ode", i, f"{loss.item():.5f}")
print("traj", true_traj.shape, f"{true_traj[-1, 0, 0].item():.5f}", f"{true_traj[-1, 0, 1].item():.5f}")
