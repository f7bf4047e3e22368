import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class SwitchGLU(nn.Module):
    """Experts stored as stacked weights; tokens dispatched with gather_mm."""

    def __init__(self, dims, hidden, num_experts):
        super().__init__()
        scale = dims ** -0.5
        self.w_gate = mx.random.uniform(-scale, scale, (num_experts, dims, hidden))
        self.w_up = mx.random.uniform(-scale, scale, (num_experts, dims, hidden))
        self.w_down = mx.random.uniform(-hidden ** -0.5, hidden ** -0.5, (num_experts, hidden, dims))

    def __call__(self, x, indices):
        # x: (N, dims), indices: (N, k)
        x = mx.expand_dims(x, (-2, -3))  # (N, 1, 1, dims)
        g = mx.gather_mm(x, self.w_gate, rhs_indices=indices)
        u = mx.gather_mm(x, self.w_up, rhs_indices=indices)
        h = nn.silu(g) * u
        return mx.gather_mm(h, self.w_down, rhs_indices=indices).squeeze(-2)  # (N, k, dims)


class MoELayer(nn.Module):
    def __init__(self, dims, hidden, num_experts, k):
        super().__init__()
        self.k = k
        self.num_experts = num_experts
        self.router = nn.Linear(dims, num_experts, bias=False)
        self.experts = SwitchGLU(dims, hidden, num_experts)

    def __call__(self, x):
        logits = self.router(x)
        probs = mx.softmax(logits, axis=-1, precise=True)
        inds = mx.stop_gradient(mx.argpartition(-logits, kth=self.k - 1, axis=-1)[..., : self.k])
        scores = mx.take_along_axis(probs, inds, axis=-1)
        scores = scores / scores.sum(-1, keepdims=True)
        y = self.experts(x, inds)
        out = (y * scores[..., None]).sum(axis=-2)
        # Switch-transformer load balancing: fraction routed * mean prob per expert
        one_hot = (inds[..., None] == mx.arange(self.num_experts)).astype(x.dtype).sum(-2)
        frac = one_hot.mean(0) / self.k
        aux = self.num_experts * mx.sum(frac * probs.mean(0))
        return out, aux, inds


class Model(nn.Module):
    def __init__(self, dims, classes, num_experts=4, k=2):
        super().__init__()
        self.inp = nn.Linear(8, dims)
        self.norm = nn.RMSNorm(dims)
        self.moe = MoELayer(dims, 2 * dims, num_experts, k)
        self.out = nn.Linear(dims, classes)

    def __call__(self, x):
        h = self.inp(x)
        m, aux, inds = self.moe(self.norm(h))
        return self.out(h + m), aux, inds


def reference_moe(layer, x):
    """Loop over experts with take-based dispatch: must agree with gather_mm."""
    logits = layer.router(x)
    probs = mx.softmax(logits, axis=-1)
    order = mx.argsort(-logits, axis=-1)[:, : layer.k]
    top_vals, _ = mx.topk(probs, layer.k, axis=-1), None
    w = mx.take_along_axis(probs, order, axis=-1)
    w = w / w.sum(-1, keepdims=True)
    out = mx.zeros_like(x)
    ex = layer.experts
    for e in range(layer.num_experts):
        h = nn.silu(x @ ex.w_gate[e]) * (x @ ex.w_up[e])
        y = h @ ex.w_down[e]
        gate = mx.sum(w * (order == e), axis=-1, keepdims=True)
        out = out + gate * y
    return out, top_vals


mx.random.seed(5)
N, classes = 64, 4
X = mx.random.normal((N, 8))
W = mx.random.normal((8, classes))
y = mx.argmax(X @ W + 0.3 * mx.random.normal((N, classes)), axis=1)

model = Model(16, classes)
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))

x0 = model.norm(model.inp(X[:6]))
fast, _, _ = model.moe(x0)
slow, top_vals = reference_moe(model.moe, x0)
print("dispatch diff below 1e-5:", mx.abs(fast - slow).max().item() < 1e-5, top_vals.shape)
print(f"moe out norm {mx.linalg.norm(fast).item():.5f}")


def loss_fn(model, X, y):
    logits, aux, _ = model(X)
    return nn.losses.cross_entropy(logits, y, reduction="mean") + 0.01 * aux, aux


optimizer = optim.AdamW(learning_rate=1e-2, weight_decay=0.01)
loss_and_grad = nn.value_and_grad(model, loss_fn)
for epoch in range(4):
    perm = mx.random.permutation(N)
    for s in range(0, N, 16):
        idx = perm[s : s + 16]
        (loss, aux), grads = loss_and_grad(model, X[idx], y[idx])
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
    print(f"epoch {epoch} loss {loss.item():.4f} aux {aux.item():.4f}")

logits, aux, inds = model(X)
counts = mx.sum(inds[..., None] == mx.arange(4), axis=(0, 1))
print("expert load", counts.tolist(), "total", counts.sum().item())
print(f"accuracy {mx.mean(mx.argmax(logits, 1) == y).item():.4f}")
