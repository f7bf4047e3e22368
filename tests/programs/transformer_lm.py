from functools import partial
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

class LM(nn.Module):
    def __init__(self, vocab, dims, heads, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, dims)
        self.tf = nn.TransformerEncoder(layers, dims, heads, norm_first=True)
        self.out = nn.Linear(dims, vocab)
    def __call__(self, x):
        T = x.shape[1]
        mask = nn.MultiHeadAttention.create_additive_causal_mask(T)
        return self.out(self.tf(self.emb(x), mask))

mx.random.seed(3)
model = LM(50, 32, 4, 2)
mx.eval(model.parameters())
opt = optim.SGD(learning_rate=0.1, momentum=0.9, weight_decay=1e-4)
data = mx.random.randint(0, 50, (8, 17))
def loss_fn(x, t):
    return nn.losses.cross_entropy(model(x), t).mean()
state = [model.state, opt.state]
@partial(mx.compile, inputs=state, outputs=state)
def step(x, t):
    loss, g = nn.value_and_grad(model, loss_fn)(x, t)
    g, norm = optim.clip_grad_norm(g, 1.0)
    opt.update(model, g)
    return loss, norm
model.train(False)
for i in range(12):
    loss, norm = step(data[:, :-1], data[:, 1:])
    mx.eval(state)
    if i % 4 == 0 or i == 11:
        print(i, f"{loss.item():.5f}", f"{norm.item():.5f}")
per_ex = mx.vmap(lambda r: (r * r).sum())(model.out.weight)
print("vmap", per_ex.shape, f"{per_ex.sum().item():.4f}")
