"""grad / value_and_grad / vjp / jvp / vmap over the argument shapes users pass: argnums tuples
and argnames, aux outputs, nested dict/list/tuple parameter trees, in_axes/out_axes trees."""
import mlx.core as mx
from mlx.utils import tree_flatten, tree_map

mx.random.seed(7)


def fmt(tree):
    return [(k, tuple(v.shape), round(v.sum().item(), 4)) for k, v in tree_flatten(tree)]


params = {
    "enc": [{"w": mx.random.normal((4, 6)) * 0.3, "b": mx.zeros((6,))},
            {"w": mx.random.normal((6, 3)) * 0.3, "b": mx.ones((3,)) * 0.1}],
    "scale": (mx.array(1.5), mx.array([0.5, -0.5, 1.0])),
}
X = mx.random.normal((10, 4))
Y = mx.random.normal((10, 3))


def forward(p, x):
    h = x
    for layer in p["enc"]:
        h = mx.tanh(h @ layer["w"] + layer["b"])
    return h * p["scale"][0] + p["scale"][1]


def loss_aux(p, x, y, *, weight=1.0):
    pred = forward(p, x)
    err = mx.square(pred - y).mean(axis=0)
    return (err * weight).sum(), {"per_dim": err, "pred_mean": pred.mean()}


(val, aux), g = mx.value_and_grad(loss_aux)(params, X, Y)
print("loss", round(val.item(), 4), "aux", [round(v, 4) for v in aux["per_dim"].tolist()], round(aux["pred_mean"].item(), 4))
print("grad tree", fmt(g))
print("grad types", type(g["enc"]).__name__, type(g["scale"]).__name__)

# argnums tuple: grads w.r.t. params and data together
vg = mx.value_and_grad(lambda p, x, y: loss_aux(p, x, y)[0], argnums=(0, 1))
v2, (gp, gx) = vg(params, X, Y)
print("argnums", round(v2.item(), 4), gx.shape, round(mx.linalg.norm(gx).item(), 4), len(tree_flatten(gp)))

# argnames: gradient w.r.t. a keyword argument
def weighted(p, x, y, *, weight):
    return loss_aux(p, x, y, weight=weight)[0]


out = mx.grad(weighted, argnums=[], argnames=["weight"])(params, X, Y, weight=mx.array([1.0, 2.0, 0.5]))
print("argnames only", type(out).__name__, len(out), sorted(out[1]), [round(v, 4) for v in out[1]["weight"].tolist()])
pos, kw = mx.grad(weighted, argnums=1, argnames="weight")(params, X, Y, weight=mx.array(2.0))
print("argnums+argnames", pos.shape, round(pos.sum().item(), 4), round(kw["weight"].item(), 4))
(v3, g3) = mx.value_and_grad(weighted, argnames="weight")(params, X, Y, weight=mx.array(1.0))
print("vag argnames", round(v3.item(), 4), len(g3), g3[0], round(g3[1]["weight"].item(), 4))

# a list of arrays as the differentiated argument, with a None-free nested tuple
def poly(coeffs, x):
    return sum(c * x ** i for i, c in enumerate(coeffs)).sum()


gc = mx.grad(poly)([mx.array(1.0), mx.array([0.5, 0.2]), mx.array(-0.3)], mx.array([1.0, 2.0]))
print("list grad", type(gc).__name__, [(tuple(c.shape), round(c.sum().item(), 4)) for c in gc])

# vjp / jvp with several primals, outputs and cotangents
def two_out(a, b):
    return a * b, mx.sin(a) + b ** 2


a = mx.array([0.5, -1.0, 2.0])
b = mx.array([1.5, 0.25, -0.75])
outs, vjps = mx.vjp(two_out, [a, b], [mx.ones(3), mx.array([1.0, 0.0, 2.0])])
print("vjp", len(outs), [round(v, 4) for v in vjps[0].tolist()], [round(v, 4) for v in vjps[1].tolist()])
outs, jvps = mx.jvp(two_out, [a, b], [mx.array([1.0, 0.0, 0.0]), mx.array([0.0, 1.0, 1.0])])
print("jvp", len(jvps), [round(v, 4) for v in jvps[0].tolist()], [round(v, 4) for v in jvps[1].tolist()])

# second derivatives: grad of grad, and a Hessian-vector product as jvp of grad
f = lambda x: (mx.sin(x) * x ** 2).sum()
d1 = mx.grad(f)
d2 = mx.grad(lambda x: d1(x).sum())
d3 = mx.grad(lambda x: d2(x).sum())
print("d1 d2 d3", [round(v, 4) for v in d1(a).tolist()], [round(v, 4) for v in d2(a).tolist()], [round(v, 4) for v in d3(a).tolist()])
w0 = mx.random.normal((4, 3)) * 0.5
loss_w = lambda w: mx.square(mx.tanh(X @ w) - Y).mean()
vec = mx.random.normal((4, 3))
_, (hv,) = mx.jvp(mx.grad(loss_w), [w0], [vec])
_, (hv2,) = mx.vjp(mx.grad(loss_w), [w0], [vec])
print("hvp", hv.shape, round(hv.sum().item(), 4), round(mx.abs(hv - hv2).max().item(), 4) < 1e-4)
H = mx.vmap(lambda e: mx.jvp(mx.grad(loss_w), [w0], [e.reshape(4, 3)])[1][0].reshape(-1))(mx.eye(12))
print("hessian", H.shape, round(mx.trace(H).item(), 4), round(mx.abs(H - H.T).max().item(), 4) < 1e-4)

# vmap with trees of axes
def affine(inp, p):
    return {"y": inp["x"] @ p["w"] + p["b"], "n": (inp["x"] ** 2).sum()}


batch = {"x": mx.random.normal((5, 4))}
pw = {"w": mx.random.normal((4, 2)), "b": mx.random.normal((2,))}
res = mx.vmap(affine, in_axes=({"x": 0}, None), out_axes={"y": 1, "n": 0})(batch, pw)
print("vmap trees", res["y"].shape, res["n"].shape, round(res["y"].sum().item(), 4), round(res["n"].sum().item(), 4))
res = mx.vmap(affine, in_axes=({"x": 1}, {"w": None, "b": 0}))({"x": batch["x"].T}, {"w": pw["w"], "b": mx.ones((5, 2))})
print("vmap axis1", res["y"].shape, round(res["y"].sum().item(), 4))
pairs = mx.vmap(lambda t: (t[0] * t[1], t[0] - t[1]), in_axes=(0, 1), out_axes=(0, 1))((mx.ones((3, 2)), mx.arange(6.0).reshape(2, 3)))
print("vmap tuple", pairs[0].shape, pairs[1].shape, round(pairs[0].sum().item(), 4), round(pairs[1].sum().item(), 4))

# nested vmap (pairwise distances) and vmap of grad with unbatched parameters
P = mx.random.normal((6, 3))
Q = mx.random.normal((4, 3))
D = mx.vmap(mx.vmap(lambda p, q: mx.sqrt(mx.square(p - q).sum()), in_axes=(None, 0)), in_axes=(0, None))(P, Q)
print("pairwise", D.shape, round(D.sum().item(), 4))
per = mx.vmap(mx.grad(lambda w, x, y: mx.square(mx.tanh(x @ w) - y).sum()), in_axes=(None, 0, 0))(w0, X, Y)
print("per-example", per.shape, round(per.sum().item(), 4), mx.allclose(per.mean(0) / 3, mx.grad(loss_w)(w0), atol=1e-5).item())
jac = mx.vmap(lambda ct: mx.vjp(lambda v: mx.softmax(v), [a], [ct])[1][0])(mx.eye(3))
print("softmax jacobian", jac.shape, mx.abs(jac.sum(axis=1)).max().item() < 1e-6, round(mx.trace(jac).item(), 4))
