"""PRNG key handling the way MLX programs use it: a global seed, explicit keys split per
step, per-call keys for reproducible augmentation, dropout under a seed, and compiled
sampling with mx.random.state captured."""
from functools import partial

import mlx.core as mx
import mlx.nn as nn

mx.random.seed(2024)
a = mx.random.uniform(shape=(3,))
mx.random.seed(2024)
b = mx.random.uniform(shape=(3,))
print("reseed", mx.array_equal(a, b).item(), a)
print(mx.random.state[0].dtype, mx.random.state[0].shape, len(mx.random.state))

key = mx.random.key(17)
print("key", key, key.dtype)
k1, k2 = mx.random.split(key)
print("split", k1, k2)
ks = mx.random.split(key, num=4)
print("split4", ks.shape, ks[2])
print("same key twice", mx.array_equal(mx.random.normal((4,), key=k1), mx.random.normal((4,), key=k1)).item())
print(mx.random.normal((2, 3), key=k1))
print(mx.random.uniform(low=-2, high=2, shape=(4,), key=k2), mx.random.randint(-5, 5, (6,), key=k2))
print(mx.random.bernoulli(mx.array([0.1, 0.5, 0.9]), key=k1), mx.random.categorical(mx.array([[0.0, 1.0, 2.0]]), num_samples=5, key=k2))
print(mx.random.permutation(8, key=ks[0]), mx.random.permutation(mx.arange(5) * 2, key=ks[1]))
print(mx.random.gumbel((3,), key=ks[3]), mx.random.laplace((3,), loc=1.0, scale=0.5, key=ks[3]))
print(mx.random.truncated_normal(mx.array([-1.0, 0.0]), mx.array([1.0, 2.0]), key=ks[2]))
print(mx.random.multivariate_normal(mx.array([0.0, 1.0]), mx.array([[1.0, 0.5], [0.5, 2.0]]), shape=(3,), key=k1, stream=mx.cpu))
print(mx.random.normal((3,), dtype=mx.float16, key=k2), mx.random.uniform(shape=(2,), dtype=mx.bfloat16, key=k2))
print(mx.random.normal((2,), loc=3.0, scale=0.1, key=k1))

# a key threaded through a loop: split, use one half, carry the other
key = mx.random.key(0)
total = mx.array(0.0)
for step in range(5):
    key, sub = mx.random.split(key)
    noise = mx.random.normal((16,), key=sub)
    total = total + noise.mean()
    if step % 2 == 0:
        print("step", step, f"{noise.std().item():.5f}", sub)
print("total", f"{total.item():.5f}")

# per-sample augmentation keys
images = mx.random.uniform(shape=(4, 5, 5), key=mx.random.key(3))
keys = mx.random.split(mx.random.key(9), 4)
flips = [mx.random.bernoulli(0.5, key=k).item() for k in keys]
shifts = mx.stack([mx.random.randint(-1, 2, (2,), key=k) for k in keys])
aug = mx.stack([im[:, ::-1] if f else im for im, f in zip(images, flips)])
print("flips", flips, shifts.tolist(), f"{aug.sum().item():.4f}")

# dropout depends on the global seed; eval mode disables it
drop = nn.Dropout(p=0.3)
x = mx.ones((2, 8))
mx.random.seed(1)
y1 = drop(x)
mx.random.seed(1)
y2 = drop(x)
print("dropout", mx.array_equal(y1, y2).item(), y1)
drop.eval()
print("eval", mx.array_equal(drop(x), x).item())

# compiled sampling consumes the captured global state
state = [mx.random.state]


@partial(mx.compile, inputs=state, outputs=state)
def sample(logits, temp):
    return mx.random.categorical(logits / temp)


mx.random.seed(42)
logits = mx.log(mx.array([[0.1, 0.2, 0.3, 0.4]]))
draws = mx.concatenate([sample(logits, 0.7) for _ in range(12)])
print("draws", draws.tolist())
mx.random.seed(42)
again = mx.concatenate([sample(logits, 0.7) for _ in range(12)])
print("repeat", mx.array_equal(draws, again).item())
