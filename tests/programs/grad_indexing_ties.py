"""Gradients through indexing, scatter updates, sorting and the non-smooth points users
hit: maximum/minimum ties, abs at 0, clip at its bounds, max-reductions with ties."""
import mlx.core as mx


def show(label, g):
    if isinstance(g, (tuple, list)):
        for i, gi in enumerate(g):
            show(f"{label}[{i}]", gi)
        return
    print(label, g.shape, g.dtype, [round(v, 4) for v in g.reshape(-1).tolist()])


x = mx.array([-1.5, 0.0, 0.0, 2.0, 2.0, -0.5, 3.0, 1.0])
show("abs", mx.grad(lambda v: mx.abs(v).sum())(x))
show("sign", mx.grad(lambda v: (mx.sign(v) * v).sum())(x))
show("relu_max", mx.grad(lambda v: mx.maximum(v, 0.0).sum())(x))
show("maximum_ties", mx.grad(lambda a, b: mx.maximum(a, b).sum(), argnums=(0, 1))(x, mx.full(x.shape, 2.0)))
show("minimum_ties", mx.grad(lambda a, b: mx.minimum(a, b).sum(), argnums=(0, 1))(x, mx.zeros_like(x)))
show("clip", mx.grad(lambda v: mx.clip(v, -0.5, 2.0).sum())(x))
show("clip_arr", mx.grad(lambda v: mx.clip(v, mx.array(0.0), None).sum())(x))
show("max_ties", mx.grad(lambda v: mx.max(v))(mx.array([1.0, 3.0, 3.0, 2.0])))
show("min_ties_axis", mx.grad(lambda v: mx.min(v, axis=1).sum())(mx.array([[1.0, 1.0, 2.0], [0.0, 5.0, -1.0]])))
show("argmax_take", mx.grad(lambda v: v[mx.stop_gradient(mx.argmax(v))] * 2)(mx.array([1.0, 3.0, 3.0, 2.0])))
show("logsumexp", mx.grad(lambda v: mx.logsumexp(v))(x))
show("sqrt_pos", mx.grad(lambda v: mx.sqrt(v).sum())(mx.array([0.25, 1.0, 4.0])))
show("where", mx.grad(lambda v: mx.where(v > 0, v * v, -v).sum())(x))
show("where_both", mx.grad(lambda a, b: mx.where(a > b, a, b).sum(), argnums=(0, 1))(x, x[::-1]))

mx.random.seed(3)
A = mx.random.normal((5, 4))
idx = mx.array([4, 0, 0, 2])
show("gather_dup", mx.grad(lambda a: (a[idx] * mx.arange(4)[:, None]).sum())(A))
show("slice_step", mx.grad(lambda a: a[1::2, ::-1].sum() + (a[:, 1] ** 2).sum())(A))
show("take_axis", mx.grad(lambda a: mx.take(a, mx.array([3, 3, 1]), axis=1).sum())(A))
ti = mx.argsort(A, axis=1)[:, :2]
show("take_along", mx.grad(lambda a: (mx.take_along_axis(a, ti, axis=1) ** 2).sum())(A))


def scatter_loss(a, u):
    out = mx.zeros((6, 4)).at[mx.array([1, 3, 1])].add(u)
    out = out.at[0].multiply(a[0])
    return (out * a[:6 - 1].sum() + out ** 2).sum()


u = mx.random.normal((3, 4))
show("at_add", mx.grad(scatter_loss, argnums=(0, 1))(A, u))


def set_loss(a, v):
    b = a.at[mx.array([0, 2])].add(v)
    b[1] = 0.0
    return (b * b).sum()


show("set_item", mx.grad(set_loss, argnums=(0, 1))(A, mx.ones((4,))))
show("put_along", mx.grad(lambda a, v: (mx.put_along_axis(a, ti, v, axis=1) * mx.arange(4)).sum(), argnums=(0, 1))(A, mx.ones((5, 2))))

v = mx.array([0.3, -1.2, 2.5, 0.7, -0.1, 1.9])
w = mx.arange(6).astype(mx.float32)
show("sort", mx.grad(lambda v: (mx.sort(v) * w).sum())(v))
show("topk", mx.grad(lambda v: (mx.topk(v, 3) ** 2).sum())(v))
show("cumsum", mx.grad(lambda v: (mx.cumsum(v) * w).sum())(v))
show("cumsum_rev", mx.grad(lambda v: (mx.cumsum(v, reverse=True) * w).sum())(v))
show("cumsum_excl", mx.grad(lambda v: (mx.cumsum(v, inclusive=False) * w).sum())(v))
show("cumprod", mx.grad(lambda v: mx.cumprod(v)[-1])(v))
show("cummax", mx.grad(lambda v: (mx.cummax(v) * w).sum())(v))
show("prod", mx.grad(lambda v: mx.prod(v))(v))
show("softmax_pick", mx.grad(lambda v: mx.softmax(v)[2])(v))
show("sorted_median", mx.grad(lambda v: mx.sort(v)[2:4].mean())(v))

show("norm_zero", mx.grad(lambda v: mx.linalg.norm(v))(mx.array([3.0, 4.0])))
show("floor_round", mx.grad(lambda v: (mx.floor(v) + mx.round(v) + v).sum())(v))
show("pow", mx.grad(lambda a, b: (a ** b).sum(), argnums=(0, 1))(mx.array([0.5, 2.0, 1.5]), mx.array([2.0, 0.5, 3.0])))
show("int_index_reshape", mx.grad(lambda a: a.reshape(2, 10)[1, mx.array([0, 9])].sum())(A[:5].reshape(-1)))
show("broadcast", mx.grad(lambda a, b: (a + b).sum(), argnums=(0, 1))(mx.ones((3, 1)), mx.ones((1, 4))))
show("concat_split", mx.grad(lambda a: sum((p * (i + 1)).sum() for i, p in enumerate(mx.split(mx.concatenate([a, a * 2]), 3))))(mx.ones((3,))))
