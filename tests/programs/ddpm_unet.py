import math
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


def timestep_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = mx.exp(-math.log(max_period) * mx.arange(half, dtype=mx.float32) / half)
    args = t[:, None].astype(mx.float32) * freqs[None]
    return mx.concatenate([mx.cos(args), mx.sin(args)], axis=-1)


class ResBlock(nn.Module):
    def __init__(self, in_dims, out_dims, t_dims):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, in_dims, pytorch_compatible=True)
        self.conv1 = nn.Conv2d(in_dims, out_dims, 3, padding=1)
        self.t_proj = nn.Linear(t_dims, out_dims)
        self.norm2 = nn.GroupNorm(4, out_dims, pytorch_compatible=True)
        self.conv2 = nn.Conv2d(out_dims, out_dims, 3, padding=1)
        self.skip = nn.Conv2d(in_dims, out_dims, 1) if in_dims != out_dims else None

    def __call__(self, x, temb):
        h = self.conv1(nn.silu(self.norm1(x)))
        h = h + self.t_proj(nn.silu(temb))[:, None, None, :]
        h = self.conv2(nn.silu(self.norm2(h)))
        return h + (self.skip(x) if self.skip is not None else x)


class TinyUNet(nn.Module):
    def __init__(self, channels=1, base=8, t_dims=16):
        super().__init__()
        self.t_dims = t_dims
        self.time_mlp = nn.Sequential(nn.Linear(t_dims, 2 * t_dims), nn.SiLU(), nn.Linear(2 * t_dims, t_dims))
        self.conv_in = nn.Conv2d(channels, base, 3, padding=1)
        self.down1 = ResBlock(base, base, t_dims)
        self.downsample = nn.Conv2d(base, 2 * base, 3, stride=2, padding=1)
        self.mid = ResBlock(2 * base, 2 * base, t_dims)
        self.upsample = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.up_conv = nn.Conv2d(2 * base, base, 3, padding=1)
        self.up1 = ResBlock(2 * base, base, t_dims)
        self.norm_out = nn.GroupNorm(4, base, pytorch_compatible=True)
        self.conv_out = nn.Conv2d(base, channels, 3, padding=1)

    def __call__(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.t_dims))
        h0 = self.conv_in(x)
        h1 = self.down1(h0, temb)
        h2 = self.mid(self.downsample(h1), temb)
        u = self.up_conv(self.upsample(h2))
        u = self.up1(mx.concatenate([u, h1], axis=-1), temb)
        return self.conv_out(nn.silu(self.norm_out(u)))


T = 50
betas = mx.linspace(1e-4, 0.02, T)
alphas = 1.0 - betas
alphas_cumprod = mx.cumprod(alphas)
alphas_cumprod_prev = mx.concatenate([mx.array([1.0]), alphas_cumprod[:-1]])
posterior_var = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)
print("schedule", f"{alphas_cumprod[-1].item():.6f}", f"{posterior_var[1:].mean().item():.6f}")


def q_sample(x0, t, noise):
    a = alphas_cumprod[t][:, None, None, None]
    return mx.sqrt(a) * x0 + mx.sqrt(1.0 - a) * noise


def loss_fn(model, x0, t, noise):
    return nn.losses.mse_loss(model(q_sample(x0, t, noise), t), noise)


mx.random.seed(3)
yy, xx = mx.meshgrid(mx.arange(8), mx.arange(8), indexing="ij")
c = mx.random.randint(2, 6, (32, 2))
d2 = (yy[None] - c[:, 0, None, None]) ** 2 + (xx[None] - c[:, 1, None, None]) ** 2
data = (2.0 * mx.exp(-d2.astype(mx.float32) / 3.0) - 1.0)[..., None]

model = TinyUNet()
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))
optimizer = optim.Adam(learning_rate=2e-3)
state = [model.state, optimizer.state, mx.random.state]


@partial(mx.compile, inputs=state, outputs=state)
def train_step(x0):
    t = mx.random.randint(0, T, (x0.shape[0],))
    noise = mx.random.normal(x0.shape)
    loss, grads = nn.value_and_grad(model, loss_fn)(model, x0, t, noise)
    optimizer.update(model, grads)
    return loss


for step in range(12):
    idx = mx.random.permutation(32)[:16]
    loss = train_step(data[idx])
    mx.eval(state)
    if step % 3 == 2:
        print(f"step {step} loss {loss.item():.4f}")

model.eval()
key = mx.random.key(7)
k0, key = mx.random.split(key)
x = mx.random.normal((2, 8, 8, 1), key=k0)
for i in reversed(range(0, T, 10)):
    t = mx.full((2,), i, dtype=mx.int32)
    eps = model(x, t)
    a, ab = alphas[i], alphas_cumprod[i]
    mean = (x - (1 - a) / mx.sqrt(1 - ab) * eps) / mx.sqrt(a)
    if i > 0:
        k, key = mx.random.split(key)
        x = mean + mx.sqrt(posterior_var[i]) * mx.random.normal(x.shape, key=k)
    else:
        x = mean
    mx.eval(x)
print("sample", x.shape, x.dtype, f"{x.mean().item():.4f}", f"{x.std().item():.4f}")
