import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim


class Generator(nn.Module):
    def __init__(self, zdim, hidden, out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(zdim, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, out))

    def __call__(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.l1 = nn.Linear(dim, hidden)
        self.l2 = nn.Linear(hidden, 1)

    def __call__(self, x):
        return self.l2(nn.leaky_relu(self.l1(x), 0.2)).squeeze(-1)


mx.random.seed(7)
G = Generator(8, 32, 2)
D = Discriminator(2, 32)
mx.eval(G.parameters(), D.parameters())
g_opt = optim.Adam(learning_rate=2e-3, betas=[0.5, 0.999])
d_opt = optim.RMSprop(learning_rate=1e-3)

angles = mx.random.uniform(0, 2 * 3.14159265, (64,))
real = mx.stack([mx.cos(angles), mx.sin(angles)], axis=1) * 2.0


def d_loss(d, real, fake):
    fake = mx.stop_gradient(fake)
    lr = nn.losses.binary_cross_entropy(d(real), mx.ones(real.shape[0]), with_logits=True)
    lf = nn.losses.binary_cross_entropy(d(fake), mx.zeros(fake.shape[0]), with_logits=True)
    return (lr + lf).mean() if lr.ndim else lr + lf


def g_loss(g, z):
    logits = D(g(z))
    return nn.losses.binary_cross_entropy(logits, mx.ones(logits.shape[0]), with_logits=True, reduction="mean")


d_step = nn.value_and_grad(D, d_loss)
g_step = nn.value_and_grad(G, g_loss)
for it in range(15):
    z = mx.random.normal((64, 8))
    fake = G(z)
    ld, gd = d_step(D, real, fake)
    d_opt.update(D, gd)
    lg, gg = g_step(G, z)
    g_opt.update(G, gg)
    mx.eval(G.parameters(), D.parameters(), g_opt.state, d_opt.state)
    if it % 5 == 0 or it == 14:
        print(it, f"{ld.item():.5f}", f"{lg.item():.5f}")

# The discriminator's gradients must not reach the generator through stop_gradient.
z = mx.random.normal((16, 8))
_, gfake = nn.value_and_grad(G, lambda g, z: d_loss(D, real, g(z)))(G, z)
from mlx.utils import tree_flatten
print("stopped", sum(mx.abs(v).sum().item() for _, v in tree_flatten(gfake)))
out = G(mx.random.normal((256, 8)))
print("radius", f"{mx.linalg.norm(out, axis=1).mean().item():.5f}", "step", g_opt.step.item())
