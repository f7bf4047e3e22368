import math
import os
import tempfile
from functools import partial
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map, tree_unflatten


class LoRALinear(nn.Module):
    @staticmethod
    def from_linear(linear, rank=4, scale=2.0):
        output_dims, input_dims = linear.weight.shape
        lora = LoRALinear(input_dims, output_dims, rank, scale, bias="bias" in linear)
        lora.linear = linear
        return lora

    def __init__(self, input_dims, output_dims, rank=4, scale=2.0, bias=False):
        super().__init__()
        self.linear = nn.Linear(input_dims, output_dims, bias=bias)
        self.scale = scale
        bound = 1 / math.sqrt(input_dims)
        self.lora_a = mx.random.uniform(low=-bound, high=bound, shape=(input_dims, rank))
        self.lora_b = mx.zeros((rank, output_dims))

    def __call__(self, x):
        y = self.linear(x)
        z = (x @ self.lora_a) @ self.lora_b
        return y + self.scale * z


class Block(nn.Module):
    def __init__(self, dims, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.RMSNorm(dims)
        self.norm2 = nn.RMSNorm(dims)
        self.q = nn.Linear(dims, dims, bias=False)
        self.kv = nn.Linear(dims, 2 * dims, bias=False)
        self.o = nn.Linear(dims, dims, bias=False)
        self.up = nn.Linear(dims, 2 * dims)
        self.down = nn.Linear(2 * dims, dims)

    def __call__(self, x, mask=None, cache=None):
        B, L, D = x.shape
        h = self.norm1(x)
        q = self.q(h).reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3)
        k, v = mx.split(self.kv(h), 2, axis=-1)
        k = k.reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3)
        v = v.reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3)
        offset = 0 if cache is None else cache[0].shape[2]
        q = mx.fast.rope(q, q.shape[-1], traditional=True, base=10000.0, scale=1.0, offset=offset)
        k = mx.fast.rope(k, k.shape[-1], traditional=True, base=10000.0, scale=1.0, offset=offset)
        if cache is not None:
            k = mx.concatenate([cache[0], k], axis=2)
            v = mx.concatenate([cache[1], v], axis=2)
        a = mx.fast.scaled_dot_product_attention(q, k, v, scale=q.shape[-1] ** -0.5, mask=mask)
        x = x + self.o(a.transpose(0, 2, 1, 3).reshape(B, L, D))
        return x + self.down(nn.gelu_approx(self.up(self.norm2(x)))), (k, v)


class TinyLM(nn.Module):
    def __init__(self, vocab=96, dims=64, heads=4, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.blocks = [Block(dims, heads) for _ in range(layers)]
        self.norm = nn.RMSNorm(dims)
        self.head = nn.Linear(dims, vocab, bias=False)

    def __call__(self, x, cache=None):
        h = self.embedding(x)
        mask = "causal" if x.shape[1] > 1 else None
        cache = cache or [None] * len(self.blocks)
        new_cache = []
        for blk, c in zip(self.blocks, cache):
            h, c = blk(h, mask, c)
            new_cache.append(c)
        return self.head(self.norm(h)), new_cache


def count(params):
    return sum(v.size for _, v in tree_flatten(params))


mx.random.seed(42)
model = TinyLM()
mx.eval(model.parameters())
print("total params", float(count(model.parameters())))

# pretraining-free LoRA fine-tune: freeze the base, wrap q and o projections
model.freeze()
for b in model.blocks:
    b.q = LoRALinear.from_linear(b.q, rank=8)
    b.o = LoRALinear.from_linear(b.o, rank=8)
print("trainable", float(count(model.trainable_parameters())),
      "total", float(count(model.parameters())))
print("trainable keys", len(tree_flatten(model.trainable_parameters())))

tokens = mx.random.randint(0, 96, (16, 33))
x, y = tokens[:, :-1], tokens[:, 1:]
lengths = mx.random.randint(20, 33, (16,))
mask = mx.arange(32)[None, :] < lengths[:, None]


def loss_fn(model, x, y, mask):
    logits, _ = model(x)
    ce = nn.losses.cross_entropy(logits, y) * mask
    ntoks = mask.sum()
    return ce.sum() / ntoks, ntoks


opt = optim.Adam(learning_rate=1e-2)
state = [model.state, opt.state, mx.random.state]


@partial(mx.compile, inputs=state, outputs=state)
def train_step(x, y, mask):
    (loss, ntoks), grads = nn.value_and_grad(model, loss_fn)(model, x, y, mask)
    opt.update(model, grads)
    return loss, ntoks


for it in range(12):
    loss, ntoks = train_step(x, y, mask)
    mx.eval(state)
    if it % 4 == 0 or it == 11:
        print("step", it, f"{loss.item():.5f}", f"ppl {mx.exp(loss).item():.4f}", ntoks.item())

# only the adapters moved
print("lora_b norm", f"{mx.linalg.norm(model.blocks[0].q.lora_b).item():.5f}")

# merge the adapters back into plain Linear layers
for b in model.blocks:
    for name in ("q", "o"):
        l = getattr(b, name)
        w = l.linear.weight + l.scale * (l.lora_b.T @ l.lora_a.T)
        fused = nn.Linear(w.shape[1], w.shape[0], bias=False)
        fused.weight = w
        setattr(b, name, fused)
model.unfreeze()
model.eval()
ref_logits, _ = model(x[:4])
eval_loss, _ = loss_fn(model, x, y, mask)
print("merged loss", f"{eval_loss.item():.5f}", "params", float(count(model.parameters())))

# save and reload
path = os.path.join(tempfile.mkdtemp(), "merged.safetensors")
model.save_weights(path)
model2 = TinyLM()
model2.load_weights(path)
l2, _ = model2(x[:4])
print("reload maxdiff", f"{mx.abs(l2 - ref_logits).max().item():.6f}")

# 4-bit quantization, group 64
nn.quantize(model2, group_size=64, bits=4)
print(type(model2.embedding).__name__, type(model2.blocks[0].q).__name__, type(model2.head).__name__)
qw = model2.blocks[0].up
print("qweight", qw.weight.shape, qw.weight.dtype, qw.scales.shape, qw.biases.shape)
q_logits, _ = model2(x[:4])
print("quant err", f"{mx.abs(q_logits - ref_logits).mean().item():.4f}")
q_loss, _ = loss_fn(model2, x, y, mask)
print("quant loss", f"{q_loss.item():.4f}")
print("quant params", float(count(model2.parameters())))


# compiled greedy decoding step on the quantized model with a KV cache
@mx.compile
def next_token(logits):
    return mx.argmax(logits[:, -1, :], axis=-1)


def generate(m, prompt, n):
    logits, cache = m(prompt)
    out = []
    for _ in range(n):
        tok = next_token(logits)
        out.append(tok)
        logits, cache = m(tok[:, None], cache)
    return mx.stack(out, axis=1)


gen = generate(model2, x[:2, :8], 6)
print("gen", gen.shape, gen.dtype)
full = mx.concatenate([x[:2, :8], gen], axis=1)
logits_full, _ = model2(full)
check = mx.argmax(logits_full[:, 7:-1], axis=-1)
print("consistent", float(mx.mean(check == gen).item()))
