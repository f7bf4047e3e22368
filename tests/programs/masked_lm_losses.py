import math
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map

PAD = 0
mx.random.seed(5)
B, T, V = 6, 10, 30
logits = mx.random.normal((B, T, V)) * 2
targets = mx.random.randint(1, V, (B, T))
lengths = mx.array([10, 7, 3, 9, 5, 1])
pad_mask = mx.arange(T)[None, :] < lengths[:, None]
targets = mx.where(pad_mask, targets, PAD)
print("tokens", pad_mask.sum().item() * 1.0)

# per-token losses, with and without label smoothing
ce = nn.losses.cross_entropy(logits, targets)
ce_ls = nn.losses.cross_entropy(logits, targets, label_smoothing=0.1)
print("ce", ce.shape, ce.dtype, f"{ce.mean().item():.5f}", f"{ce_ls.mean().item():.5f}")

# masked mean over real tokens, and perplexity
masked = (ce * pad_mask).sum() / pad_mask.sum()
print("masked ce", f"{masked.item():.5f}", "ppl", f"{mx.exp(masked).item():.4f}")
ntok = pad_mask.sum(axis=1)
per_seq = (ce * pad_mask).sum(axis=1) / ntok
print("per-seq ppl", [round(v, 3) for v in mx.exp(per_seq).tolist()])

# probabilities as targets (one-hot smoothed by hand) give the same numbers
onehot = mx.eye(V)[targets] * 0.9 + 0.1 / V
ce_probs = nn.losses.cross_entropy(logits, onehot)
print("probs targets", f"{mx.abs(ce_probs - ce_ls).max().item():.6f}")

# weights and axis
w = pad_mask.astype(mx.float32)
print("weighted sum", f"{nn.losses.cross_entropy(logits, targets, weights=w, reduction='sum').item():.4f}")
print("axis 1", f"{nn.losses.cross_entropy(logits.transpose(0, 2, 1), targets, axis=1).mean().item():.5f}")

# ignore-index style masking via log_softmax + take_along_axis
logp = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
tok_logp = mx.take_along_axis(logp, targets[..., None], axis=-1).squeeze(-1)
nll = -mx.where(targets != PAD, tok_logp, 0.0).sum() / (targets != PAD).sum()
print("nll", f"{nll.item():.5f}", "bits/token", f"{(nll / math.log(2)).item():.5f}")

# other losses used by language models
probs = mx.softmax(logits, axis=-1)
print("kl", f"{nn.losses.kl_div_loss(mx.log(probs[:, :-1]), mx.log(probs[:, 1:]), axis=-1).mean().item():.5f}")
print("nll_loss", f"{nn.losses.nll_loss(logp, targets, reduction='mean').item():.5f}")
bce = nn.losses.binary_cross_entropy(logits[..., 0], (targets > 15).astype(mx.float32))
print("bce", f"{bce.mean().item():.5f}", bce.shape)

# a small masked LM trained with label smoothing and a padding mask, gradient w.r.t. logits
class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 32)
        self.mix = nn.Conv1d(32, 32, kernel_size=3, padding=2)
        self.norm = nn.LayerNorm(32)
        self.out = nn.Linear(32, V)

    def __call__(self, x):
        h = self.emb(x)
        h = self.mix(h)[:, : x.shape[1]]  # causal conv: trim the right padding
        return self.out(self.norm(nn.gelu(h)))


model = TinyLM()
mx.eval(model.parameters())
inputs = mx.concatenate([mx.zeros((B, 1), dtype=targets.dtype), targets[:, :-1]], axis=1)


def loss_fn(model, x, y, mask):
    ce = nn.losses.cross_entropy(model(x), y, label_smoothing=0.05)
    return (ce * mask).sum() / mask.sum()


opt = optim.Lion(learning_rate=3e-3, weight_decay=0.01)
vg = nn.value_and_grad(model, loss_fn)
for i in range(10):
    loss, grads = vg(model, inputs, targets, pad_mask)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    if i % 3 == 0 or i == 9:
        print("step", i, f"{loss.item():.5f}", f"ppl {math.exp(loss.item()):.4f}")

dlogits = mx.grad(lambda l: (nn.losses.cross_entropy(l, targets, label_smoothing=0.1) * pad_mask).sum())(logits)
print("dlogits", f"{mx.abs(dlogits).sum().item():.5f}", f"{dlogits[2, 5:].sum().item():.5f}",
      f"{dlogits.sum(axis=-1).max().item():.6f}")
