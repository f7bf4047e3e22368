"""Random keys through transforms and options: samplers under vmap over a batch of keys, compiled
functions taking a key, raw uint32 keys, array-valued parameters, integer/bool/complex dtypes,
permutations along an axis, the global state object, and nn initializers seeded globally."""
import pathlib, tempfile, os
import mlx.core as mx
import mlx.nn as nn

def show(label, x, d=4):
    vals = " ".join(f"{v:.{d}f}" if isinstance(v, float) else str(v) for v in x.flatten().tolist())
    print(label, x.shape, x.dtype, vals)

# keys under vmap: one sample per key
keys = mx.random.split(mx.random.key(3), 4)
show("vmap normal", mx.vmap(lambda k: mx.random.normal((2,), key=k))(keys))
show("vmap uniform", mx.vmap(lambda k: mx.random.uniform(shape=(3,), key=k))(keys))
show("vmap randint", mx.vmap(lambda k: mx.random.randint(0, 10, (2,), key=k))(keys))
show("vmap split", mx.vmap(lambda k: mx.random.split(k))(keys))
show("vmap bern", mx.vmap(lambda k: mx.random.bernoulli(0.5, (3,), key=k))(keys))
show("vmap cat", mx.vmap(lambda k: mx.random.categorical(mx.zeros(5), key=k))(keys))
show("vmap gumbel", mx.vmap(lambda k: mx.random.gumbel((2,), key=k))(keys))
# compiled with explicit keys
@mx.compile
def noisy(x, k):
    return x + 0.1 * mx.random.normal(x.shape, key=k)
show("compiled key", noisy(mx.zeros(3), mx.random.key(5)))
show("compiled key2", noisy(mx.zeros(3), mx.random.key(6)))
# key from an array, bits
show("key arr", mx.random.key(2**32 + 7))
show("key max", mx.random.key(2**64 - 1))
k = mx.array([1, 2], dtype=mx.uint32)
show("raw key", mx.random.uniform(shape=(2,), key=k))
# sampler kwargs
show("normal kw", mx.random.normal(shape=[2], dtype=mx.float32, loc=mx.array(1.0), scale=mx.array(2.0), key=k))
show("uniform high arr", mx.random.uniform(high=mx.array([1.0, 10.0, 100.0]), shape=(3,), key=k))
show("randint bool", mx.random.randint(0, 2, (4,), dtype=mx.bool_, key=k) if True else None)
show("randint uint32", mx.random.randint(0, 2**31, (3,), dtype=mx.uint32, key=k))
show("randint int64", mx.random.randint(-5, 5, (3,), dtype=mx.int64, key=k))
show("perm axis1 3d", mx.random.permutation(mx.arange(24).reshape(2, 3, 4), axis=2, key=k))
show("bern shape none", mx.random.bernoulli(mx.full((2, 2), 0.5), key=k))
show("truncated scalar", mx.random.truncated_normal(-2, 2, key=k))
show("categorical logits f16", mx.random.categorical(mx.array([[0.0, 1.0, 2.0]], dtype=mx.float16), num_samples=4, key=k))
show("categorical axis0 num", mx.random.categorical(mx.zeros((3, 2)), axis=0, num_samples=3, key=k))
show("normal complex", mx.random.normal((2,), dtype=mx.complex64, key=k))
# state save / restore
mx.random.seed(0)
saved = mx.random.state[0]
a = mx.random.normal((3,))
print("state moved", mx.array_equal(saved, mx.random.state[0]).item(), type(mx.random.state).__name__, len(mx.random.state))
# nn init uses the global key
mx.random.seed(4)
lin = nn.Linear(3, 2)
show("linear init", lin.weight)
show("init normal", nn.init.normal(std=0.5)(mx.zeros((2, 2))))
show("init he", nn.init.he_uniform()(mx.zeros((2, 3))))
