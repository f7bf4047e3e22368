import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

class MLP(nn.Module):
    def __init__(self, din, dh, dout):
        super().__init__()
        self.layers = [nn.Linear(din, dh), nn.Linear(dh, dh), nn.Linear(dh, dout)]
        self.norm = nn.LayerNorm(dh)
    def __call__(self, x):
        x = nn.relu(self.layers[0](x))
        x = self.norm(nn.gelu(self.layers[1](x)))
        return self.layers[2](x)

mx.random.seed(0)
X = mx.random.normal((256, 16))
W = mx.random.normal((16, 4))
y = mx.argmax(X @ W, axis=1)
model = MLP(16, 64, 4)
mx.eval(model.parameters())
opt = optim.AdamW(learning_rate=optim.cosine_decay(1e-2, 100))
def loss_fn(m, x, t):
    return nn.losses.cross_entropy(m(x), t, reduction="mean")
step = nn.value_and_grad(model, loss_fn)
for it in range(30):
    loss, grads = step(model, X, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if it % 10 == 0 or it == 29:
        print(it, f"{loss.item():.6f}")
acc = mx.mean(mx.argmax(model(X), axis=1) == y)
print("acc", f"{acc.item():.4f}", "params", sum(v.size for _, v in tree_flatten(model.parameters())))
