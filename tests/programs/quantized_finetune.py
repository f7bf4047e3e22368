"""Mixed quantization through nn.quantize's class_predicate (per-layer dicts of bits and
group_size), QuantizedLinear/QuantizedEmbedding parameters and freezing, fine-tuning the dense
parts of a partly quantized model, and what happens when the quantized weights are unfrozen."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


def make():
    mx.random.seed(3)
    m = nn.Sequential(nn.Embedding(64, 64), nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64, bias=False),
                      nn.LayerNorm(64), nn.Linear(64, 10))
    mx.eval(m.parameters())
    return m


def describe(m):
    return [(type(l).__name__, getattr(l, "bits", None), getattr(l, "group_size", None)) for l in m.layers]


tok = mx.array([[1, 5, 63], [0, 2, 9]])
model = make()
ref = model(tok)


def predicate(path, module):
    if isinstance(module, nn.Embedding):
        return {"group_size": 32, "bits": 8}
    if isinstance(module, nn.Linear) and module.weight.shape[-1] % 128 == 0:
        return {"bits": 2, "group_size": 64}
    return isinstance(module, nn.Linear)


nn.quantize(model, class_predicate=predicate)
print(describe(model))
out = model(tok)
print("quantized", out.shape, out.dtype, f"{mx.abs(out - ref).mean().item():.4f}")
print("params", sorted(k for k, _ in tree_flatten(model.parameters()) if k.startswith("layers.1")))
print("trainable", [k for k, _ in tree_flatten(model.trainable_parameters())])
emb = model.layers[0]
print("embedding", sorted(emb.parameters()), emb.weight.dtype, emb.weight.shape, emb.scales.shape)
print("as_linear", emb.as_linear(mx.ones((2, 64))).shape)
for bits, gs in [(3, 32), (6, 64), (8, 128)]:
    m = make()
    nn.quantize(m, bits=bits, group_size=gs, class_predicate=lambda p, mod: isinstance(mod, nn.Linear) and mod.weight.shape[-1] >= gs)
    print("bits", bits, gs, describe(m)[1], describe(m)[5], f"{mx.abs(m(tok) - ref).mean().item():.3f}")

ql = nn.QuantizedLinear.from_linear(nn.Linear(64, 32), group_size=32, bits=4)
print("from_linear", ql.weight.shape, ql.weight.dtype, ql.scales.shape, ql.biases.shape, "bias" in ql, ql(mx.ones((3, 64))).shape)
qe = nn.QuantizedEmbedding.from_embedding(nn.Embedding(10, 64), group_size=64, bits=8)
print("from_embedding", qe(mx.array([1, 2])).shape, qe.num_embeddings, qe.dims)

# Fine-tune only the unquantized layers of a partly quantized model
model = make()
nn.quantize(model, group_size=64, bits=4, class_predicate=lambda p, mod: p == "layers.1")
print(describe(model))
opt = optim.Adam(learning_rate=1e-2)
labels = mx.array([[1, 2, 3], [4, 5, 6]])
loss_and_grad = nn.value_and_grad(model, lambda m, t, y: nn.losses.cross_entropy(m(t), y, reduction="mean"))
for i in range(3):
    loss, grads = loss_and_grad(model, tok, labels)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
    print("finetune", i, f"{loss.item():.4f}", len(tree_flatten(grads)), sorted(grads["layers"][1]))
print("opt state", sorted(opt.state["layers"][1]), sorted(opt.state["layers"][3]))

# Unfreezing the quantized weights: there is no gradient for packed integers
model.layers[1].unfreeze()
print("unfrozen", sorted(model.layers[1].trainable_parameters()))
try:
    loss_and_grad(model, tok, labels)
except RuntimeError as e:
    print("RuntimeError", e)
model.layers[1].freeze()
model.layers[1].unfreeze(keys=["scales", "biases"])
loss, grads = loss_and_grad(model, tok, labels)
print("scales grads", sorted(grads["layers"][1]), grads["layers"][1]["scales"].shape, f"{mx.abs(grads['layers'][1]['scales']).sum().item():.3f}")
