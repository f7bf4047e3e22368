import mlx.core as mx

mx.random.seed(4)

# sliding windows with as_strided: rolling statistics of a 1-D series
x = mx.cumsum(mx.random.normal((50,)))
win = 5
frames = mx.as_strided(x, shape=(50 - win + 1, win), strides=(1, 1))
print("frames", frames.shape, f"{frames.mean(1).sum().item():.4f}", f"{frames.max(1).mean().item():.4f}")
roll_med = mx.median(frames, axis=1)
print("rolling median", f"{roll_med[:3].sum().item():.4f}", roll_med.shape)
roll_std = frames.std(axis=1)
print("rolling std", f"{roll_std.mean().item():.5f}")
# strided hop (framing for an STFT)
hop = 4
nfr = (50 - 8) // hop + 1
fr = mx.as_strided(x, shape=(nfr, 8), strides=(hop, 1))
hann = 0.5 - 0.5 * mx.cos(2 * 3.14159265 * mx.arange(8) / 8)
stft = mx.fft.rfft(fr * hann, axis=-1)
print("stft", stft.shape, stft.dtype, f"{mx.abs(stft).sum().item():.3f}")

# 2-D patches (im2col) with as_strided on a contiguous image
img = mx.random.uniform(shape=(10, 12))
H, W, k = 10, 12, 3
patches = mx.as_strided(img, shape=(H - k + 1, W - k + 1, k, k), strides=(W, 1, W, 1))
print("patches", patches.shape)
kern = mx.array([[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]])
lap = (patches * kern).sum(axis=(-2, -1))
lap2 = mx.conv2d(img[None, :, :, None], kern[None, :, :, None])[0, :, :, 0]
print("laplacian", f"{mx.abs(lap - lap2).max().item() < 1e-5}", f"{mx.abs(lap).mean().item():.5f}")

# grayscale morphology: dilation / erosion as window max / min
dil = patches.max(axis=(-2, -1))
ero = patches.min(axis=(-2, -1))
print("dilate erode", f"{dil.mean().item():.5f}", f"{ero.mean().item():.5f}", bool(mx.all(dil >= ero).item()))
# binary opening on a thresholded image
mask = img > 0.3
padded = mx.pad(mask.astype(mx.uint8), 1)
pm = mx.as_strided(padded, shape=(H, W, 3, 3), strides=(W + 2, 1, W + 2, 1))
eroded = pm.min(axis=(-2, -1))
pe = mx.pad(eroded, 1)
opened = mx.as_strided(pe, shape=(H, W, 3, 3), strides=(W + 2, 1, W + 2, 1)).max(axis=(-2, -1))
print("opening", mask.sum().item(), eroded.sum().item(), opened.sum().item(), opened.dtype)

# max pooling with indices (argmax inside each 2x2 block)
blocks = img.reshape(5, 2, 6, 2).transpose(0, 2, 1, 3).reshape(5, 6, 4)
pooled = blocks.max(-1)
arg = mx.argmax(blocks, axis=-1)
print("maxpool", pooled.shape, f"{pooled.sum().item():.4f}", mx.zeros((4,), dtype=mx.int32).at[arg.flatten()].add(1).tolist())
# unpool: put the maxima back at their positions
unp = mx.zeros((5, 6, 4))
unp = mx.put_along_axis(unp, arg[..., None], pooled[..., None], axis=-1)
back = unp.reshape(5, 6, 2, 2).transpose(0, 2, 1, 3).reshape(10, 12)
print("unpool", f"{back.sum().item():.4f}", (back > 0).sum().item())

# integral image (summed-area table) and box sums
sat = mx.cumsum(mx.cumsum(img, axis=0), axis=1)
sat = mx.pad(sat, ((1, 0), (1, 0)))
box = sat[3:, 3:] - sat[:-3, 3:] - sat[3:, :-3] + sat[:-3, :-3]
print("box sums", box.shape, f"{mx.abs(box - patches.sum(axis=(-2, -1))).max().item() < 1e-4}")

# bilinear resize with gather
def resize(im, oh, ow):
    ys = mx.linspace(0, im.shape[0] - 1, oh)
    xs = mx.linspace(0, im.shape[1] - 1, ow)
    y0 = mx.floor(ys).astype(mx.int32)
    x0 = mx.floor(xs).astype(mx.int32)
    y1 = mx.minimum(y0 + 1, im.shape[0] - 1)
    x1 = mx.minimum(x0 + 1, im.shape[1] - 1)
    wy = (ys - y0)[:, None]
    wx = (xs - x0)[None, :]
    a = im[y0][:, x0]
    b = im[y0][:, x1]
    c = im[y1][:, x0]
    d = im[y1][:, x1]
    return (a * (1 - wx) + b * wx) * (1 - wy) + (c * (1 - wx) + d * wx) * wy


big = resize(img, 19, 23)
print("resize", big.shape, f"{big.mean().item():.5f}", f"{big[0, 0].item():.5f}", f"{big[-1, -1].item():.5f}")
# flips and rotations as data augmentation, checked against index arithmetic
r90 = mx.swapaxes(img, 0, 1)[::-1]
r180 = img[::-1, ::-1]
print("rot", r90.shape, bool(mx.array_equal(r90[0], img[:, -1]).item()), bool(mx.array_equal(mx.swapaxes(r90, 0, 1)[::-1], r180).item()))
tiled = mx.tile(img[:2, :3], (3, 2))
print("tile", tiled.shape, f"{tiled.sum().item():.4f}", f"{6 * img[:2, :3].sum().item():.4f}")
gx, gy = mx.meshgrid(mx.arange(W), mx.arange(H))
cx = (img * gx).sum() / img.sum()
cy = (img * gy).sum() / img.sum()
print("centroid", f"{cx.item():.4f}", f"{cy.item():.4f}")
