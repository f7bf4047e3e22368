"""mx.compile as training loops use it (shapeless, captured state via inputs/outputs,
recompiling on shape and dtype changes) with custom_function rules, checkpoint and
stop_gradient inside the compiled and differentiated code."""
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

mx.random.seed(2)

# trace counting: compile re-traces on a new shape/dtype unless shapeless
traces = []


def gelu_mlp(x, w):
    traces.append((tuple(x.shape), str(x.dtype)))
    return nn.gelu(x @ w).sum(axis=-1)


w = mx.random.normal((8, 4))
fixed = mx.compile(gelu_mlp)
for shape, dtype in [((3, 8), mx.float32), ((3, 8), mx.float32), ((5, 8), mx.float32), ((3, 8), mx.float16), ((3, 8), mx.float32)]:
    x = mx.random.normal(shape).astype(dtype)
    out = fixed(x, w.astype(dtype))
    print("fixed", out.shape, out.dtype, round(out.astype(mx.float32).sum().item(), 2))
print("fixed traces", len(traces))
traces.clear()
free = mx.compile(gelu_mlp, shapeless=True)
for n in [2, 7, 7, 11]:
    x = mx.random.normal((n, 8))
    out = free(x, w)
    ref = gelu_mlp(x, w)
    print("shapeless", out.shape, mx.allclose(out, ref, atol=1e-5).item())


# shapeless with broadcasting and reductions over the varying axis
@partial(mx.compile, shapeless=True)
def normalize(x):
    mu = x.mean(axis=0, keepdims=True)
    sd = mx.sqrt(((x - mu) ** 2).mean(axis=0, keepdims=True) + 1e-5)
    return (x - mu) / sd


for n in [4, 9]:
    z = normalize(mx.random.normal((n, 3)) * 3 + 1)
    print("normalize", z.shape, round(mx.abs(z.mean(0)).max().item(), 4), round(z.std(axis=0).mean().item(), 3))

# captured state: a model and optimizer updated inside a compiled step
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
mx.eval(model.parameters())
opt = optim.Adam(learning_rate=0.02)
state = [model.state, opt.state, mx.random.state]
X = mx.random.normal((64, 6))
y = (X[:, :1] * 2 - X[:, 1:2]) + 0.1 * mx.random.normal((64, 1))


def mse(model, x, t):
    return nn.losses.mse_loss(model(x), t)


@partial(mx.compile, inputs=state, outputs=state)
def step(x, t):
    loss, grads = nn.value_and_grad(model, mse)(model, x, t)
    grads = optim.clip_grad_norm(grads, 1.0)[0]
    opt.update(model, grads)
    return loss


for it in range(30):
    idx = mx.random.randint(0, 64, (16,))
    loss = step(X[idx], y[idx])
    mx.eval(state)
    if it % 10 == 9:
        print("step", it, round(loss.item(), 3))
print("full loss", round(mse(model, X, y).item(), 3), "adam step", opt.state["step"].item())


# a compiled function that writes captured arrays (outputs only)
acc = {"count": mx.array(0), "total": mx.array(0.0)}


@partial(mx.compile, inputs=acc, outputs=acc)
def accumulate(v):
    acc["count"] = acc["count"] + v.size
    acc["total"] = acc["total"] + v.sum()
    return acc["total"] / acc["count"]


for v in [mx.arange(4.0), mx.ones((3,)), mx.full((5,), 2.0)]:
    m = accumulate(v)
print("running mean", round(m.item(), 4), acc["count"].item(), round(acc["total"].item(), 4))


# custom_function: vjp, jvp and vmap overrides used under compile/grad/vmap
@mx.custom_function
def safe_log1p(x):
    return mx.log1p(mx.maximum(x, 0.0))


@safe_log1p.vjp
def _(primals, cotangent, output):
    x = primals
    return cotangent / (1 + mx.abs(x))


@safe_log1p.jvp
def _(primals, tangents):
    x, t = primals, tangents
    return t / (1 + mx.abs(x))


@safe_log1p.vmap
def _(inputs, axes):
    x, ax = inputs, axes
    return safe_log1p(mx.moveaxis(x, ax, 0) if ax is not None else x), 0


v = mx.array([-2.0, 0.0, 0.5, 3.0])
print("custom value", [round(t, 4) for t in safe_log1p(v).tolist()])
print("custom grad", [round(t, 4) for t in mx.grad(lambda x: safe_log1p(x).sum())(v).tolist()])
print("custom grad compiled", [round(t, 4) for t in mx.compile(mx.grad(lambda x: safe_log1p(x).sum()))(v).tolist()])
print("custom jvp", [round(t, 4) for t in mx.jvp(safe_log1p, [v], [mx.ones(4)])[1][0].tolist()])
mv = mx.vmap(safe_log1p, in_axes=1)(mx.stack([v, -v]))
print("custom vmap", mv.shape, [round(t, 4) for t in mv.reshape(-1).tolist()])


# multi-input custom_function with a keyword-free tuple output and its vjp
@mx.custom_function
def scaled_pair(x, s):
    return x * s, (x * s).sum()


@scaled_pair.vjp
def _(primals, cotangents, outputs):
    x, s = primals
    cx, ctot = cotangents
    return (cx + ctot) * s * 0.5, ((cx + ctot) * x).sum(axis=0)


xs = mx.random.normal((3, 2))
sc = mx.array([2.0, -1.0])
gx, gs = mx.grad(lambda x, s: scaled_pair(x, s)[0].sum() + scaled_pair(x, s)[1], argnums=(0, 1))(xs, sc)
print("pair grad", gx.shape, gs.shape, round(gx.sum().item(), 4), round(gs.sum().item(), 4))

# checkpoint: same gradients as the plain block, inside a compiled value_and_grad
block = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 5))
mx.eval(block.parameters())
xin = mx.random.normal((4, 5))


def deep(params, x):
    block.update(params)
    for _ in range(3):
        x = mx.checkpoint(block)(x) + x
    return x.sum()


def deep_plain(params, x):
    block.update(params)
    for _ in range(3):
        x = block(x) + x
    return x.sum()


p0 = block.trainable_parameters()
v1, g1 = mx.value_and_grad(deep)(p0, xin)
v2, g2 = mx.compile(mx.value_and_grad(deep_plain))(p0, xin)
print("checkpoint", round(v1.item(), 4), round(v2.item(), 4),
      [(k, round(mx.linalg.norm(a).item(), 3), round(mx.linalg.norm(b).item(), 3)) for (k, a), (_, b) in zip(tree_flatten(g1), tree_flatten(g2))])
ck = mx.checkpoint(lambda a, b: mx.sin(a) * b)
print("checkpoint fn grad", [round(t, 4) for t in mx.grad(lambda a, b: ck(a, b).sum(), argnums=1)(v, v).tolist()])

# stop_gradient: a target network / straight-through estimator
wt = mx.array([0.5, -1.0, 2.0])
def td_loss(w, x):
    target = mx.stop_gradient(x @ w) * 0.9 + 1.0
    return mx.square(x @ w - target).mean()


xs = mx.random.normal((6, 3))
print("td grad", [round(t, 4) for t in mx.grad(td_loss)(wt, xs).tolist()])
ste = lambda z: z + mx.stop_gradient(mx.round(z) - z)
print("ste", [round(t, 4) for t in ste(v * 0.7).tolist()], mx.grad(lambda z: (ste(z) * z).sum())(v).tolist())
