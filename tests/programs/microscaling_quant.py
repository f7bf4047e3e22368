"""Microscaling quantization (mxfp4, mxfp8, nvfp4) of a small classifier: per-layer modes
through nn.quantize's class_predicate, the packed weights and uint8 scales, round-trip errors of
mx.quantize/mx.dequantize (nvfp4 with a global scale), quantized matmuls, and fine-tuning the
dense head of the quantized model."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class Classifier(nn.Module):
    def __init__(self, vocab=64, dims=64, hidden=128, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dims)
        self.fc1 = nn.Linear(dims, hidden)
        self.fc2 = nn.Linear(hidden, dims)
        self.head = nn.Linear(dims, classes)

    def __call__(self, tokens):
        e = self.embed(tokens).astype(mx.float32).mean(axis=1)
        h = e + self.fc2(nn.gelu(self.fc1(e)))
        return self.head(h)


mx.random.seed(17)
w = mx.random.normal((8, 128)) * mx.array([0.01, 0.1, 1, 1, 2, 5, 10, 100])[:, None]
for mode in ["mxfp4", "mxfp8", "nvfp4"]:
    wq, scales = mx.quantize(w, mode=mode)
    back = mx.dequantize(wq, scales, mode=mode)
    err = mx.abs(back.astype(mx.float32) - w) / mx.abs(w).max(axis=1, keepdims=True)
    print(mode, wq.shape, wq.dtype, scales.shape, scales.dtype, back.dtype,
          "scales", scales[:, 0].tolist(), f"rel err {err.max().item():.4f}")
gscale = mx.abs(w).max()
wq, scales = mx.quantize(w, mode="nvfp4", global_scale=gscale)
back = mx.dequantize(wq, scales, mode="nvfp4", global_scale=gscale)
print("nvfp4 global", back.dtype, scales[:, 0].tolist(), f"{mx.abs(back - w).max().item():.4f}")

x = mx.random.normal((4, 128))
for mode in ["mxfp4", "mxfp8", "nvfp4"]:
    wq, scales = mx.quantize(w, mode=mode)
    y = mx.quantized_matmul(x, wq, scales, transpose=True, mode=mode)
    dense = x @ mx.dequantize(wq, scales, mode=mode, dtype=mx.float32).T
    print(mode, "qmm", y.shape, y.dtype, f"{y.sum().item():.3f}", mx.allclose(y, dense, rtol=1e-4, atol=1e-3).item())

mx.random.seed(3)
model = Classifier()
mx.eval(model.parameters())
tokens = mx.random.randint(0, 64, (16, 6))
labels = mx.random.randint(0, 5, (16,))
ref = model(tokens)


def predicate(path, module):
    if path == "head":
        return False
    if isinstance(module, nn.Embedding):
        return {"mode": "mxfp8"}
    if path == "fc1":
        return {"mode": "nvfp4"}
    return {"mode": "mxfp4", "group_size": 32, "bits": 4}


nn.quantize(model, class_predicate=predicate)
print([(name, type(m).__name__, getattr(m, "mode", None), getattr(m, "group_size", None))
       for name, m in model.named_modules() if name])
print("embed out", model.embed(tokens).dtype)
out = model(tokens)
print("quantized", out.shape, f"{mx.abs(out - ref).max().item():.4f}")
params = tree_flatten(model.parameters())
print("params", [(k, v.dtype) for k, v in params if k.startswith("fc1")])
print("trainable", [k for k, _ in tree_flatten(model.trainable_parameters())])

opt = optim.AdamW(learning_rate=1e-2)
loss_and_grad = nn.value_and_grad(model, lambda m, t, y: nn.losses.cross_entropy(m(t), y, reduction="mean"))
for step in range(4):
    loss, grads = loss_and_grad(model, tokens, labels)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    print("step", step, f"{loss.item():.4f}", sorted(k for k, _ in tree_flatten(grads)))

model.fc2.unfreeze(keys=["scales"])
try:
    loss_and_grad(model, tokens, labels)
except ValueError as e:
    print("ValueError", e)
