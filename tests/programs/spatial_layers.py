"""Spatial layers in less common configurations: unbatched inputs, ConvTranspose with
dilation/groups, Conv3d, pooling with tuples, Upsample with integer/tuple scales, norms in train
and eval, a tiny encoder-decoder trained a few steps."""
import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

mx.random.seed(7)


def show(name, y):
    print(f"{name:14s}", y.shape, y.dtype, f"{y.abs().mean().item():.5f}")


x1 = mx.random.normal((2, 11, 3))
x2 = mx.random.normal((2, 9, 10, 4))
x3 = mx.random.normal((1, 4, 5, 6, 2))

show("convT1d dil", nn.ConvTranspose1d(3, 4, 3, stride=3, padding=2, dilation=2)(x1))
show("convT2d", nn.ConvTranspose2d(4, 2, 4, stride=(2, 3), padding=1, bias=False)(x2))
show("conv3d", nn.Conv3d(2, 3, (3, 1, 2), stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 1, 2))(x3))
show("conv3d nobias", nn.Conv3d(2, 4, 2, bias=False)(x3))
show("conv2d 1x1", nn.Conv2d(4, 8, 1)(x2))

show("maxpool1d", nn.MaxPool1d(kernel_size=4, stride=3, padding=2)(x1))
show("avgpool1d", nn.AvgPool1d(kernel_size=3, stride=1, padding=1)(x1))
show("maxpool2d", nn.MaxPool2d(kernel_size=3, stride=2, padding=(1, 0))(x2))
show("avgpool2d", nn.AvgPool2d(kernel_size=(2, 4), stride=(1, 2))(x2))
show("maxpool3d", nn.MaxPool3d(kernel_size=(2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0))(x3))
show("avgpool3d", nn.AvgPool3d(kernel_size=2, stride=1, padding=1)(x3))
print("pool neg", nn.MaxPool1d(2, padding=1)(-mx.ones((1, 4, 1))).reshape(-1).tolist())
print("avg pad", nn.AvgPool1d(2, padding=1)(mx.ones((1, 4, 1))).reshape(-1).tolist())

show("up2 nearest", nn.Upsample(scale_factor=2)(x2))
show("up3 near 1d", nn.Upsample(scale_factor=3, mode="nearest")(x1))
show("up lin 1d", nn.Upsample(scale_factor=2.5, mode="linear")(x1))
show("up lin 1d ac", nn.Upsample(scale_factor=2, mode="linear", align_corners=True)(x1))
show("up lin 3d", nn.Upsample(scale_factor=(2, 1, 1.5), mode="linear", align_corners=True)(x3))
show("up near 3d", nn.Upsample(scale_factor=(1, 2, 2))(x3))
show("up cubic", nn.Upsample(scale_factor=(0.5, 2), mode="cubic")(x2))
print("up values", nn.Upsample(scale_factor=2, mode="linear")(mx.array([[[0.0], [1.0], [3.0]]])).reshape(-1).tolist())
print("up ac values", nn.Upsample(scale_factor=2, mode="linear", align_corners=True)(mx.array([[[0.0], [1.0], [3.0]]])).reshape(-1).round(4).tolist())

bn = nn.BatchNorm(4)
print("bn init", bn.running_mean.tolist(), bn.running_var.tolist(), sorted(bn.state.keys()))
print("bn params", sorted(k for k, _ in tree_flatten(bn.parameters())), sorted(k for k, _ in tree_flatten(bn.trainable_parameters())))
for i in range(3):
    y = bn(x2 * (i + 1) + i)
show("bn train", y)
print("bn stats", f"{bn.running_mean.sum().item():.5f}", f"{bn.running_var.sum().item():.5f}")
bn.eval()
show("bn eval", bn(x2))
bn1 = nn.BatchNorm(3, affine=False)
show("bn 1d", bn1(x1))
show("bn 2d-input", nn.BatchNorm(3)(x1[:, 0]))
gn = nn.GroupNorm(2, 4)
show("groupnorm", gn(x2))
show("groupnorm3d", nn.GroupNorm(1, 2, pytorch_compatible=True)(x3))
inn = nn.InstanceNorm(4, eps=1e-3, affine=True)
show("instnorm", inn(x2))
show("instnorm1d", nn.InstanceNorm(3)(x1))
print("in params", sorted(inn.parameters().keys()), "gn params", sorted(gn.parameters().keys()))


class AutoEnc(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
                                 nn.MaxPool2d(2, stride=1, padding=0))
        self.dec = nn.Sequential(nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1),
                                 nn.BatchNorm(6), nn.ReLU(), nn.Upsample(scale_factor=1.0, mode="nearest"),
                                 nn.Conv2d(6, 4, 3, padding=1))

    def __call__(self, x):
        return self.dec(self.enc(x))


ae = AutoEnc()
mx.eval(ae.parameters())
print("ae", ae(x2).shape, sum(v.size for _, v in tree_flatten(ae.trainable_parameters())))
opt = optim.SGD(learning_rate=0.05, momentum=0.9)
target = mx.random.normal(ae(x2).shape)
lg = nn.value_and_grad(ae, lambda m, a, b: nn.losses.mse_loss(m(a), b))
for step in range(4):
    loss, g = lg(ae, x2, target)
    opt.update(ae, g)
    mx.eval(ae.parameters(), opt.state, ae.dec.layers[1].running_mean)
    print("step", step, f"{loss.item():.5f}")
print("rm", f"{ae.dec.layers[1].running_mean.sum().item():.5f}", f"{ae.dec.layers[1].running_var.sum().item():.5f}")
ae.eval()
print("eval out", f"{ae(x2).abs().mean().item():.5f}")
