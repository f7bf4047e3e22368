import math
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


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


def generate(model, prompt, n, temp=0.0):
    logits, cache = model(prompt[None])
    y = logits[:, -1, :]
    toks = []
    for _ in range(n):
        if temp == 0:
            y = mx.argmax(y, axis=-1)
        else:
            y = mx.random.categorical(y * (1 / temp))
        toks.append(y.item())
        logits, cache = model(y[:, None], cache)
        y = logits[:, -1, :]
    return toks


mx.random.seed(7)
vocab, T = 64, 24
model = Llama(vocab, 48, 2, 4, 2, 96)
mx.eval(model.parameters())
n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
print("params", float(n_params))

# a simple repeating-pattern corpus: next token = (tok * 3 + 1) % vocab
start = mx.random.randint(0, vocab, (32, 1))
seq = [start]
for _ in range(T):
    seq.append((seq[-1] * 3 + 1) % vocab)
data = mx.concatenate(seq, axis=1)
inputs, targets = data[:, :-1], data[:, 1:]


def loss_fn(model, x, y):
    logits, _ = model(x)
    return nn.losses.cross_entropy(logits, y, reduction="mean")


opt = optim.Adam(learning_rate=3e-3)
loss_and_grad = nn.value_and_grad(model, loss_fn)
for it in range(15):
    perm = mx.random.permutation(32)
    for b in range(0, 32, 16):
        idx = perm[b:b + 16]
        loss, grads = loss_and_grad(model, inputs[idx], targets[idx])
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
    if it % 5 == 0 or it == 14:
        print("iter", it, f"loss {loss.item():.5f}", f"ppl {math.exp(loss.item()):.4f}")

model.eval()
logits, _ = model(inputs[:2])
print("logits", logits.shape, logits.dtype, f"{mx.abs(logits).mean().item():.5f}")

# the cached path must agree with the full forward pass
prompt = data[0, :6]
full, _ = model(prompt[None])
_, cache = model(prompt[None, :5])
last, cache = model(prompt[None, 5:], cache)
print("cache k", cache[0][0].shape, f"maxdiff {mx.abs(full[:, -1] - last[:, -1]).max().item():.5f}")

greedy = generate(model, prompt, 8)
print("greedy", [float(t) for t in greedy])
mx.random.seed(11)
sampled = generate(model, prompt, 8, temp=4.0)
print("sampled", [float(t) for t in sampled])

# top-k filtering of the last logits
k = 5
last_logits = full[0, -1]
kth = mx.argpartition(-last_logits, kth=k - 1)[:k]
top_vals = mx.topk(last_logits, k)
print("topk", sorted(kth.tolist()) == sorted(mx.argsort(-last_logits)[:k].tolist()),
      f"{top_vals.sum().item():.5f}")
masked = mx.where(last_logits < top_vals.min(), -mx.inf, last_logits)
probs = mx.softmax(masked)
print("topk probs", f"{probs.max().item():.5f}", (probs > 0).sum().astype(mx.float32).item())
