import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


class Attention(nn.Module):
    def __init__(self, dims, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = dims // n_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dims, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dims, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dims, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, dims, bias=False)
        self.rope = nn.RoPE(self.head_dim, traditional=False, base=10000)

    def __call__(self, x, mask=None, cache=None):
        B, L, D = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        q = q.reshape(B, L, self.n_heads, -1).transpose(0, 2, 1, 3)
        k = k.reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        v = v.reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
        if cache is not None:
            key_cache, value_cache = cache
            q = self.rope(q, offset=key_cache.shape[2])
            k = self.rope(k, offset=key_cache.shape[2])
            k = mx.concatenate([key_cache, k], axis=2)
            v = mx.concatenate([value_cache, v], axis=2)
        else:
            q = self.rope(q)
            k = self.rope(k)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=self.scale, mask=mask)
        out = out.transpose(0, 2, 1, 3).reshape(B, L, -1)
        return self.o_proj(out), (k, v)


class MLP(nn.Module):
    def __init__(self, dims, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dims, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dims, bias=False)
        self.up_proj = nn.Linear(dims, hidden, bias=False)

    def __call__(self, x):
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, dims, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.self_attn = Attention(dims, n_heads, n_kv_heads)
        self.mlp = MLP(dims, hidden)
        self.input_layernorm = nn.RMSNorm(dims, eps=1e-5)
        self.post_attention_layernorm = nn.RMSNorm(dims, eps=1e-5)

    def __call__(self, x, mask=None, cache=None):
        r, cache = self.self_attn(self.input_layernorm(x), mask, cache)
        h = x + r
        return h + self.mlp(self.post_attention_layernorm(h)), cache


class Llama(nn.Module):
    def __init__(self, vocab, dims, n_layers, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dims)
        self.layers = [Block(dims, n_heads, n_kv_heads, hidden) for _ in range(n_layers)]
        self.norm = nn.RMSNorm(dims)

    def __call__(self, inputs, cache=None):
        h = self.embed_tokens(inputs)
        mask = None
        if h.shape[1] > 1:
            mask = nn.MultiHeadAttention.create_additive_causal_mask(h.shape[1])
            mask = mask.astype(h.dtype)
        if cache is None:
            cache = [None] * len(self.layers)
        for i, layer in enumerate(self.layers):
            h, cache[i] = layer(h, mask, cache[i])
        return self.embed_tokens.as_linear(self.norm(h)), cache


def greedy(model, prompt, n):
    logits, cache = model(prompt)
    out = []
    for _ in range(n):
        tok = mx.argmax(logits[:, -1, :], axis=-1)
        out.append(tok)
        logits, cache = model(tok[:, None], cache)
    return mx.stack(out, axis=1)


mx.random.seed(21)
vocab = 48
model = Llama(vocab, 64, 2, 4, 1, 128)
mx.eval(model.parameters())

# a corpus of counting sequences with a random stride per row
starts = mx.random.randint(0, vocab, (64, 1))
strides = mx.random.randint(1, 4, (64, 1))
data = (starts + strides * mx.arange(17)[None]) % vocab
x, y = data[:, :-1], data[:, 1:]


def loss_fn(model, x, y):
    logits, _ = model(x)
    return nn.losses.cross_entropy(logits, y, reduction="mean")


opt = optim.AdamW(learning_rate=5e-3, weight_decay=0.0)
step = nn.value_and_grad(model, loss_fn)
for it in range(20):
    loss, grads = step(model, x, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
print("float32 loss", f"{loss.item():.4f}")

ref_logits, _ = model(x[:8])
ref_probs = mx.softmax(ref_logits, axis=-1)
for dtype in (mx.float16, mx.bfloat16):
    half = Llama(vocab, 64, 2, 4, 1, 128)
    half.update(tree_map(lambda p: p.astype(dtype), model.parameters()))
    logits, cache = half(x[:8])
    probs = mx.softmax(logits, axis=-1)
    err = mx.abs(probs.astype(mx.float32) - ref_probs).mean()
    print(str(dtype).split(".")[-1], logits.dtype, cache[0][0].dtype, f"prob err {err.item():.4f}")
    if dtype == mx.float16:
        # (bfloat16 keeps 8 bits: the float32 weights' last-bit differences show through)
        print("  mean|logit|", f"{mx.abs(logits).astype(mx.float32).mean().item():.4f}", "loss",
              f"{nn.losses.cross_entropy(logits.astype(mx.float32), y[:8], reduction='mean').item():.3f}")
    print("  agree", f"{mx.mean(mx.argmax(logits, -1) == mx.argmax(ref_logits, -1)).item():.4f}")
    params = sum(v.nbytes for _, v in tree_flatten(half.parameters()))
    print("  bytes", float(params))

gen32 = greedy(model, x[:4, :4], 8)
model.set_dtype(mx.float16)
gen16 = greedy(model, x[:4, :4], 8)
print("gen agree", f"{mx.mean(gen32 == gen16).item():.4f}", "gen", gen16.shape)
print("row0", [float(t) for t in gen16[0].tolist()])
