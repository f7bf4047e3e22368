import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes, dims, beta=0.25):
        super().__init__()
        self.beta = beta
        self.codebook = nn.Embedding(num_codes, dims)

    def __call__(self, z):
        flat = z.reshape(-1, z.shape[-1])
        w = self.codebook.weight
        d = (flat ** 2).sum(1, keepdims=True) - 2 * flat @ w.T + (w ** 2).sum(1)
        idx = mx.stop_gradient(mx.argmin(d, axis=1))
        zq = self.codebook(idx).reshape(z.shape)
        codebook_loss = mx.mean((zq - mx.stop_gradient(z)) ** 2)
        commit_loss = mx.mean((mx.stop_gradient(zq) - z) ** 2)
        zq_st = z + mx.stop_gradient(zq - z)
        return zq_st, codebook_loss + self.beta * commit_loss, idx.reshape(z.shape[:-1])


class VQVAE(nn.Module):
    def __init__(self, channels=1, hidden=16, latent=4, num_codes=16):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(channels, hidden, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(hidden, latent, 3, padding=1))
        self.vq = VectorQuantizer(num_codes, latent)
        self.dec = nn.Sequential(
            nn.Conv2d(latent, hidden, 3, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(hidden, channels, 4, stride=2, padding=1))

    def __call__(self, x):
        z = self.enc(x)
        zq, vq_loss, codes = self.vq(z)
        return self.dec(zq), vq_loss, codes


def loss_fn(model, x):
    recon, vq_loss, _ = model(x)
    return nn.losses.mse_loss(recon, x) + vq_loss


mx.random.seed(9)
N = 32
yy, xx = mx.meshgrid(mx.arange(8), mx.arange(8), indexing="ij")
stripes = mx.sin((yy[None] * mx.random.uniform(0.3, 1.2, (N, 1, 1)) + xx[None] * mx.random.uniform(0.3, 1.2, (N, 1, 1))))
images = stripes[..., None].astype(mx.float32)
print("images", images.shape, f"{images.var().item():.5f}")

model = VQVAE()
mx.eval(model.parameters())

# straight-through: gradient through quantizer equals gradient wrt zq
z = model.enc(images[:2])
def st(z):
    zq, _, _ = model.vq(z)
    return (zq * mx.arange(zq.size).reshape(zq.shape)).sum()
gz = mx.grad(st)(z)
print("straight-through exact:", mx.array_equal(gz, mx.arange(z.size).reshape(z.shape).astype(mx.float32)).item())

optimizer = optim.Adam(learning_rate=3e-3)
loss_and_grad = nn.value_and_grad(model, loss_fn)
for epoch in range(3):
    perm = mx.random.permutation(N)
    for s in range(0, N, 8):
        loss, grads = loss_and_grad(model, images[perm[s : s + 8]])
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
    print(f"epoch {epoch} loss {loss.item():.4f}")

code_grad = grads["vq"]["codebook"]["weight"]
print("codebook grad", code_grad.shape, f"rows touched {int((mx.abs(code_grad).sum(1) > 0).sum().item())}")
recon, vq_loss, codes = model(images)
usage = mx.zeros((16,), dtype=mx.int32).at[codes.flatten()].add(1)
print("codes", codes.shape, codes.dtype, "total", usage.sum().item())
probs = usage.astype(mx.float32) / usage.sum()
perplexity = mx.exp(-mx.sum(probs * mx.log(probs + 1e-10)))
print(f"perplexity {perplexity.item():.3f} vq {vq_loss.item():.4f} mse {nn.losses.mse_loss(recon, images).item():.4f}")
