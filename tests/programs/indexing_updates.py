"""Indexing idioms from real MLX code: a KV cache filled by slice assignment, scatter-add
histograms with .at[], top-k masking with mx.where, gathers with integer arrays, negative
steps, None/Ellipsis, and a small embedding-bag model trained on them."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

mx.random.seed(7)

# views and basic indexing
x = mx.arange(60).reshape(3, 4, 5)
print(x[..., ::-2].shape, x[None, 1, :, -1], x[::-1, 1:3, None, 0].shape)
print(x[1, ::-1, 4], x[-1, -2:, ::2])
print(x[mx.array([2, 0]), :, mx.array([1, 3])])
print(x[:, [0, 3], 1:4:2])
print(x[1][2][3].item(), x[..., 0].sum().item(), x[0, 1:-1].tolist())

# a KV cache written step by step with slice assignment
B, H, T, D = 1, 2, 6, 4
keys = mx.zeros((B, H, T, D))
for t in range(T):
    k_t = mx.random.normal((B, H, 1, D))
    keys[:, :, t : t + 1, :] = k_t
print("cache", keys.shape, f"{keys.abs().sum().item():.4f}", f"{keys[0, 1, -1].sum().item():.5f}")
keys[..., ::2] = 0.0
keys[0, :, mx.array([0, 5])] *= 2
print("edited", f"{keys.sum().item():.5f}", f"{mx.abs(keys[0, 0, 0]).max().item():.5f}")

# scatter-add histogram and one-hot with .at
labels = mx.random.randint(0, 5, (40,))
hist = mx.zeros((5,), dtype=mx.int32).at[labels].add(1)
print("hist", hist, hist.sum().item())
onehot = mx.zeros((6, 5)).at[mx.arange(6), labels[:6]].add(1.0)
print(onehot)
scores = mx.zeros((5,)).at[labels].add(mx.linspace(0, 1, 40))
print("scores", [f"{v:.4f}" for v in scores.tolist()])
print(mx.ones((4,)).at[mx.array([1, 1, 3])].multiply(2.0), mx.zeros((3,)).at[1:].subtract(1.5))
print(mx.full((4,), 5.0).at[mx.array([0, 0, 2])].minimum(mx.array([3.0, 1.0, 9.0])))
print(mx.zeros((2, 3)).at[1, mx.array([0, 2])].maximum(mx.array([4.0, -1.0])))

# top-k masking with where
logits = mx.random.normal((2, 8))
kth = mx.sort(logits, axis=-1)[:, -3:-2]
masked = mx.where(logits < kth, -float("inf"), logits)
probs = mx.softmax(masked, axis=-1)
print("topk kept", (probs > 0).sum(axis=-1), [f"{v:.5f}" for v in probs.max(axis=-1).tolist()])
print(mx.where(mx.arange(6) % 2 == 0, mx.arange(6), -mx.arange(6)), mx.where(mx.array([True, False]), 1, 2.5))
print(mx.take(x, mx.array([4, 0]), axis=2)[0], mx.take_along_axis(x[0], mx.array([[0], [1], [2], [3]]), axis=1).T)
print(mx.argsort(mx.array([3.0, 1.0, 2.0]))[::-1], mx.sort(mx.argpartition(mx.array([5, 1, 4, 2]), kth=1)[:2]))

# an embedding bag trained on gathered rows
class Bag(nn.Module):
    def __init__(self, vocab, dim, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, classes)

    def __call__(self, tokens, mask):
        e = self.emb(tokens) * mask[..., None]
        return self.out(e.sum(axis=1) / mask.sum(axis=1, keepdims=True))


tokens = mx.random.randint(0, 30, (64, 7))
lengths = mx.random.randint(2, 8, (64,))
mask = (mx.arange(7)[None, :] < lengths[:, None]).astype(mx.float32)
target = (tokens[:, 0] % 3).astype(mx.int32)
model = Bag(30, 8, 3)
opt = optim.Adam(learning_rate=0.05)
loss_and_grad = nn.value_and_grad(model, lambda m, t, k, y: nn.losses.cross_entropy(m(t, k), y, reduction="mean"))
for step in range(12):
    loss, grads = loss_and_grad(model, tokens, mask, target)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if step % 4 == 0:
        print("step", step, f"{loss.item():.5f}")
acc = (model(tokens, mask).argmax(axis=-1) == target).mean()
print("acc", f"{acc.item():.4f}", "emb rows touched", (grads["emb"]["weight"].abs().sum(axis=1) > 0).sum().item())
