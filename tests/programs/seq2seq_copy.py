import os
import tempfile

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

BOS, PAD = 1, 0
VOCAB = 12


class Seq2Seq(nn.Module):
    def __init__(self, vocab, dims, heads, layers, max_len=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.pos = nn.SinusoidalPositionalEncoding(dims)
        self.transformer = nn.Transformer(
            dims=dims, num_heads=heads, num_encoder_layers=layers, num_decoder_layers=layers,
            mlp_dims=2 * dims, dropout=0.0, norm_first=True)
        self.out = nn.Linear(dims, vocab)

    def embed(self, tokens):
        return self.embedding(tokens) + self.pos(mx.arange(tokens.shape[1]))

    def __call__(self, src, tgt):
        src_mask = mx.where(src[:, None, None, :] == PAD, -1e9, 0.0)
        tgt_mask = nn.MultiHeadAttention.create_additive_causal_mask(tgt.shape[1])
        h = self.transformer(self.embed(src), self.embed(tgt), src_mask, tgt_mask, src_mask)
        return self.out(h)

    def greedy(self, src, steps):
        src_mask = mx.where(src[:, None, None, :] == PAD, -1e9, 0.0)
        memory = self.transformer.encoder(self.embed(src), src_mask)
        out = mx.full((src.shape[0], 1), BOS, dtype=mx.int32)
        for _ in range(steps):
            mask = nn.MultiHeadAttention.create_additive_causal_mask(out.shape[1])
            h = self.transformer.decoder(self.embed(out), memory, mask, src_mask)
            nxt = mx.argmax(self.out(h[:, -1]), axis=-1)
            out = mx.concatenate([out, nxt[:, None].astype(mx.int32)], axis=1)
        return out[:, 1:]


def make_batch(n, length):
    src = mx.random.randint(2, VOCAB, (n, length))
    lens = mx.random.randint(length - 2, length + 1, (n,))
    src = mx.where(mx.arange(length)[None] < lens[:, None], src, PAD)
    tgt_in = mx.concatenate([mx.full((n, 1), BOS, dtype=src.dtype), src[:, :-1]], axis=1)
    return src, tgt_in, src


def loss_fn(model, src, tgt_in, tgt_out):
    logits = model(src, tgt_in)
    mask = tgt_out != PAD
    ce = nn.losses.cross_entropy(logits, tgt_out) * mask
    return ce.sum() / mask.sum()


mx.random.seed(21)
mask = nn.MultiHeadAttention.create_additive_causal_mask(4)
print("causal mask", mask.shape, mask.dtype, mask[0, 1].item() < -1e8, mask[1, 0].item())

model = Seq2Seq(VOCAB, 32, 4, 1)
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))
optimizer = optim.Adam(learning_rate=3e-3)
loss_and_grad = nn.value_and_grad(model, loss_fn)
for step in range(15):
    src, tgt_in, tgt_out = make_batch(16, 6)
    loss, grads = loss_and_grad(model, src, tgt_in, tgt_out)
    grads, gnorm = optim.clip_grad_norm(grads, 1.0)
    optimizer.update(model, grads)
    mx.eval(model.parameters(), optimizer.state)
    if step % 5 == 4:
        print(f"step {step} loss {loss.item():.4f} grad norm {gnorm.item():.4f}")

path = os.path.join(tempfile.mkdtemp(), "seq2seq.safetensors")
model.save_weights(path)
clone = Seq2Seq(VOCAB, 32, 4, 1)
clone.load_weights(path)
model.eval()
clone.eval()
src, tgt_in, tgt_out = make_batch(4, 6)
a = model(src, tgt_in)
b = clone(src, tgt_in)
print("reloaded equal", mx.array_equal(a, b).item(), a.shape)
print(f"eval loss {loss_fn(clone, src, tgt_in, tgt_out).item():.4f}")
gen = clone.greedy(src, 3)
print("greedy", gen.shape, gen.dtype)
