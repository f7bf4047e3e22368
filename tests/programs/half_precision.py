import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_map

mx.random.seed(6)
X = mx.random.normal((64, 8))
y = mx.sin(X[:, :1]) + 0.5 * X[:, 1:2]


def train(dtype, act, opt, steps=6):
    mx.random.seed(1)
    model = nn.Sequential(nn.Linear(8, 32), act, nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    model.set_dtype(dtype)
    mx.eval(model.parameters())
    loss_fn = lambda m, x, t: nn.losses.mse_loss(m(x), t)
    vg = nn.value_and_grad(model, loss_fn)
    xb, yb = X.astype(dtype), y.astype(dtype)
    losses = []
    for i in range(steps):
        loss, g = vg(model, xb, yb)
        opt.update(model, g)
        mx.eval(model.parameters(), opt.state)
        losses.append(loss.item())
    return model, losses, g


for dtype in (mx.bfloat16, mx.float16):
    # float16 needs a larger eps: 1e-8 is 0 in float16 and Adam's update becomes 0/0
    eps = 1e-8 if dtype == mx.bfloat16 else 1e-3
    for name, act, opt in [("gelu-adamw", nn.GELU(), optim.AdamW(learning_rate=3e-3, eps=eps)),
                           ("relu-sgd", nn.ReLU(), optim.SGD(learning_rate=0.1, momentum=0.9))]:
        model, losses, g = train(dtype, act, opt)
        gdt = {str(v.dtype) for v in g["layers"][0].values()}
        w = model.layers[-1].weight.astype(mx.float32)
        if dtype == mx.float16:
            print("float16", name, " ".join(f"{l:.4f}" for l in losses), sorted(gdt))
        else:  # one bfloat16 ulp is 0.4%: print what averages over many of them
            print("bfloat16", name, f"{w.abs().mean().item():.4f}", sorted(gdt))

# mixed precision: float32 master weights, bfloat16 compute
mx.random.seed(1)
master = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1))
mx.eval(master.parameters())
half = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1))
opt = optim.Adam(learning_rate=3e-3)
for i in range(5):
    half.update(tree_map(lambda p: p.astype(mx.bfloat16), master.parameters()))
    loss, g = nn.value_and_grad(half, lambda m, x, t: nn.losses.mse_loss(m(x), t))(
        half, X.astype(mx.bfloat16), y.astype(mx.bfloat16))
    opt.update(master, tree_map(lambda a: a.astype(mx.float32), g))
    mx.eval(master.parameters(), opt.state)
    print("mixed", i, loss.dtype)
print("master", master.layers[0].weight.dtype, f"{master.layers[0].weight.abs().mean().item():.5f}")
