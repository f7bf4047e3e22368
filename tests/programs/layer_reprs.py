"""The repr of every layer with its options, as users print their models."""
# compare: text
import mlx.core as mx
import mlx.nn as nn

mx.random.seed(0)
layers = [
    nn.Linear(3, 4, bias=False), nn.Bilinear(2, 3, 4), nn.Identity(), nn.Embedding(10, 4),
    nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), nn.Conv2d(4, 8, (3, 2), stride=(2, 1), bias=False),
    nn.Conv3d(2, 2, 2), nn.ConvTranspose1d(4, 3, 3, stride=2, output_padding=1),
    nn.ConvTranspose2d(4, 3, (3, 2), padding=(1, 0)), nn.ConvTranspose3d(2, 2, 2, dilation=2),
    nn.LayerNorm(4, affine=False), nn.LayerNorm(4, bias=False, eps=1e-3), nn.RMSNorm(8, eps=1e-6),
    nn.GroupNorm(2, 4, pytorch_compatible=True), nn.InstanceNorm(4, affine=True),
    nn.BatchNorm(4, momentum=0.3, affine=False), nn.BatchNorm(4, track_running_stats=False),
    nn.Dropout(0.2), nn.Dropout2d(0.5), nn.Dropout3d(), nn.MaxPool1d(3, stride=2, padding=1),
    nn.MaxPool2d((2, 3)), nn.AvgPool2d(3, stride=2, padding=1), nn.AvgPool3d(2), nn.MaxPool3d(2, 1, 1),
    nn.Upsample(scale_factor=2), nn.Upsample(scale_factor=(2, 1.5), mode="cubic", align_corners=True),
    nn.RoPE(8, traditional=True, base=500, scale=0.5), nn.SinusoidalPositionalEncoding(8), nn.ALiBi(),
    nn.MultiHeadAttention(12, 3, value_dims=9, bias=True), nn.GELU("tanh"), nn.PReLU(3), nn.Step(0.5),
    nn.LeakyReLU(0.2), nn.ELU(), nn.CELU(), nn.Softmax(), nn.GLU(), nn.HardShrink(), nn.Softshrink(),
    nn.GRU(4, 5, bias=False), nn.LSTM(4, 5),
    nn.QuantizedLinear(64, 32, bias=False, group_size=32, bits=4), nn.QuantizedEmbedding(16, 64, group_size=64, bits=8),
    nn.Sequential(nn.Linear(2, 2), nn.ReLU()),
]
for layer in layers:
    print(repr(layer))
print(nn.TransformerEncoderLayer(8, 2, mlp_dims=16, norm_first=False))
print(nn.Transformer(8, 2, 1, 1, 16))
