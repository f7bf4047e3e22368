"""The array object as users poke at it: methods and attributes (.round, .conj, .view,
.moveaxis, .swapaxes, .split, .flatten, .squeeze), astype through every dtype and what
.item()/.tolist() give back for each, iteration and len, in-place operators and aliasing,
weak-type promotion with Python and numpy scalars, integer wraparound, and the reprs of
every dtype (0-d, empty, complex, bfloat16, summarised large arrays)."""
# compare: text
import numpy as np

import mlx.core as mx

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64]

# --- astype through every dtype ----------------------------------------------------------
src = mx.array([0.0, 2.7, 300.0, 70000.5, 1.5])
for d in DTYPES:
    y = src.astype(d)
    v = y[1].item()
    print(f"{str(d):18} {y.tolist()} item={v!r} ({type(v).__name__}) nbytes={y.nbytes} itemsize={y.itemsize}")
    print("  ", repr(mx.array([1, 0], dtype=d)), "|", mx.array(1, dtype=d), "|", mx.zeros((0,), dtype=d), "|", -mx.array([1, 2], dtype=d) if d != mx.bool_ else "")
    print("  ", str(mx.zeros((2, 0, 3), dtype=d)), np.array(mx.array([1, 2], dtype=d)).dtype if d != mx.bfloat16 else "bf16")
print(mx.array([1 + 1j, 2]).astype(mx.float32), mx.array([1.7 + 1j, -2.2]).astype(mx.int32))
print(mx.array([-1, 256, 511]).astype(mx.uint8), mx.array([2**40 + 5, -2**31 - 1], dtype=mx.int64).astype(mx.int32))

# --- methods and attributes --------------------------------------------------------------
x = mx.arange(24, dtype=mx.float32).reshape(2, 3, 4)
c = mx.array([1 + 2j, 3 - 4j])
print(c.conj(), mx.conjugate(mx.array([1.0, 2.0])), c.real, c.imag, mx.abs(c))
print(mx.array([2.345, 3.14159]).round(3), mx.array([0.5, 1.5, 2.5, -0.5]).round(), mx.round(mx.array([15, 25, -35]), -1))
print(mx.array([1.0, -2.0]).view(mx.int32), mx.array([1, 256], dtype=mx.int32).view(mx.uint8))
print(mx.array([1.0, 2.0]).view(mx.float16), mx.array([1.0, 2.0, 3.0, 4.0]).view(mx.complex64))
print(x.moveaxis(0, -1).shape, mx.moveaxis(x, 2, 0).shape, x.swapaxes(0, 2).shape, x.T.shape)
print(x.transpose(1, 0, 2).shape, x.transpose((2, 0, 1)).shape, x.reshape(-1, 6).shape, x.reshape((4, -1)).shape)
print([s.shape for s in x.split(2, axis=2)], [s.shape for s in x.split([1, 3], axis=2)], [s.shape for s in mx.split(x, [3, 1], axis=2)])
print(x.flatten().shape, x.flatten(1, 2).shape, x.flatten(start_axis=0, end_axis=-2).shape, mx.array(3).flatten())
print(mx.ones((1, 3, 1)).squeeze().shape, mx.ones((1, 3, 1)).squeeze(2).shape, mx.ones((1, 3, 1)).squeeze((0, 2)).shape)
print(x.sum(axis=(0, 2)), x.argmin(axis=1, keepdims=True).shape, x.max(axis=-1), x.logsumexp(axis=2).round(3))
print(x.cumsum(axis=2, reverse=True)[0, 0], x.var(axis=0, ddof=1)[0], x.std().round(4), x[0].diagonal(1))
print(x.any(), (x > 0).all(axis=1), x.prod(axis=2)[0].astype(mx.int64), mx.array([1, 2, 3], dtype=mx.int8).prod())

# --- iteration, len, scalars -------------------------------------------------------------
print(len(x), [r.shape for r in x], [v.item() for v in mx.array([3, 1, 2])], 3 in mx.array([1, 2, 3]))
print(bool(mx.array([1])), int(mx.array(3.7)), float(mx.array([2])), [10, 20, 30][mx.array(1)])
print(mx.arange(6).reshape(2, 3).tolist(), mx.array(3.5).tolist(), (mx.arange(3) > 0).tolist())
print(mx.array([1 + 2j]).tolist(), mx.array([0.1], dtype=mx.float16).tolist(), mx.array([0.1], dtype=mx.bfloat16).tolist())
print(mx.array(1 + 2j).item(), mx.array(True).item(), mx.array([[5]]).item(), mx.array(7, dtype=mx.uint64).item())
print(f"{mx.array(1.23456):.2f} {mx.array(7):03d} {mx.array([1, 2])}")

# --- in-place operators ------------------------------------------------------------------
a = mx.arange(4, dtype=mx.float32)
b = a
a += 1
a *= mx.array([2.0, 2, 2, 2])
print(a, b, a is b)
j = mx.arange(4.0)
j //= 3
j **= 2
j -= 0.5
j %= 2
k = mx.arange(4)
k <<= 2
k |= 1
k ^= 3
k &= 6
k >>= 1
m = mx.ones((2, 2))
m @= mx.eye(2) * 3
print(j, k, m)
grid = mx.zeros((3, 4))
grid[1] = 5
grid[:, 2] += 1
grid[0, [1, 3]] = mx.array([7.0, 8.0])
grid[grid > 4] = -1
print(grid)
acc = mx.zeros((5,))
print(acc.at[mx.array([0, 0, 2])].add(1.0), [getattr(mx.arange(4.0).at[mx.array([1, 1])], op)(3.0).tolist() for op in ("subtract", "multiply", "maximum")])

# --- promotion with Python and numpy scalars, integer wraparound -------------------------
i8 = mx.array([1, 2], dtype=mx.int8)
h = mx.array([1, 2], dtype=mx.float16)
u8 = mx.array([200, 100], dtype=mx.uint8)
print((i8 + 1).dtype, (i8 + 1.5).dtype, (i8 / 2).dtype, (i8 + np.int64(1)).dtype, (i8 + np.float16(1)).dtype)
print((h * 2.0).dtype, (h + np.float32(1)).dtype, (h + np.float64(1)).dtype, (h + mx.array(1.0)).dtype, (h + 1j).dtype)
print((u8 + mx.array([1], mx.int8)).dtype, (mx.array([1], mx.uint64) + mx.array([1], mx.int64)).dtype, (mx.array([1], mx.bfloat16) + h).dtype)
print(mx.array([True, False]) + True, mx.array([1, 2]) + 0.5, mx.array([1], dtype=mx.uint8) + 255, mx.array([3]) / mx.array([2]))
print(mx.array([127], dtype=mx.int8) + 1, mx.array([0], dtype=mx.uint32) - 1, mx.array([2**31 - 1]) + 1, mx.array([65536]) * 65536)
print(mx.sum(u8), mx.sum(mx.array([100, 100], dtype=mx.int8)), mx.cumsum(u8), mx.prod(mx.array([300, 300], dtype=mx.uint16)))
print(mx.array(-1, dtype=mx.uint8), mx.array(300, dtype=mx.uint8), mx.array(2.7, dtype=mx.int32), mx.array(70000.0, dtype=mx.float16))
print(mx.array(2**40), mx.array([1, 2**40]).dtype, mx.array([1, 2.0, True]), mx.array(np.float64(1.5)).dtype, mx.array(np.uint16(3)).dtype)
print(mx.array([2]) ** -1, 2 ** mx.array([1, 2]), mx.array([2]) ** 0.5, mx.array([7.5, -7.5]) // 2, mx.array([-7, 7]) % 3)

# --- reprs ------------------------------------------------------------------------------
mx.random.seed(3)
print(mx.arange(2000).reshape(40, 50))
print(mx.random.normal((30, 40)))
print(mx.arange(1200) % 3 == 0)
print(mx.arange(1100).astype(mx.complex64) * 1j)
print(mx.linspace(0, 1, 1001).astype(mx.bfloat16))
print(mx.arange(1000)[-3:], mx.arange(1001).shape)
print(mx.array([-1 - 1j, 0.5 + 0j, 1e-5j, 1e6 + 2j]), mx.array(1 + 2j), mx.array([[1 + 2j, 3], [4j, -5]]))
print(mx.array([1e-8, 123456.0, -0.1, 3.0], dtype=mx.bfloat16), mx.array([1e-8, 65504.0, -0.1, 3.0, 1e-5], dtype=mx.float16))
print(mx.array([1 / 3, 2.0, 1e-20], dtype=mx.float64), mx.array([1e-5, 1e-4, 0.001]), mx.array([1.5, 100000.0, 0.25]), mx.array([1e16, 1.0]))
print(mx.array([-0.0, 0.0]), mx.array([float("nan")]), mx.array(float("-inf")), mx.array([0.1, 0.2, 0.3]) * 3)
print(mx.eye(3) > 0, mx.array(2.5, dtype=mx.float16), mx.array(2.5, dtype=mx.bfloat16), mx.array(True), mx.array(-3, dtype=mx.int8))
print(mx.zeros((3, 0)), mx.zeros((0, 2, 2)), mx.array([]), mx.array([[], []]), str(mx.array(1.5)), str(mx.arange(8).reshape(2, 2, 2)))
print([repr(d) for d in (mx.float32, mx.bool_, mx.complex64, mx.bfloat16)], [str(d) for d in (mx.uint64, mx.float16)])
print(mx.issubdtype(mx.float16, mx.floating), mx.issubdtype(mx.uint8, mx.signedinteger), mx.float32 == mx.float32, mx.floating, mx.integer)
