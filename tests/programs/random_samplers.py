"""mx.random beyond the basics: key trees (split of split, batched keys), per-call keys, the
shape and dtype of every sampler, broadcasting of bounds and parameters, categorical with
num_samples or shape, multivariate normals, permutations and integer bounds given as arrays."""
import mlx.core as mx


def show(label, x, d=4):
    vals = " ".join(f"{v:.{d}f}" if isinstance(v, float) else str(v) for v in x.flatten().tolist())
    print(label, x.shape, x.dtype, vals)


root = mx.random.key(1234)
print("root", root.dtype, root.shape, root.tolist())
k_data, k_model, k_noise = mx.random.split(root, 3)
print("split3", k_data.tolist(), k_noise.tolist())
tree = mx.random.split(k_model, num=4)
leaves = [mx.random.split(k) for k in tree]
print("tree", tree.shape, leaves[2].shape, leaves[2].tolist())
grand = mx.random.split(mx.random.split(root)[1])
print("grand", grand.tolist())
print("split2", mx.random.split(root, 2).shape, mx.random.split(root, num=1).shape)

# every sampler with an explicit key: shapes and dtypes
show("uniform", mx.random.uniform(shape=(2, 3), key=k_data))
show("uniform bounds", mx.random.uniform(mx.array([0.0, 10.0]), mx.array([[1.0], [20.0]]), (2, 2), key=k_data))
show("uniform f16", mx.random.uniform(-1, 1, (4,), dtype=mx.float16, key=k_data))
show("uniform bf16", mx.random.uniform(shape=(3,), dtype=mx.bfloat16, key=k_noise))
show("normal", mx.random.normal((3, 2), key=k_data))
show("normal loc/scale", mx.random.normal((4,), loc=10.0, scale=0.5, key=k_data))
show("normal bcast", mx.random.normal((2, 3), loc=mx.array([0.0, 100.0, -100.0]), key=k_data), 3)
show("normal f16", mx.random.normal((3,), dtype=mx.float16, key=k_noise))
show("normal scalar", mx.random.normal(key=k_noise))
show("randint", mx.random.randint(0, 10, (8,), key=k_data))
show("randint arrays", mx.random.randint(mx.array([0, 100, -50]), mx.array([5, 105, -45]), (3,), key=k_data))
show("randint bcast", mx.random.randint(mx.array([[0], [1000]]), mx.array([3, 6, 9]), (2, 3), key=k_noise))
show("randint shape", mx.random.randint(mx.array([0, 10]), 20, (3, 2), key=k_noise))
show("randint int16", mx.random.randint(-3, 3, (5,), dtype=mx.int16, key=k_data))
show("randint uint8", mx.random.randint(0, 200, (5,), dtype=mx.uint8, key=k_data))
show("bernoulli", mx.random.bernoulli(0.3, (8,), key=k_data))
show("bernoulli p", mx.random.bernoulli(mx.array([0.0, 1.0, 0.5, 0.5]), key=k_data))
show("bernoulli bcast", mx.random.bernoulli(mx.array([0.1, 0.9]), (3, 2), key=k_noise))
show("truncated", mx.random.truncated_normal(-1.0, 1.0, (6,), key=k_data))
show("truncated bcast", mx.random.truncated_normal(mx.array([-2.0, 0.0, 1.0]), mx.array([[0.0], [2.0]]), key=k_data))
# bounds within 3 sigma: past ~4 sigma erfinv turns one ulp of its argument into ~1%, and MLX's
# CPU erf (1e-7 absolute error) and CUDA's erff there give visibly different draws
show("truncated shape", mx.random.truncated_normal(mx.array([0.0, 1.0]), 3.0, (3, 2), key=k_noise))
show("truncated f16", mx.random.truncated_normal(-0.5, 0.5, (3,), dtype=mx.float16, key=k_noise))
show("gumbel", mx.random.gumbel((2, 3), key=k_data))
show("gumbel f16", mx.random.gumbel((3,), dtype=mx.float16, key=k_data))
show("laplace", mx.random.laplace((5,), key=k_data))
show("laplace loc", mx.random.laplace((3,), loc=2.0, scale=3.0, key=k_noise))
show("laplace bf16", mx.random.laplace((3,), dtype=mx.bfloat16, key=k_noise))

# categorical: logits over the last axis or another, num_samples, shape
logits = mx.log(mx.array([[0.7, 0.2, 0.1], [0.05, 0.05, 0.9]]))
show("cat", mx.random.categorical(logits, key=k_data))
show("cat num", mx.random.categorical(logits, num_samples=6, key=k_data))
show("cat shape", mx.random.categorical(logits, shape=(4, 2), key=k_noise))
show("cat axis0", mx.random.categorical(logits.T, axis=0, key=k_data))
show("cat 1d", mx.random.categorical(mx.array([0.0, 0.0, 5.0, 0.0]), num_samples=5, key=k_data))
counts = mx.sum(mx.random.categorical(logits[0], num_samples=2000, key=k_model)[:, None] == mx.arange(3), axis=0)
print("cat freq", counts.tolist())

# multivariate normal: batched means, shapes, float32 covariance on the CPU
mean = mx.array([1.0, -1.0])
cov = mx.array([[2.0, 0.6], [0.6, 0.5]])
mvn = mx.random.multivariate_normal(mean, cov, shape=(4,), key=k_data, stream=mx.cpu)
show("mvn", mvn)
big = mx.random.multivariate_normal(mean, cov, shape=(3000,), key=k_model, stream=mx.cpu)
emp = (big - big.mean(0)).T @ (big - big.mean(0)) / 2999
print("mvn stats", f"{big.mean(0)[0].item():.1f}", f"{emp[0, 0].item():.1f}", f"{emp[0, 1].item():.1f}")
means = mx.array([[0.0, 0.0], [10.0, 10.0]])
show("mvn batched", mx.random.multivariate_normal(means, cov, key=k_noise, stream=mx.cpu))
show("mvn shape", mx.random.multivariate_normal(means, cov, shape=(3, 2), key=k_noise, stream=mx.cpu))

# permutations
show("perm int", mx.random.permutation(10, key=k_data))
show("perm array", mx.random.permutation(mx.arange(6) * 10, key=k_data))
M = mx.arange(12).reshape(4, 3)
show("perm rows", mx.random.permutation(M, key=k_noise))
show("perm cols", mx.random.permutation(M, axis=1, key=k_noise))
show("perm float", mx.random.permutation(mx.array([0.5, 1.5, 2.5]), key=k_noise))

# the global state: seed, draw, re-seed; keys do not touch it
mx.random.seed(7)
a = mx.random.uniform(shape=(3,))
_ = mx.random.normal((5,), key=k_data)
b = mx.random.uniform(shape=(3,))
mx.random.seed(7)
a2 = mx.random.uniform(shape=(3,))
b2 = mx.random.uniform(shape=(3,))
print("global", mx.array_equal(a, a2).item(), mx.array_equal(b, b2).item())
show("global draw", b)
show("global randint", mx.random.randint(0, 100, (4,)))
show("global perm", mx.random.permutation(5))
show("global cat", mx.random.categorical(logits, num_samples=3))
show("global gumbel", mx.random.gumbel((2,)))
print("state", mx.random.state[0].tolist())
