# gpu-rtol: 2e-2
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


def segment_sum(values, segment_ids, num_segments):
    out = mx.zeros((num_segments,) + values.shape[1:], dtype=values.dtype)
    return out.at[segment_ids].add(values)


def segment_softmax(scores, dst, num_nodes):
    m = mx.full((num_nodes,) + scores.shape[1:], -mx.inf, dtype=scores.dtype)
    m = mx.stop_gradient(m.at[dst].maximum(scores))
    e = mx.exp(scores - m[dst])
    return e / segment_sum(e, dst, num_nodes)[dst]


class GATLayer(nn.Module):
    def __init__(self, in_dims, out_dims, heads):
        super().__init__()
        self.heads, self.out_dims = heads, out_dims
        self.proj = nn.Linear(in_dims, heads * out_dims, bias=False)
        self.att = mx.random.normal((2, heads, out_dims)) * 0.2
        self.norm = nn.LayerNorm(out_dims)

    def __call__(self, x, src, dst):
        n = x.shape[0]
        h = self.proj(x).reshape(n, self.heads, self.out_dims)
        a_src = (h * self.att[0]).sum(-1)
        a_dst = (h * self.att[1]).sum(-1)
        alpha = segment_softmax(nn.leaky_relu(a_src[src] + a_dst[dst], 0.2), dst, n)
        out = segment_sum(h[src] * alpha[..., None], dst, n).mean(axis=1)
        return self.norm(out)


class Net(nn.Module):
    def __init__(self, feat, hidden, classes):
        super().__init__()
        self.inp = nn.Linear(feat, hidden)
        self.gat1 = GATLayer(hidden, hidden, 2)
        self.gat2 = GATLayer(hidden, hidden, 2)
        self.out = nn.Linear(hidden, classes)

    def __call__(self, x, src, dst):
        h = nn.gelu(self.inp(x))
        h = h + nn.silu(self.gat1(h, src, dst))
        h = h + nn.silu(self.gat2(h, src, dst))
        return self.out(h)


mx.random.seed(4)
N, F, C = 48, 8, 4
labels = mx.random.randint(0, C, (N,))
x = (mx.random.normal((C, F))[labels] + 0.7 * mx.random.normal((N, F))).astype(mx.float16)
src = mx.random.randint(0, N, (200,))
dst = mx.where(mx.random.uniform(shape=(200,)) < 0.7, mx.argsort(labels)[mx.random.randint(0, N, (200,))], mx.random.randint(0, N, (200,)))
src = mx.concatenate([src, mx.arange(N)])
dst = mx.concatenate([dst, mx.arange(N)])

model = Net(F, 16, C)
model.set_dtype(mx.float16)
mx.eval(model.parameters())
dtypes = {v.dtype for _, v in tree_flatten(model.parameters())}
print("params", sum(v.size for _, v in tree_flatten(model.parameters())), dtypes == {mx.float16})


def loss_fn(model, x, y):
    logits = model(x, src, dst)
    return nn.losses.cross_entropy(logits.astype(mx.float32), y, reduction="mean")


optimizer = optim.Adam(learning_rate=1e-2, eps=1e-3)
loss_and_grad = nn.value_and_grad(model, loss_fn)
for step in range(8):
    loss, grads = loss_and_grad(model, x, labels)
    if step == 0:
        print("grad dtype", grads["gat1"]["att"].dtype, f"{mx.abs(grads['gat1']['att']).sum().item():.3g}")
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state)
    if step % 2 == 1:
        print(f"step {step} loss {loss.item():.3f}")
logits = model(x, src, dst)
print("logits", logits.shape, logits.dtype, f"final loss {loss_fn(model, x, labels).item():.3f}")
