import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

mx.random.seed(9)
n = 128
t = mx.arange(n) / n
clean = mx.sin(2 * 3.14159265 * 3 * t) + 0.5 * mx.cos(2 * 3.14159265 * 7 * t)
noisy = clean + 0.4 * mx.random.normal((n,))

# low-pass filter with rfft / irfft
spec = mx.fft.rfft(noisy)
freqs = mx.arange(spec.shape[0])
mask = (freqs <= 10).astype(spec.dtype)
filtered = mx.fft.irfft(spec * mask, n=n)
print("spec", spec.shape, spec.dtype, f"{mx.abs(spec).max().item():.4f}")
print("mse noisy", f"{mx.mean((noisy - clean) ** 2).item():.5f}", "filtered", f"{mx.mean((filtered - clean) ** 2).item():.5f}")
top = mx.argsort(-mx.abs(spec))[:2]
print("peaks", sorted(top.tolist()))

# circular convolution theorem
k = mx.random.normal((n,))
conv_fft = mx.fft.irfft(mx.fft.rfft(noisy) * mx.fft.rfft(k), n=n)
idx = (mx.arange(n)[:, None] - mx.arange(n)[None, :]) % n
conv_direct = (noisy[idx] * k[None, :]).sum(1)
print("conv", f"{mx.abs(conv_fft - conv_direct).max().item() < 1e-3}", f"{conv_fft[:3].sum().item():.4f}")

# 2-D: smoothing an image batch, complex fft round trip
img = mx.random.uniform(shape=(2, 16, 16))
F = mx.fft.fft2(img)
back = mx.real(mx.fft.ifft2(F))
print("fft2", F.dtype, f"{mx.abs(back - img).max().item() < 1e-5}", f"{mx.abs(F[:, 0, 0]).sum().item():.4f}")
R = mx.fft.rfftn(img, axes=(1, 2))
ky = mx.fft.fftfreq(16)[:, None]
kx = mx.fft.rfftfreq(16)[None, :]
gauss = mx.exp(-(kx ** 2 + ky ** 2) / 0.02)
smooth = mx.fft.irfftn(R * gauss, s=(16, 16), axes=(1, 2))
print("smooth", smooth.shape, f"{smooth.std().item():.5f}", f"{img.std().item():.5f}")
sh = mx.fft.fftshift(mx.fft.fftfreq(8))
print("shift", " ".join(f"{v:.4f}" for v in sh.tolist()))


# learn a linear filter in the frequency domain by gradient descent
class SpectralFilter(nn.Module):
    def __init__(self, nfreq):
        super().__init__()
        self.gain = mx.ones((nfreq,))

    def __call__(self, x):
        return mx.fft.irfft(mx.fft.rfft(x) * self.gain, n=x.shape[-1])


batch = mx.sin(2 * 3.14159265 * mx.random.uniform(1, 5, (16, 1)) * t) + 0.5 * mx.random.normal((16, n))
target = mx.fft.irfft(mx.fft.rfft(batch) * (freqs <= 6), n=n)
model = SpectralFilter(n // 2 + 1)
opt = optim.SGD(learning_rate=2.0, momentum=0.5)
vg = nn.value_and_grad(model, lambda m, x, y: nn.losses.mse_loss(m(x), y))
for i in range(20):
    loss, g = vg(model, batch, target)
    opt.update(model, g)
    mx.eval(model.parameters(), opt.state)
    if i % 5 == 0 or i == 19:
        print("filter", i, f"{loss.item():.6f}")
print("gain", f"{model.gain[:7].mean().item():.4f}", f"{model.gain[7:].mean().item():.4f}")
