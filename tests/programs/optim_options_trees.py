"""Optimizers with their non-default options, MultiOptimizer, schedules; parameter trees."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map

mx.random.seed(2)
X = mx.random.normal((64, 8))
Y = mx.random.normal((64, 3))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.blocks = [nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.GELU()) for _ in range(2)]
        self.head = nn.Linear(16, 3, bias=False)
        self.scale = mx.array([1.0])

    def __call__(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h) * self.scale


def make():
    mx.random.seed(9)
    m = Net()
    mx.eval(m.parameters())
    return m


def loss_fn(m, x, y):
    return nn.losses.mse_loss(m(x), y)


configs = {
    "sgd_nesterov": lambda: optim.SGD(0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "sgd_dampening": lambda: optim.SGD(0.05, momentum=0.8, dampening=0.3),
    "rmsprop": lambda: optim.RMSprop(1e-2, alpha=0.9, eps=1e-6),
    "adagrad": lambda: optim.Adagrad(0.1, eps=1e-4),
    "adadelta": lambda: optim.AdaDelta(0.5, rho=0.8, eps=1e-5),
    "adam_bc": lambda: optim.Adam(1e-2, betas=[0.8, 0.95], eps=1e-6, bias_correction=True),
    "adamw": lambda: optim.AdamW(1e-2, weight_decay=0.1, bias_correction=True),
    "adamax": lambda: optim.Adamax(2e-2, betas=[0.85, 0.99], eps=1e-7),
    "lion": lambda: optim.Lion(1e-3, betas=[0.95, 0.98], weight_decay=0.1),
    "adafactor_warm": lambda: optim.Adafactor(relative_step=True, warmup_init=True, scale_parameter=True),
    "adafactor_beta": lambda: optim.Adafactor(1e-2, relative_step=False, scale_parameter=False, beta_1=0.9, clip_threshold=0.5, decay_rate=-0.6, weight_decay=0.01),
    "muon": lambda: optim.Muon(0.02, momentum=0.9, weight_decay=0.01, nesterov=False, ns_steps=3),
    "sgd_sched": lambda: optim.SGD(optim.cosine_decay(0.1, 8, end=0.01), momentum=0.5),
    "adam_warm": lambda: optim.Adam(optim.join_schedules([optim.linear_schedule(1e-4, 1e-2, 3), optim.exponential_decay(1e-2, 0.8)], [3])),
    "rms_step": lambda: optim.RMSprop(optim.step_decay(1e-2, 0.5, 2)),
}
for name, factory in configs.items():
    model = make()
    opt = factory()
    vg = nn.value_and_grad(model, loss_fn)
    for i in range(8):
        loss, grads = vg(model, X, Y)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
    lr = opt.state.get("learning_rate", mx.array(0.0))
    print(f"{name:15s}", f"{loss_fn(model, X, Y).item():.5f}", f"lr {lr.item():.6f}", opt.state["step"].item())

# MultiOptimizer: Muon on 2D weights, AdamW on the rest
model = make()
opt = optim.MultiOptimizer([optim.Muon(0.02), optim.AdamW(1e-2)], [lambda path, p: p.ndim == 2])
vg = nn.value_and_grad(model, loss_fn)
for i in range(6):
    loss, grads = vg(model, X, Y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
print("multi", f"{loss_fn(model, X, Y).item():.5f}", len(opt.optimizers), sorted(opt.state.keys()))
opt.learning_rate = 0.001
print("multi lr", [o.learning_rate.item() for o in opt.optimizers])

# clip and init
g = vg(model, X, Y)[1]
clipped, norm = optim.clip_grad_norm(g, 0.1)
print("clip", f"{norm.item():.5f}", f"{sum((v ** 2).sum().item() for _, v in tree_flatten(clipped)) ** 0.5:.5f}")
o = optim.Adam(1e-3)
o.init(model.trainable_parameters())
print("init", sorted(o.state.keys()), o.state["blocks"][0]["layers"][1]["weight"]["m"].shape)

# parameter trees
model = make()
print([k for k, _ in tree_flatten(model.parameters())])
model.freeze(keys=["bias"])
print("no bias", len(tree_flatten(model.trainable_parameters())))
model.unfreeze()
model.blocks[0].freeze()
model.head.freeze(recurse=False)
print("frozen", [k for k, _ in tree_flatten(model.trainable_parameters())])
model.unfreeze()
model.freeze()
model.apply_to_modules(lambda k, m: m.unfreeze() if isinstance(m, nn.LayerNorm) else None)
print("ln only", [k for k, _ in tree_flatten(model.trainable_parameters())])
print("leaves", [k for k, _ in tree_flatten(model.leaf_modules())])
print("named", [k for k, _ in model.named_modules()])
print("children", list(model.children().keys()))
n = sum(v.size for _, v in tree_flatten(model.parameters()))
print("params", n, f"{sum(v.sum().item() for _, v in tree_flatten(model.parameters())):.5f}")
model.update(tree_map(lambda p: p * 0.5, model.parameters()))
print("halved", f"{model.embed.weight.abs().sum().item():.5f}", model.training)
model.eval()
print("eval", model.training, model.blocks[1].layers[0].training)
print(model)
