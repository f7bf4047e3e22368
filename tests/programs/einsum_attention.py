import math

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim


class EinsumAttention(nn.Module):
    def __init__(self, dims, heads):
        super().__init__()
        self.heads = heads
        self.wq = mx.random.normal((heads, dims, dims // heads)) * dims ** -0.5
        self.wk = mx.random.normal((heads, dims, dims // heads)) * dims ** -0.5
        self.wv = mx.random.normal((heads, dims, dims // heads)) * dims ** -0.5
        self.wo = mx.random.normal((heads, dims // heads, dims)) * dims ** -0.5

    def __call__(self, x, mask=None):
        q = mx.einsum("btd,hde->bhte", x, self.wq)
        k = mx.einsum("btd,hde->bhte", x, self.wk)
        v = mx.einsum("btd,hde->bhte", x, self.wv)
        s = mx.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s + mask
        a = mx.softmax(s, axis=-1)
        o = mx.einsum("bhqk,bhke->bhqe", a, v)
        return mx.einsum("bhte,hed->btd", o, self.wo)


class Bilinear(nn.Module):
    def __init__(self, d1, d2, out):
        super().__init__()
        self.W = mx.random.uniform(-0.2, 0.2, (out, d1, d2))
        self.b = mx.zeros((out,))

    def __call__(self, x1, x2):
        return mx.einsum("bi,oij,bj->bo", x1, self.W, x2) + self.b


mx.random.seed(31)
B, T, Dm, H = 4, 6, 16, 4
x = mx.random.normal((B, T, Dm))
attn = EinsumAttention(Dm, H)
mask = nn.MultiHeadAttention.create_additive_causal_mask(T)
out = attn(x, mask)
print("attn", out.shape, f"{out.sum().item():.5f}", f"{mx.abs(out).mean().item():.5f}")

# same numbers through matmul + mx.fast.scaled_dot_product_attention
q = (x[:, None] @ attn.wq)
k = (x[:, None] @ attn.wk)
v = (x[:, None] @ attn.wv)
o = mx.fast.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(Dm // H), mask="causal")
ref = (o @ attn.wo).sum(1)
print("sdpa agrees", mx.allclose(ref, out, atol=1e-5).item())

# a handful of einsum forms
a = mx.random.normal((5, 4))
b = mx.random.normal((4, 3))
print("trace", f"{mx.einsum('ii', a[:4]).item():.5f}", "diag", mx.einsum("ii->i", a[:4]).shape)
print("outer", mx.einsum("i,j->ij", a[0], b[:, 0]).shape, "matmul ok", mx.allclose(mx.einsum("ij,jk", a, b), a @ b).item())
print("batched", f"{mx.einsum('...ij,...jk->...ik', mx.ones((2, 5, 4)), b).sum().item():.4f}")
path, info = mx.einsum_path("ij,jk,kl->il", a, b, mx.random.normal((3, 2)))
print("path", path)

# train attention + bilinear head on a toy task: does token 0 match the last token?
model = nn.Module()
model.attn = EinsumAttention(Dm, H)
model.bil = Bilinear(Dm, Dm, 2)
emb = mx.random.normal((10, Dm))
toks = mx.random.randint(0, 10, (64, T))
toks[:32, -1] = toks[:32, 0]
labels = (toks[:, 0] == toks[:, -1]).astype(mx.int32)


def forward(m, toks):
    h = m.attn(emb[toks], mask)
    return m.bil(h[:, 0], h[:, -1])


def loss_fn(m, toks, labels):
    return nn.losses.cross_entropy(forward(m, toks), labels, reduction="mean")


opt = optim.Adam(learning_rate=5e-3)
vg = nn.value_and_grad(model, loss_fn)
for i in range(15):
    loss, g = vg(model, toks, labels)
    opt.update(model, g)
    mx.eval(model.parameters(), opt.state)
    if i % 5 == 0 or i == 14:
        acc = (forward(model, toks).argmax(-1) == labels).mean()
        print(i, f"{loss.item():.5f}", f"{acc.item():.4f}")
# quadratic forms x^T A x per example, and their gradient
A = mx.random.normal((Dm, Dm))
qf = lambda z: mx.einsum("bi,ij,bj->b", z, A, z).sum()
gz = mx.grad(qf)(x[:, 0])
print("qform", f"{qf(x[:, 0]).item():.4f}", mx.allclose(gz, x[:, 0] @ (A + A.T), atol=1e-4).item())
