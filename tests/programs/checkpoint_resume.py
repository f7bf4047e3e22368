"""Checkpoint and resume a compiled training run: model weights and optimizer state saved with
tree_flatten (safetensors with metadata, and npz), restored into fresh objects with
tree_unflatten, and training continues exactly as if never interrupted."""
import os
import tempfile
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_unflatten


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.hidden = nn.Linear(6, 24)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(24, 2)

    def __call__(self, x):
        return self.head(self.drop(nn.silu(self.hidden(self.norm(x)))))


mx.random.seed(3)
X = mx.random.normal((96, 6))
W = mx.random.normal((6, 2))
Y = mx.tanh(X @ W) + 0.05 * mx.random.normal((96, 2))


def loss_fn(model, x, y):
    return nn.losses.smooth_l1_loss(model(x), y, beta=0.5, reduction="mean")


def fresh():
    mx.random.seed(11)
    model = Regressor()
    schedule = optim.join_schedules([optim.linear_schedule(0.0, 3e-2, 3), optim.cosine_decay(3e-2, 20)], [3])
    opt = optim.AdamW(learning_rate=schedule, weight_decay=0.05)
    opt.init(model.trainable_parameters())
    return model, opt


def train(model, opt, first, last):
    state = [model.state, opt.state, mx.random.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
        grads, norm = optim.clip_grad_norm(grads, max_norm=1.0)
        opt.update(model, grads)
        return loss, norm

    model.train()
    out = []
    for i in range(first, last):
        mx.random.seed(1000 + i)  # per-step dropout masks: a resumed run draws the same ones
        idx = mx.random.permutation(96, key=mx.random.key(100 + i))[:32]
        loss, norm = step(X[idx], Y[idx])
        mx.eval(state)
        out.append((loss.item(), norm.item()))
    return out


# uninterrupted reference run
mx.random.seed(5)
model, opt = fresh()
mx.random.seed(5)
reference = train(model, opt, 0, 12)
model.eval()
ref_pred = model(X[:4])
print("reference", [f"{l:.5f}" for l, _ in reference[::3]], f"{reference[-1][1]:.4f}")

# the same run, interrupted after 6 steps
model, opt = fresh()
mx.random.seed(5)
first = train(model, opt, 0, 6)
tmp = tempfile.mkdtemp()
model.save_weights(os.path.join(tmp, "model.safetensors"))
opt_flat = dict(tree_flatten(opt.state))
mx.save_safetensors(os.path.join(tmp, "optimizer.safetensors"), opt_flat,
                    metadata={"step": str(opt.step.item()), "format": "mlx"})
mx.savez(os.path.join(tmp, "progress.npz"), step=mx.array(6), losses=mx.array([l for l, _ in first]))
print("saved", sorted(os.listdir(tmp)), len(opt_flat), opt.step.item(), f"{opt.learning_rate.item():.6f}")
print("state keys", sorted(opt_flat)[:4])

# resume into brand new objects
model2, opt2 = fresh()
model2.load_weights(os.path.join(tmp, "model.safetensors"))
loaded, meta = mx.load(os.path.join(tmp, "optimizer.safetensors"), return_metadata=True)
opt2.state = tree_unflatten(list(loaded.items()))
print("meta", meta["step"], meta["format"], opt2.step.item(), opt2.step.dtype, loaded["step"].dtype)
print("restored equal", all(mx.array_equal(opt_flat[k], v).item() for k, v in tree_flatten(opt2.state)),
      len(tree_flatten(opt2.state)))
progress = mx.load(os.path.join(tmp, "progress.npz"))
start = progress["step"].item()
print("progress", start, progress["losses"].shape, f"{progress['losses'][-1].item():.5f}")
rest = train(model2, opt2, start, 12)
resumed = first + rest
print("resumed", [f"{l:.5f}" for l, _ in resumed[::3]], f"{resumed[-1][1]:.4f}")
print("identical", max(abs(a[0] - b[0]) for a, b in zip(reference, resumed)) < 1e-6)
model2.eval()
print("pred", f"{mx.abs(model2(X[:4]) - ref_pred).max().item():.6f}", model2(X[:4]).shape)

# weights as npz through tree_flatten, and a partial restore of the head only
flat = tree_flatten(model2.parameters())
mx.savez(os.path.join(tmp, "weights.npz"), **dict(flat))
npz = mx.load(os.path.join(tmp, "weights.npz"))
print("npz", len(npz), sorted(npz)[:3], npz["hidden.weight"].shape)
model3, _ = fresh()
model3.load_weights([(k, v) for k, v in npz.items() if k.startswith("head.")], strict=False)
model3.eval()
print("head only", f"{mx.abs(model3.head.weight - model2.head.weight).max().item():.6f}",
      f"{mx.abs(model3.hidden.weight - model2.hidden.weight).max().item() > 0}")
halved = tree_map(lambda p: p * 0.5, model3.parameters())
model3.update(halved)
print("halved norm", f"{mx.sqrt(sum((v * v).sum() for _, v in tree_flatten(model3.parameters()))).item():.5f}")
