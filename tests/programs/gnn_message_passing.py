import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


def segment_sum(values, segment_ids, num_segments):
    out = mx.zeros((num_segments,) + values.shape[1:], dtype=values.dtype)
    return out.at[segment_ids].add(values)


def segment_max(values, segment_ids, num_segments):
    out = mx.full((num_segments,) + values.shape[1:], -mx.inf, dtype=values.dtype)
    return out.at[segment_ids].maximum(values)


def edge_softmax(scores, dst, num_nodes):
    m = mx.stop_gradient(segment_max(scores, dst, num_nodes))
    e = mx.exp(scores - mx.take(m, dst, axis=0))
    denom = segment_sum(e, dst, num_nodes)
    return e / mx.take(denom, dst, axis=0)


class GCNLayer(nn.Module):
    def __init__(self, in_dims, out_dims):
        super().__init__()
        self.linear = nn.Linear(in_dims, out_dims)

    def __call__(self, x, src, dst, norm):
        h = self.linear(x)
        msg = h[src] * norm[:, None]
        return segment_sum(msg, dst, x.shape[0])


class GATLayer(nn.Module):
    def __init__(self, in_dims, out_dims, heads):
        super().__init__()
        self.heads = heads
        self.out_dims = out_dims
        self.proj = nn.Linear(in_dims, heads * out_dims, bias=False)
        self.att_src = mx.random.normal((heads, out_dims)) * 0.1
        self.att_dst = mx.random.normal((heads, out_dims)) * 0.1

    def __call__(self, x, src, dst):
        n = x.shape[0]
        h = self.proj(x).reshape(n, self.heads, self.out_dims)
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        scores = nn.leaky_relu(mx.take(a_src, src, axis=0) + mx.take(a_dst, dst, axis=0), 0.2)
        alpha = edge_softmax(scores, dst, n)
        out = segment_sum(h[src] * alpha[..., None], dst, n)
        return out.mean(axis=1), alpha


class GNN(nn.Module):
    def __init__(self, in_dims, hidden, classes):
        super().__init__()
        self.gcn = GCNLayer(in_dims, hidden)
        self.gat = GATLayer(hidden, hidden, heads=2)
        self.head = nn.Linear(hidden, classes)
        self.dropout = nn.Dropout(0.1)

    def __call__(self, x, src, dst, norm):
        h = nn.relu(self.gcn(x, src, dst, norm))
        h = self.dropout(h)
        h, _ = self.gat(h, src, dst)
        return self.head(nn.elu(h))


mx.random.seed(11)
num_nodes, num_classes, feat = 40, 3, 6
labels = mx.random.randint(0, num_classes, (num_nodes,))
centres = mx.random.normal((num_classes, feat))
x = centres[labels] + 0.8 * mx.random.normal((num_nodes, feat))

src_rand = mx.random.randint(0, num_nodes, (160,))
dst_rand = mx.random.randint(0, num_nodes, (160,))
same = labels[src_rand] == labels[dst_rand]
keep = mx.array([i for i, s in enumerate(same.tolist()) if s or i % 4 == 0])
loops = mx.arange(num_nodes)
src = mx.concatenate([src_rand[keep], dst_rand[keep], loops])
dst = mx.concatenate([dst_rand[keep], src_rand[keep], loops])
deg = segment_sum(mx.ones(dst.shape), dst, num_nodes)
norm = mx.rsqrt(deg[src]) * mx.rsqrt(deg[dst])
print("edges", src.size, "max degree", int(deg.max().item()), f"norm {norm.sum().item():.4f}")

train_mask = (mx.arange(num_nodes) % 4) != 0
test_mask = mx.logical_not(train_mask)

model = GNN(feat, 16, num_classes)
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))


def loss_fn(model, x, y):
    logits = model(x, src, dst, norm)
    ce = nn.losses.cross_entropy(logits, y, reduction="none")
    return mx.sum(ce * train_mask) / train_mask.sum()


def accuracy(model, mask):
    pred = mx.argmax(model(x, src, dst, norm), axis=1)
    return (mx.sum((pred == labels) * mask) / mask.sum()).item()


optimizer = optim.Adam(learning_rate=1e-2)
loss_and_grad = nn.value_and_grad(model, loss_fn)
model.train()
for epoch in range(20):
    loss, grads = loss_and_grad(model, x, labels)
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state)
    if epoch % 5 == 4:
        print(f"epoch {epoch} loss {loss.item():.4f}")

model.eval()
print(f"train acc {accuracy(model, train_mask):.4f} test acc {accuracy(model, test_mask):.4f}")
_, alpha = model.gat(nn.relu(model.gcn(x, src, dst, norm)), src, dst)
incoming = segment_sum(alpha, dst, num_nodes)
print("alpha", alpha.shape, f"sum per node {incoming.mean().item():.5f}", f"max {alpha.max().item():.4f}")
gnorm = sum(mx.sum(g * g).item() for _, g in tree_flatten(grads)) ** 0.5
print(f"last grad norm {gnorm:.4f}")
