"""Every activation (function and class) and every loss with its options, values and grads."""
import mlx.core as mx
import mlx.nn as nn

mx.random.seed(7)
x = mx.random.normal((4, 6)) * 2
fns = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "gelu", "gelu_approx",
       "gelu_fast_approx", "mish", "softplus", "softsign", "log_sigmoid", "sigmoid", "hard_tanh",
       "hardswish", "hard_shrink", "softshrink", "tanh", "log_softmax", "softmax", "softmin", "relu2", "glu"]
for name in fns:
    f = getattr(nn, name)
    y = f(x)
    def weighted(v):
        out = f(v)
        return (out * mx.arange(out.size).reshape(out.shape) / out.size).sum()
    g = mx.grad(weighted)(x)
    print(f"{name:16s}", y.shape, f"{y.sum().item():.4f}", f"{g.sum().item():.4f}")
print("leaky", f"{nn.leaky_relu(x, 0.2).sum().item():.4f}", "elu", f"{nn.elu(x, 0.5).sum().item():.4f}",
      "celu", f"{nn.celu(x, 2.0).sum().item():.4f}", "hardshrink", f"{nn.hard_shrink(x, 1.0).sum().item():.4f}",
      "softshrink", f"{nn.softshrink(x, 0.7).sum().item():.4f}", "step", f"{nn.step(x, 0.5).sum().item():.1f}")
print("hard_tanh", f"{nn.hard_tanh(x, -0.5, 1.5).sum().item():.4f}", "glu0", nn.glu(x, axis=0).shape,
      "softmax0", f"{nn.softmax(x, axis=0)[0].sum().item():.5f}", "logsm0", f"{nn.log_softmax(x, axis=0).sum().item():.4f}")
classes = [nn.ReLU(), nn.ReLU6(), nn.LeakyReLU(0.3), nn.ELU(0.7), nn.SELU(), nn.CELU(1.5), nn.SiLU(),
           nn.GELU(), nn.GELU("precise"), nn.GELU("tanh"), nn.GELU("fast"), nn.Mish(), nn.Softplus(),
           nn.Softsign(), nn.LogSigmoid(), nn.Sigmoid(), nn.HardTanh(), nn.Hardswish(), nn.Tanh(),
           nn.LogSoftmax(), nn.Softmax(), nn.Softmin(), nn.ReLU2(), nn.GLU(0), nn.Step(0.2),
           nn.HardShrink(0.8), nn.Softshrink(0.3), nn.PReLU(6, init=0.1)]
for c in classes:
    y = c(x)
    print(f"{type(c).__name__:12s}", y.shape, f"{y.sum().item():.4f}")
pr = nn.PReLU(6)
g = nn.value_and_grad(pr, lambda v: pr(v).sum())(x)[1]
print("prelu grad", f"{g['weight'].sum().item():.4f}", g["weight"].shape)

L = nn.losses
logits = mx.random.normal((5, 4)) * 2
labels = mx.array([0, 3, 1, 2, 3])
probs = mx.softmax(mx.random.normal((5, 4)), axis=-1)
for red in ["none", "mean", "sum"]:
    print("ce", red, f"{mx.sum(L.cross_entropy(logits, labels, reduction=red)).item():.5f}",
          f"{mx.sum(L.cross_entropy(logits, probs, reduction=red)).item():.5f}")
print("ce axis0", f"{L.cross_entropy(logits.T, labels, axis=0).sum().item():.5f}",
      "ls", f"{L.cross_entropy(logits, labels, label_smoothing=0.2, weights=mx.arange(5) / 5).sum().item():.5f}")
t = (mx.random.uniform(shape=(5, 4)) > 0.5).astype(mx.float32)
p = mx.sigmoid(logits)
w = mx.random.uniform(shape=(5, 4))
print("bce", f"{L.binary_cross_entropy(logits, t).mean().item():.5f}",
      f"{L.binary_cross_entropy(p, t, with_logits=False, reduction='mean').item():.5f}",
      f"{L.binary_cross_entropy(logits, t, weights=w, reduction='sum').item():.5f}")
a, b, c = mx.random.normal((3, 6, 8))
print("triplet", f"{L.triplet_loss(a, b, c).sum().item():.5f}",
      f"{L.triplet_loss(a, b, c, margin=2.0, p=1, eps=1e-3, reduction='mean').item():.5f}")
y = mx.where(mx.random.uniform(shape=(6,)) > 0.5, 1.0, -1.0)
print("hinge", f"{L.hinge_loss(a[:, 0], y, reduction='mean').item():.5f}",
      "huber", f"{L.huber_loss(a, b, delta=0.5, reduction='sum').item():.5f}",
      "smooth_l1", f"{L.smooth_l1_loss(a, b, beta=0.3, reduction='mean').item():.5f}",
      "log_cosh", f"{L.log_cosh_loss(a, b, reduction='sum').item():.5f}")
print("cos", f"{L.cosine_similarity_loss(a, b, axis=1, eps=1e-6).sum().item():.5f}",
      f"{L.cosine_similarity_loss(a, b, reduction='mean').item():.5f}",
      "margin", f"{L.margin_ranking_loss(a[:, 0], b[:, 0], y, margin=0.3, reduction='sum').item():.5f}")
var = mx.exp(c)
print("gnll", f"{L.gaussian_nll_loss(a, b, var).item():.5f}",
      f"{L.gaussian_nll_loss(a, b, var, full=True, eps=1e-3, reduction='sum').item():.5f}")
lp = nn.log_softmax(logits)
lq = nn.log_softmax(mx.random.normal((5, 4)))
print("kl", f"{L.kl_div_loss(lp, lq).sum().item():.5f}", f"{L.kl_div_loss(lp, lq, axis=0, reduction='mean').item():.5f}",
      "nll", f"{L.nll_loss(lp, labels).sum().item():.5f}", f"{L.nll_loss(lp.T, labels, axis=0, reduction='sum').item():.5f}")
print("l1", f"{L.l1_loss(a, b).item():.5f}", f"{L.l1_loss(a, b, reduction='sum').item():.5f}",
      "mse", f"{L.mse_loss(a, b, reduction='none').shape}", f"{L.mse_loss(a, b, reduction='sum').item():.5f}")
for fn in [lambda z: L.cross_entropy(z, probs, axis=-1).mean(),
           lambda z: L.binary_cross_entropy(z, t, weights=w).mean(),
           lambda z: L.huber_loss(z, logits * 0.5, delta=0.3).mean(),
           lambda z: L.smooth_l1_loss(z, logits * 0.5, beta=0.3),
           lambda z: L.log_cosh_loss(z, logits * 0.5, reduction="mean"),
           lambda z: L.gaussian_nll_loss(z, logits * 0.5, mx.ones_like(z) * 0.3, full=True)]:
    g = mx.grad(fn)(logits)
    print("grad", f"{g.sum().item():.5f}", f"{mx.abs(g).sum().item():.5f}")
try:
    L.mse_loss(a, b, reduction="avg")
except ValueError as e:
    print("error", e)
try:
    L.cross_entropy(logits, mx.array([0, 1]))
except ValueError as e:
    print("error", e)
