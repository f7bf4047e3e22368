import math

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


# 1. A physics-informed network for u'' = -pi^2 sin(pi x), u(0) = u(1) = 0 (solution sin(pi x)):
#    second derivatives with respect to the input through vmap(grad(grad)).
class PINN(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.l1 = nn.Linear(1, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.l3 = nn.Linear(hidden, 1)

    def __call__(self, x):
        h = mx.tanh(self.l1(x))
        h = mx.tanh(self.l2(h))
        return self.l3(h)


def u_scalar(model, x):
    return model(x.reshape(1, 1)).squeeze()


def pinn_loss(model, xs):
    u_xx = mx.vmap(mx.grad(mx.grad(lambda x: u_scalar(model, x))))(xs)
    residual = u_xx + math.pi ** 2 * mx.sin(math.pi * xs)
    boundary = model(mx.array([[0.0], [1.0]]))
    return mx.mean(residual ** 2) + 10 * mx.mean(boundary ** 2)


mx.random.seed(2)
pinn = PINN(16)
mx.eval(pinn.parameters())
xs = mx.linspace(0, 1, 24)
opt = optim.Adam(learning_rate=5e-3)
step = nn.value_and_grad(pinn, pinn_loss)
for i in range(15):
    loss, g = step(pinn, xs)
    opt.update(pinn, g)
    mx.eval(pinn.parameters(), opt.state)
    if i % 5 == 0 or i == 14:
        print("pinn", i, f"{loss.item():.4f}")
du = mx.vmap(mx.grad(lambda x: u_scalar(pinn, x)))(mx.array([0.0, 0.5, 1.0]))
print("du", " ".join(f"{v:.5f}" for v in du.tolist()))


# 2. Forces as the negative gradient of a Lennard-Jones energy; a few velocity-Verlet steps.
def energy(pos):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = (d * d).sum(-1) + mx.eye(pos.shape[0])
    inv6 = (1.0 / r2) ** 3
    e = 4 * (inv6 ** 2 - inv6)
    return mx.triu(e, k=1).sum()


grid = mx.stack(mx.meshgrid(mx.arange(3), mx.arange(3), indexing="ij"), -1).reshape(-1, 2)
pos = grid.astype(mx.float32) * 1.15 + 0.01 * mx.random.normal((9, 2))
vel = mx.zeros_like(pos)
force = lambda p: -mx.grad(energy)(p)
dt = 0.002
f = force(pos)
e0 = energy(pos) + 0.5 * (vel * vel).sum()
for _ in range(10):
    vel = vel + 0.5 * dt * f
    pos = pos + dt * vel
    f = force(pos)
    vel = vel + 0.5 * dt * f
mx.eval(pos, vel)
e1 = energy(pos) + 0.5 * (vel * vel).sum()
print("md", f"{e0.item():.5f}", f"{e1.item():.5f}", f"{mx.abs(f).max().item():.4f}")


# 3. Conjugate gradients on an SPD system, checked against mx.linalg.solve (CPU stream).
A0 = mx.random.normal((12, 12))
A = A0 @ A0.T / 12 + mx.eye(12)
b = mx.random.normal((12,))
x = mx.zeros_like(b)
r = b - A @ x
p = r
rs = mx.inner(r, r)
for k in range(12):
    Ap = A @ p
    alpha = rs / mx.inner(p, Ap)
    x = x + alpha * p
    r = r - alpha * Ap
    rs_new = mx.inner(r, r)
    p = r + (rs_new / rs) * p
    rs = rs_new
ref = mx.linalg.solve(A, b, stream=mx.cpu)
print("cg", f"{mx.linalg.norm(x - ref).item() < 1e-3}", f"{mx.linalg.norm(ref).item():.5f}")


# 4. Unadjusted Langevin sampling of a 2-D Gaussian with a key per step.
prec = mx.array([[2.0, 0.6], [0.6, 1.0]])
logp = lambda z: -0.5 * mx.einsum("ni,ij,nj->n", z, prec, z).sum()
z = mx.zeros((512, 2))
key = mx.random.key(8)
for t in range(20):
    key, sub = mx.random.split(key)
    z = z + 0.05 * mx.grad(logp)(z) + math.sqrt(2 * 0.05) * mx.random.normal(z.shape, key=sub)
mx.eval(z)
cov = (z.T @ z) / z.shape[0]
print("langevin", f"{z.mean().item():.4f}", f"{cov[0, 0].item():.4f}", f"{cov[1, 1].item():.4f}")
print("params", sum(v.size for _, v in tree_flatten(pinn.parameters())))
