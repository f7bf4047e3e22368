import math
from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


class ImageEncoder(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.ln = nn.LayerNorm(8)
        self.proj = nn.Linear(8, dims, bias=False)

    def __call__(self, x):
        h = nn.gelu(self.ln(self.conv(x)))
        return self.proj(h.mean(axis=(1, 2)))


class TextEncoder(nn.Module):
    def __init__(self, vocab, dims, length):
        super().__init__()
        self.tok = nn.Embedding(vocab, dims)
        self.pos = mx.zeros((length, dims))
        self.block = nn.TransformerEncoderLayer(dims, 2, mlp_dims=2 * dims, activation=nn.gelu_approx)
        self.ln = nn.LayerNorm(dims)
        self.proj = nn.Linear(dims, dims, bias=False)

    def __call__(self, tokens):
        h = self.tok(tokens) + self.pos
        h = self.block(h, None)
        # pool at the last token (EOT), as CLIP does with argmax of the token id
        eot = mx.argmax(tokens, axis=-1)
        pooled = self.ln(h)[mx.arange(tokens.shape[0]), eot]
        return self.proj(pooled)


class CLIP(nn.Module):
    def __init__(self, dims=16, vocab=20, length=5):
        super().__init__()
        self.image = ImageEncoder(dims)
        self.text = TextEncoder(vocab, dims, length)
        self.logit_scale = mx.array(math.log(1 / 0.07))

    def __call__(self, images, tokens):
        i = self.image(images)
        t = self.text(tokens)
        i = i / mx.linalg.norm(i, axis=-1, keepdims=True)
        t = t * mx.rsqrt(mx.sum(t * t, axis=-1, keepdims=True))
        scale = mx.clip(mx.exp(self.logit_scale), 0, 100)
        return scale * i @ t.T


def clip_loss(model, images, tokens):
    logits = model(images, tokens)
    n = logits.shape[0]
    diag = logits[mx.arange(n), mx.arange(n)]
    loss_i = mx.mean(mx.logsumexp(logits, axis=1) - diag)
    loss_t = mx.mean(mx.logsumexp(logits, axis=0) - diag)
    return (loss_i + loss_t) / 2


mx.random.seed(17)
N, classes = 48, 6
labels = mx.random.randint(0, classes, (N,))
colors = mx.random.uniform(shape=(classes, 3))
images = colors[labels][:, None, None, :] + 0.2 * mx.random.normal((N, 8, 8, 3))
tokens = mx.stack([labels + 2, (labels * 3) % 7 + 10, mx.random.randint(2, 10, (N,)), mx.full((N,), 17), mx.full((N,), 19)], axis=1)
tokens = tokens.astype(mx.int32)
print("data", images.shape, tokens.shape, tokens.dtype)

model = CLIP()
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))
targets = mx.arange(8)
logits = model(images[:8], tokens[:8])
ce = (nn.losses.cross_entropy(logits, targets, reduction="mean") + nn.losses.cross_entropy(logits.T, targets, reduction="mean")) / 2
print(f"initial loss {clip_loss(model, images[:8], tokens[:8]).item():.5f} via cross_entropy {ce.item():.5f}")

optimizer = optim.AdamW(learning_rate=optim.cosine_decay(5e-3, 20), weight_decay=0.1)
state = [model.state, optimizer.state]


@partial(mx.compile, inputs=state, outputs=state)
def step(images, tokens):
    loss, grads = nn.value_and_grad(model, clip_loss)(model, images, tokens)
    optimizer.update(model, grads)
    return loss


model.train()
for epoch in range(4):
    perm = mx.random.permutation(N)
    total = 0.0
    for s in range(0, N, 12):
        idx = perm[s : s + 12]
        loss = step(images[idx], tokens[idx])
        mx.eval(state)
        total += loss.item()
    print(f"epoch {epoch} loss {total / 4:.4f} lr {optimizer.learning_rate.item():.6f}")

model.eval()
emb_i = model.image(images)
emb_i = emb_i / mx.linalg.norm(emb_i, axis=-1, keepdims=True)
print(f"norms {mx.linalg.norm(emb_i, axis=-1).mean().item():.5f} logit scale {model.logit_scale.item():.5f}")
sim = model(images, tokens)
print("sim", sim.shape, f"{mx.diag(sim).mean().item():.4f}", f"{sim.mean().item():.3f}")
