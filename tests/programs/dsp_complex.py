import math

import mlx.core as mx

mx.random.seed(31)
fs = 256
n = 512
t = mx.arange(n) / fs
sig = mx.sin(2 * math.pi * 10 * t) + 0.5 * mx.sin(2 * math.pi * 60 * t) + 0.2 * mx.random.normal((n,))

# windowed-sinc FIR low-pass design and filtering with convolve
taps = 41
m = mx.arange(taps) - (taps - 1) / 2
fc = 25 / fs
h = 2 * fc * mx.where(m == 0, 1.0, mx.sin(2 * math.pi * fc * m) / (2 * math.pi * fc * mx.where(m == 0, 1.0, m)))
h = h * (0.54 - 0.46 * mx.cos(2 * math.pi * mx.arange(taps) / (taps - 1)))
h = h / h.sum()
y = mx.convolve(sig, h, mode="same")
H = mx.abs(mx.fft.rfft(h, n=n))
print("fir", h.shape, f"{H[20].item():.4f}", f"{H[120].item():.5f}", f"{y.std().item():.4f}")

# first-order IIR (exponential) filter as an explicit recursion
alpha = 0.1
state = mx.array(0.0)
out = []
for i in range(64):
    state = alpha * sig[i] + (1 - alpha) * state
    out.append(state)
iir = mx.stack(out)
print("iir", f"{iir[-1].item():.5f}", f"{iir.mean().item():.5f}")

# decimate by 4 after filtering, then upsample by zero insertion with a strided scatter
dec = y[::4]
up = mx.zeros((n,)).at[mx.arange(0, n, 4)].add(dec)
print("decimate", dec.shape, up.shape, f"{(up != 0).sum().item()}", f"{up.sum().item():.4f}")

# analytic signal via FFT (Hilbert transform), envelope and instantaneous frequency
tone = (1 + 0.5 * mx.cos(2 * math.pi * 2 * t)) * mx.cos(2 * math.pi * 40 * t)
F = mx.fft.fft(tone)
hmask = mx.concatenate([mx.array([1.0]), 2 * mx.ones(n // 2 - 1), mx.array([1.0]), mx.zeros(n // 2 - 1)])
analytic = mx.fft.ifft(F * hmask)
env = mx.abs(analytic)
phase = mx.arctan2(mx.imag(analytic), mx.real(analytic))
dphi = mx.remainder(phase[1:] - phase[:-1] + math.pi, 2 * math.pi) - math.pi
inst_f = dphi * fs / (2 * math.pi)
print("analytic", analytic.dtype, f"{env[64:448].max().item():.4f}", f"{env[64:448].min().item():.4f}",
      f"{inst_f[64:448].mean().item():.3f}")

# complex demodulation: mix down by 60 Hz and low-pass
lo = mx.exp(-2j * math.pi * 60 * t.astype(mx.complex64))
base = sig.astype(mx.complex64) * lo
bb = mx.convolve(mx.real(base), h, mode="same") + 1j * mx.convolve(mx.imag(base), h, mode="same")
print("demod", bb.dtype, f"{(2 * mx.abs(bb[64:448])).mean().item():.3f}")

# complex arithmetic identities on random complex data
z = mx.random.normal((6,)) + 1j * mx.random.normal((6,))
w = mx.random.normal((6,)) + 1j * mx.random.normal((6,))
print("conj product", f"{mx.abs(mx.conj(z * w) - mx.conj(z) * mx.conj(w)).max().item() < 1e-6}")
print("modulus", f"{mx.abs(mx.abs(z * w) - mx.abs(z) * mx.abs(w)).max().item() < 1e-5}",
      f"{(z * mx.conj(z)).real.sum().item():.4f}", f"{(mx.abs(z) ** 2).sum().item():.4f}")
ratio = z / w
print("division", f"{mx.abs(ratio * w - z).max().item() < 1e-5}", f"{mx.abs(ratio).sum().item():.4f}")
print("exp-log", f"{mx.abs(mx.exp(mx.log(z)) - z).max().item() < 1e-5}", f"{mx.sqrt(z)[0].real.item():.4f}")
rot = z * mx.exp(1j * mx.array(math.pi / 2, dtype=mx.float32))
print("rotation", f"{mx.abs(rot.real + z.imag).max().item() < 1e-5}", f"{mx.abs(rot.imag - z.real).max().item() < 1e-5}")
print("matmul", (z.reshape(2, 3) @ w.reshape(3, 2)).shape, f"{mx.abs(z.reshape(2, 3) @ mx.conj(z.reshape(2, 3)).T).sum().item():.4f}")

# DFT as a complex matrix product agrees with fft
k = mx.arange(16)
Wm = mx.exp(-2j * math.pi * (k[:, None] * k[None, :]).astype(mx.complex64) / 16)
x16 = sig[:16].astype(mx.complex64)
print("dft", f"{mx.abs(Wm @ x16 - mx.fft.fft(x16)).max().item() < 1e-4}", f"{mx.abs(mx.fft.fft(x16)).sum().item():.4f}")
# 2-D fft shift / frequency grid and a radial low-pass of an image
img = mx.random.uniform(shape=(32, 32))
F2 = mx.fft.fftshift(mx.fft.fft2(img))
fy = mx.fft.fftshift(mx.fft.fftfreq(32))[:, None]
fx = mx.fft.fftshift(mx.fft.fftfreq(32))[None, :]
mask = (fx ** 2 + fy ** 2) < 0.1 ** 2
low = mx.real(mx.fft.ifft2(mx.fft.ifftshift(F2 * mask)))
print("radial", mask.sum().item(), f"{low.std().item():.5f}", f"{low.mean().item():.4f}", f"{img.mean().item():.4f}")
