import math

import mlx.core as mx

mx.random.seed(31)

# 1-D convolution: moving average / edge detection with mx.convolve
sig = mx.sin(mx.linspace(0, 4 * math.pi, 64)) + 0.2 * mx.random.normal((64,))
box = mx.ones(5) / 5
for mode in ["full", "same", "valid"]:
    out = mx.convolve(sig, box, mode=mode)
    print("convolve", mode, out.shape, f"{out.sum().item():.5f}")
asym = mx.array([1.0, 0.0, -1.0])
print("convolve flip", " ".join(f"{v:.4f}" for v in mx.convolve(mx.arange(6).astype(mx.float32), asym).tolist()))
print("convolve swap", bool(mx.allclose(mx.convolve(box, sig), mx.convolve(sig, box)).item()))

# the same with conv1d (cross-correlation, NLC layout) and a bank of filters
kernels = mx.stack([box, mx.array([-1.0, -0.5, 0.0, 0.5, 1.0]), mx.array([0.0, 1.0, -2.0, 1.0, 0.0])])
x = sig.reshape(1, 64, 1)
w = kernels[:, :, None]
y = mx.conv1d(x, w, padding=2)
print("conv1d", y.shape, " ".join(f"{v:.4f}" for v in mx.abs(y).sum(axis=1)[0].tolist()))
print("conv1d vs convolve", bool(mx.allclose(y[0, :, 0], mx.convolve(sig, box[::-1], mode="same"), atol=1e-5).item()))
ys = mx.conv1d(x, w, stride=2, dilation=2)
print("conv1d strided", ys.shape, f"{ys.sum().item():.5f}")
# depthwise conv via groups
xg = mx.random.normal((2, 20, 4))
wg = mx.random.normal((4, 3, 1))
yg = mx.conv1d(xg, wg, padding=1, groups=4)
print("grouped", yg.shape, f"{yg.std().item():.5f}")
yg2 = mx.conv_general(xg, wg, stride=1, padding=1, groups=4, flip=True)
print("conv_general flip", yg2.shape, f"{yg2.std().item():.5f}")

# polynomial least squares with a Vandermonde matrix
t = mx.linspace(-1, 1, 40)
target = 0.5 - 1.2 * t + 2.0 * t ** 3 + 0.05 * mx.random.normal((40,))
deg = 3
V = t[:, None] ** mx.arange(deg + 1)
coef = mx.linalg.solve(V.T @ V, V.T @ target, stream=mx.cpu)
print("polyfit", " ".join(f"{v:.4f}" for v in coef.tolist()))
Q, R = mx.linalg.qr(V, stream=mx.cpu)
coef_qr = mx.linalg.solve_triangular(R, Q.T @ target, upper=True, stream=mx.cpu)
print("qr path", Q.shape, R.shape, bool(mx.allclose(coef, coef_qr, atol=1e-4).item()))
pinv = mx.linalg.pinv(V, stream=mx.cpu)
print("pinv", pinv.shape, bool(mx.allclose(pinv @ target, coef, atol=1e-4).item()))
resid = target - V @ coef
print("residual", f"{mx.sqrt(mx.mean(resid ** 2)).item():.5f}")
# Horner evaluation with reversed coefficients
xe = mx.array([-0.5, 0.0, 0.5, 2.0])
acc = mx.zeros_like(xe)
for c in coef[::-1].tolist():
    acc = acc * xe + c
print("horner", " ".join(f"{v:.4f}" for v in acc.tolist()))

# image ops on an (H, W) array
img = mx.arange(20, dtype=mx.float32).reshape(4, 5)
print("pad constant", mx.pad(img, 1).shape, mx.pad(img, ((1, 0), (0, 2)), constant_values=-1).sum().item())
print("pad edge", mx.pad(img, 2, mode="edge")[0].tolist())
print("pad edge sum", mx.pad(img, [(1, 2), (3, 0)], mode="edge").sum().item())
print("flip", img[::-1, :][0].tolist(), img[:, ::-1][0].tolist())
print("roll", mx.roll(img, 2, axis=1)[0].tolist(), mx.roll(img, -1)[0].tolist(), mx.roll(img, (1, 1), axis=(0, 1))[0].tolist())
rot90 = img.T[::-1]
print("rot90", rot90.shape, rot90[0].tolist(), img[::-1, ::-1][0].tolist())
print("tile", mx.tile(img[:2, :2], (2, 3)).shape, mx.tile(mx.array([1, 2]), 3).tolist())
print("repeat", mx.repeat(mx.array([[1, 2], [3, 4]]), 2, axis=0).tolist())
gx, gy = mx.meshgrid(mx.arange(3), mx.arange(4))
print("meshgrid xy", gx.shape, gy.shape, gx.sum().item(), gy.sum().item())
ix, iy = mx.meshgrid(mx.arange(3), mx.arange(4), indexing="ij")
print("meshgrid ij", ix.shape, iy[1].tolist())
# 2-D Gaussian blur with a separable kernel (conv2d) on a batch of images
g1 = mx.exp(-0.5 * (mx.arange(-2, 3).astype(mx.float32) / 1.0) ** 2)
g1 = g1 / g1.sum()
k2 = (g1[:, None] * g1[None, :])[None, :, :, None]
imgs = mx.random.uniform(shape=(2, 16, 16, 1))
blur = mx.conv2d(mx.pad(imgs, ((0, 0), (2, 2), (2, 2), (0, 0)), mode="edge"), k2)
print("blur", blur.shape, f"{blur.std().item():.5f}", f"{imgs.std().item():.5f}", f"{blur.mean().item():.5f}")
# Sobel edge magnitude
sob = mx.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
ks = mx.stack([sob, sob.T], axis=0)[..., None]
edges = mx.conv2d(blur, ks, padding=1)
mag = mx.sqrt((edges ** 2).sum(-1))
print("sobel", edges.shape, f"{mag.mean().item():.5f}")
# image pyramid via strided slicing and 2x2 average pooling by reshape
pool = imgs.reshape(2, 8, 2, 8, 2, 1).mean(axis=(2, 4))
print("pool", pool.shape, f"{pool.sum().item():.4f}", imgs[:, ::2, ::2].shape)
# upsample by repeat and compare
up = mx.repeat(mx.repeat(pool, 2, axis=1), 2, axis=2)
print("upsample", up.shape, f"{mx.abs(up - imgs).mean().item():.5f}")
# transposes / swapaxes / moveaxis (NHWC -> NCHW)
nchw = mx.transpose(imgs, (0, 3, 1, 2))
print("layout", nchw.shape, mx.moveaxis(imgs, -1, 1).shape, mx.swapaxes(imgs, 1, 2).shape,
      bool(mx.array_equal(mx.swapaxes(imgs, 1, 2), mx.transpose(imgs, (0, 2, 1, 3))).item()))
