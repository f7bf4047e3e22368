"""Attention plumbing: MultiHeadAttention with boolean and additive masks, causal masks in
several dtypes, TransformerEncoder/Decoder/Transformer with norm_first and checkpointing,
RoPE offsets, ALiBi with masks, sinusoidal encodings; a few training steps."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

mx.random.seed(42)

m = nn.MultiHeadAttention.create_additive_causal_mask(4)
print("causal", m.dtype, m.shape, (m < 0).sum().item(), f"{m[0, 1].item():.3e}")
m16 = nn.MultiHeadAttention.create_additive_causal_mask(3, dtype=mx.float16)
print("causal16", m16.dtype, (m16 == 0).sum().item(), f"{m16[0, 2].item():.1f}")
mb = nn.MultiHeadAttention.create_additive_causal_mask(3, dtype=mx.bfloat16)
print("causalbf16", mb.dtype)

B, L, D, H = 2, 6, 16, 4
x = mx.random.normal((B, L, D))
mha = nn.MultiHeadAttention(D, H)
mx.eval(mha.parameters())
y_add = mha(x, x, x, mask=nn.MultiHeadAttention.create_additive_causal_mask(L))
bool_mask = mx.tril(mx.ones((L, L), dtype=mx.bool_))
y_bool = mha(x, x, x, mask=bool_mask)
print("mha", y_add.shape, f"{y_add.sum().item():.4f}", "bool==add", mx.allclose(y_add, y_bool, atol=1e-5).item())
pad = mx.array([[True] * 6, [True] * 4 + [False] * 2])[:, None, None, :]
y_pad = mha(x, x, x, mask=pad)
print("padmask", f"{y_pad[1].sum().item():.4f}", f"{y_pad[0].sum().item():.4f}")
y_none = mha(x, x, x)
print("nomask", f"{y_none.abs().mean().item():.5f}")
print("params", sorted(k for k, _ in tree_flatten(mha.parameters())))

# Rotary embeddings with offsets, as in a KV cache
rope = nn.RoPE(8, base=10000)
q = mx.random.normal((B, H, L, 8))
full = rope(q)
tail = rope(q[:, :, 3:], offset=3)
print("rope offset", mx.allclose(full[:, :, 3:], tail, atol=1e-5).item(), f"{full.sum().item():.4f}")
rope_s = nn.RoPE(8, traditional=False, base=100, scale=2.0)
print("rope scaled", f"{rope_s(q, offset=2).sum().item():.4f}")

alibi = nn.ALiBi()
scores = mx.random.normal((B, H, L, L))
out = alibi(scores, offset=0, mask=nn.MultiHeadAttention.create_additive_causal_mask(L))
print("alibi", out.shape, out.dtype, f"{mx.where(out < -1e8, 0, out).sum().item():.4f}")
out2 = alibi(scores[:, :, -2:], offset=4)
print("alibi offset", out2.shape, f"{out2.sum().item():.4f}")

pe = nn.SinusoidalPositionalEncoding(D, max_freq=1.0, min_freq=1e-3)
pos = pe(mx.arange(L))
print("sinusoid", pos.shape, pos.dtype, f"{pos.sum().item():.4f}", f"{pos[3, D // 2].item():.5f}")

# Encoders/decoders in train and eval mode
enc = nn.TransformerEncoder(2, D, H, mlp_dims=32, dropout=0.1, norm_first=True, checkpoint=True)
dec = nn.TransformerDecoder(2, D, H, mlp_dims=24, dropout=0.0, norm_first=False, checkpoint=False)
mx.eval(enc.parameters(), dec.parameters())
enc.eval()
src_mask = None
mem = enc(x, src_mask)
tgt = mx.random.normal((B, 3, D))
out = dec(tgt, mem, nn.MultiHeadAttention.create_additive_causal_mask(3), None)
print("enc", mem.shape, f"{mem.abs().sum().item():.4f}", "dec", out.shape, f"{out.abs().sum().item():.4f}")
print("enc layers", len(enc.layers), type(enc.ln).__name__, "dec params", sum(v.size for _, v in tree_flatten(dec.parameters())))

model = nn.Transformer(dims=D, num_heads=H, num_encoder_layers=1, num_decoder_layers=2, mlp_dims=32,
                       dropout=0.0, activation=nn.gelu, norm_first=True, custom_encoder=None)
print("transformer params", sum(v.size for _, v in tree_flatten(model.parameters())))
head = nn.Linear(D, 5)
mx.eval(model.parameters(), head.parameters())
tgt_in = mx.random.normal((B, 4, D))
labels = mx.random.randint(0, 5, (B, 4))
tmask = nn.MultiHeadAttention.create_additive_causal_mask(4)


class Wrap(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = model
        self.h = head

    def __call__(self, s, t):
        return self.h(self.t(s, t, None, tmask, None))


w = Wrap()
opt = optim.Adam(learning_rate=3e-3)
lg = nn.value_and_grad(w, lambda m, s, t, y: nn.losses.cross_entropy(m(s, t), y, reduction="mean"))
for step in range(4):
    loss, g = lg(w, x, tgt_in, labels)
    opt.update(w, g)
    mx.eval(w.parameters(), opt.state)
    print("step", step, f"{loss.item():.5f}")
