"""Every nn layer with its non-default options, forward and backward."""
import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

mx.random.seed(3)


def report(name, layer, *xs):
    mx.random.seed(11)
    y = layer(*xs)
    def f(params, a):
        layer.update(params)
        it = iter(a)
        return (layer(*[next(it) if x is not None and x.dtype == mx.float32 else x for x in xs]) ** 2).sum()
    g = mx.grad(f, argnums=(0, 1))(layer.trainable_parameters(), [x for x in xs if x is not None and x.dtype == mx.float32])
    gn = sum((v ** 2).sum().item() for _, v in tree_flatten(g)) ** 0.5
    print(f"{name:18s}", y.shape, y.dtype, f"{mx.abs(y).sum().item():.4f}", f"{(y*y).mean().item():.4f}", f"g {gn:.4f}")


x1 = mx.random.normal((2, 9, 4))
x2 = mx.random.normal((2, 8, 7, 4))
x3 = mx.random.normal((1, 5, 6, 4, 4))
report("bilinear", nn.Bilinear(4, 3, 5, bias=False), mx.random.normal((3, 4)), mx.random.normal((3, 3)))
report("conv1d", nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), x1)
report("conv2d", nn.Conv2d(4, 8, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=4, bias=False), x2)
report("conv3d", nn.Conv3d(4, 2, 2, stride=(1, 2, 1), padding=1), x3)
report("convT1d", nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1), x1)
report("convT2d", nn.ConvTranspose2d(4, 3, (3, 2), stride=2, padding=(1, 0), dilation=1, output_padding=(1, 0)), x2)
report("convT3d", nn.ConvTranspose3d(4, 2, 2, stride=2, padding=1), x3)
report("instnorm", nn.InstanceNorm(4, affine=True), x2)
report("groupnorm", nn.GroupNorm(2, 4, pytorch_compatible=True), x2)
report("groupnorm_mlx", nn.GroupNorm(2, 4, affine=False), x2)
report("layernorm_na", nn.LayerNorm(4, affine=False), x1)
report("layernorm_nb", nn.LayerNorm(4, bias=False, eps=1e-3), x1)
report("rmsnorm", nn.RMSNorm(4, eps=1e-2), x1)

bn = nn.BatchNorm(4, momentum=0.3)
for _ in range(3):
    bn(x2 * 2 + 1)
print("bn stats", f"{bn.running_mean.sum().item():.5f}", f"{bn.running_var.sum().item():.5f}")
bn.eval()
report("batchnorm_eval", bn, x2)
report("batchnorm_noaff", nn.BatchNorm(4, affine=False, track_running_stats=False), x1)

report("maxpool1d", nn.MaxPool1d(3, stride=2, padding=1), x1)
report("maxpool2d", nn.MaxPool2d((2, 3), stride=(2, 1), padding=(1, 1)), x2)
report("maxpool3d", nn.MaxPool3d(2, stride=1, padding=1), x3)
report("avgpool1d", nn.AvgPool1d(2, padding=1), x1)
report("avgpool2d", nn.AvgPool2d(3, stride=2, padding=1), x2)
report("avgpool3d", nn.AvgPool3d((2, 2, 1), stride=2), x3)
for mode in ["nearest", "linear", "cubic"]:
    for ac in [False, True]:
        report(f"up {mode[:5]} {int(ac)}", nn.Upsample(scale_factor=(2, 1.5), mode=mode, align_corners=ac), x2)
report("up3d linear", nn.Upsample(scale_factor=2, mode="linear"), x3[:, :3, :3])

report("alibi", nn.ALiBi(), mx.random.normal((2, 4, 5, 5)))
report("sinusoid", nn.SinusoidalPositionalEncoding(8, min_freq=0.01, max_freq=2, scale=0.5, cos_first=True, full_turns=True), mx.arange(6).astype(mx.float32))
report("rope trad", nn.RoPE(8, traditional=True, base=500, scale=0.5), mx.random.normal((2, 3, 5, 8)))
report("rope part", nn.RoPE(4), mx.random.normal((2, 5, 8)))

q = mx.random.normal((2, 5, 12)); k = mx.random.normal((2, 7, 6)); v = mx.random.normal((2, 7, 10))
mha = nn.MultiHeadAttention(12, 3, query_input_dims=12, key_input_dims=6, value_input_dims=10, value_dims=9, value_output_dims=5, bias=True)
mask = nn.MultiHeadAttention.create_additive_causal_mask(7)[:5]
report("mha", mha, q, k, v, mask)
enc = nn.TransformerEncoder(2, 12, 3, mlp_dims=20, dropout=0.0, activation=nn.gelu_approx, norm_first=False)
report("encoder", enc, q, None)
dec = nn.TransformerDecoder(1, 12, 3, norm_first=True, activation=nn.silu)
report("decoder", dec, q, mx.random.normal((2, 4, 12)), nn.MultiHeadAttention.create_additive_causal_mask(5), None)
tr = nn.Transformer(12, 3, 1, 1, 16, dropout=0.0, norm_first=False)
report("transformer", tr, q, mx.random.normal((2, 4, 12)), None, None, None)

emb = nn.Embedding(10, 6)
h = mx.random.normal((3, 6))
print("as_linear", emb.as_linear(h).shape, f"{emb.as_linear(h).sum().item():.4f}")

d2 = nn.Dropout2d(0.5); d3 = nn.Dropout3d(0.25)
y2 = d2(x2); y3 = d3(x3)
print("dropout2d", f"{(y2 == 0).mean().item():.4f}", f"{y2.sum().item():.4f}")
print("dropout3d", f"{(y3 == 0).mean().item():.4f}")
d2.eval(); d3.eval()
print("eval", mx.array_equal(d2(x2), x2).item(), mx.array_equal(d3(x3), x3).item(), d2.training)

mx.random.seed(4)
model = nn.Sequential(nn.Embedding(32, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
nn.quantize(model, group_size=32, bits=4, class_predicate=lambda p, m: isinstance(m, nn.Linear) and m.weight.shape[0] > 32)
print([type(m).__name__ for m in model.layers])
tok = mx.array([[1, 5, 7], [30, 2, 0]])
out = model(tok)
print("quant", out.shape, f"{out.sum().item():.3f}")
nn.quantize(model, group_size=64, bits=8)
print([type(m).__name__ for m in model.layers], model.layers[0].bits, model.layers[3].group_size)
print("quant8", f"{model(tok).sum().item():.3f}", f"{model.layers[0].as_linear(mx.ones((1, 64))).sum().item():.3f}")
