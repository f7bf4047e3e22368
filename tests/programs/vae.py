import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class VAE(nn.Module):
    def __init__(self, dim, hidden, latent):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h)

    def __call__(self, x):
        mu, logvar = self.encode(x)
        eps = mx.random.normal(mu.shape)
        z = mu + mx.exp(0.5 * logvar) * eps
        return self.dec(z), mu, logvar


def loss_fn(model, x):
    recon, mu, logvar = model(x)
    rec = nn.losses.binary_cross_entropy(recon, x, with_logits=True, reduction="sum")
    kl = -0.5 * mx.sum(1 + logvar - mu.square() - mx.exp(logvar))
    return (rec + kl) / x.shape[0]


mx.random.seed(42)
protos = (mx.random.uniform(shape=(4, 24)) > 0.5).astype(mx.float32)
labels = mx.random.randint(0, 4, (128,))
flips = mx.random.bernoulli(0.05, (128, 24))
data = mx.abs(protos[labels] - flips.astype(mx.float32))

model = VAE(24, 32, 4)
mx.eval(model.parameters())
opt = optim.Adam(learning_rate=3e-3)
step = nn.value_and_grad(model, loss_fn)
for epoch in range(4):
    perm = mx.random.permutation(data.shape[0])
    total = 0.0
    for i in range(0, 128, 32):
        xb = data[perm[i:i + 32]]
        loss, grads = step(model, xb)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        total += loss.item()
    print("epoch", epoch, f"{total / 4:.5f}")

model.eval()
mu, logvar = model.encode(data)
print("mu", mu.shape, f"{mx.mean(mu.square()).item():.5f}", f"{mx.mean(logvar).item():.5f}")
samples = mx.sigmoid(model.dec(mx.random.normal((5, 4))))
print("samples", samples.shape, f"{samples.mean().item():.5f}")
n = sum(v.size for _, v in tree_flatten(model.trainable_parameters()))
print("params", n)
