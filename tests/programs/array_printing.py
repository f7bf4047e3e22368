"""Print arrays the way MLX users inspect them: repr/str of every dtype and rank, summarised
long arrays, scalars through .item()/tolist() and f-strings, numpy round trips, promotion."""
import numpy as np

import mlx.core as mx

mx.random.seed(0)

# every dtype, a few ranks
print(mx.array(3), mx.array(2.5), mx.array(False))
print(mx.array([1, -2, 3], dtype=mx.int8), mx.array([7, 8], dtype=mx.uint16))
print(mx.array([0.1, -0.25, 3.0], dtype=mx.float16))
print(mx.array([0.1, 1e-3, 250.0], dtype=mx.bfloat16))
print(mx.array([1 + 2j, -0.5j]))
print(mx.arange(12).reshape(2, 2, 3))
print(mx.zeros((2, 0)), mx.ones((1, 1, 1), dtype=mx.int64))
print(mx.arange(1500))
print(mx.linspace(0, 1, 5))
print(mx.array([1e-7, 1.0, 1e7]), mx.array([float("nan"), float("inf"), -0.0]))

# random draws print as MLX's (normal goes through erfinv)
w = mx.random.normal((3, 4))
print(w)
print(repr(mx.random.uniform(-1, 1, (2, 3))))
print(str(mx.random.truncated_normal(-1.5, 1.5, (5,))))
print(mx.random.randint(0, 100, (2, 5)), mx.random.bernoulli(0.5, (6,)))

# scalars and Python values
mean = w.mean()
print(f"mean={mean.item():.5f} max={w.max().item():.5f} argmax={w.argmax().item()}")
print(f"{mx.array(2.0).item()} {type(mx.array(2).item()).__name__} {mx.array([1.5, 2]).tolist()}")
print(w[0, :2].tolist(), w.shape, w.dtype, w.size, w.ndim, w.nbytes, w.itemsize)
print("col sums", [f"{v:.4f}" for v in w.sum(axis=0).tolist()])

# numpy round trips and promotion
n = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
a = mx.array(n)
print(a, a.dtype, np.array(a * 2).dtype, np.array(a).sum())
print(mx.array(np.arange(3)).dtype, mx.array(np.ones(2, np.float16)).dtype, mx.array(np.int8(4)).dtype)
i8 = mx.array([1, 2], dtype=mx.int8)
print((i8 + 1).dtype, (i8 + 1.5).dtype, (i8 * mx.array(2, dtype=mx.int32)).dtype, (i8 / 2).dtype)
h = mx.array([1, 2], dtype=mx.float16)
print((h * 2.0).dtype, (h + mx.array(1.0)).dtype, (h + np.float32(1)).dtype, (mx.array([True]) + 1).dtype)
print(mx.array([1, 2], dtype=mx.uint32) + mx.array([1, 2], dtype=mx.int32), (mx.array(3) ** 2) / 3)
print(mx.array([1, 2.5, True]), mx.array([[1, 2], [3.5, 4]]).T)
print(mx.finfo(mx.float16).max, mx.finfo(mx.bfloat16), mx.iinfo(mx.int16))
print(mx.float32, mx.bfloat16, mx.cpu, mx.default_device())
