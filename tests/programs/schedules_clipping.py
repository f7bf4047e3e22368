import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map

# Learning-rate schedules on their own
warmup = optim.linear_schedule(0.0, 1e-2, steps=5)
cosine = optim.cosine_decay(1e-2, decay_steps=20, end=1e-4)
lr_schedule = optim.join_schedules([warmup, cosine], [5])
print("lr", " ".join(f"{lr_schedule(i).item():.6f}" for i in [0, 2, 4, 5, 6, 15, 24, 30]))
step_sched = optim.step_decay(0.1, 0.5, 4)
exp_sched = optim.exponential_decay(0.1, 0.9)
print("step", f"{step_sched(mx.array(9)).item():.6f}", "exp", f"{exp_sched(mx.array(7)).item():.6f}")


class MLP(nn.Module):
    def __init__(self, num_layers, input_dim, hidden_dim, output_dim):
        super().__init__()
        layer_sizes = [input_dim] + [hidden_dim] * num_layers + [output_dim]
        self.layers = [
            nn.Linear(idim, odim)
            for idim, odim in zip(layer_sizes[:-1], layer_sizes[1:])
        ]

    def __call__(self, x):
        for l in self.layers[:-1]:
            x = nn.silu(l(x))
        return self.layers[-1](x)


mx.random.seed(11)
X = mx.random.uniform(-1, 1, (128, 10))
w_true = mx.random.normal((10, 1))
y = mx.sin(X @ w_true) + 0.05 * mx.random.normal((128, 1))

model = MLP(2, 10, 32, 1)
mx.eval(model.parameters())
optimizer = optim.AdamW(learning_rate=lr_schedule, weight_decay=0.01)


def loss_fn(model, X, y):
    return nn.losses.mse_loss(model(X), y)


loss_and_grad_fn = nn.value_and_grad(model, loss_fn)
for it in range(25):
    loss, grads = loss_and_grad_fn(model, X, y)
    grads, total_norm = optim.clip_grad_norm(grads, max_norm=0.5)
    clipped_norm = mx.sqrt(sum(mx.sum(g * g) for _, g in tree_flatten(grads)))
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state)
    if it % 6 == 0 or it == 24:
        print(f"it {it} loss {loss.item():.5f} norm {total_norm.item():.5f} "
              f"clipped {clipped_norm.item():.5f} lr {optimizer.learning_rate.item():.6f}")
print("step", optimizer.step.item(), optimizer.state["step"].dtype)

# Elementwise value clipping instead of norm clipping, with plain SGD on a second copy
model2 = MLP(2, 10, 32, 1)
mx.eval(model2.parameters())
sgd = optim.SGD(learning_rate=optim.linear_schedule(0.1, 0.01, 10))
lg2 = nn.value_and_grad(model2, loss_fn)
for it in range(10):
    loss, grads = lg2(model2, X, y)
    grads = tree_map(lambda g: mx.clip(g, -0.05, 0.05), grads)
    sgd.update(model2, grads)
    mx.eval(model2.parameters(), sgd.state)
print("sgd loss", f"{loss_fn(model2, X, y).item():.5f}", "lr", f"{sgd.learning_rate.item():.5f}")
