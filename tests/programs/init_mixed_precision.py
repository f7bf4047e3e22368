import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_map


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1)
        self.norm = nn.GroupNorm(4, 8, pytorch_compatible=True)
        self.conv2 = nn.Conv1d(8, 8, kernel_size=3)
        self.fc1 = nn.Linear(8 * 4, 16)
        self.fc2 = nn.Linear(16, 5)

    def __call__(self, x):
        x = nn.relu(self.norm(self.conv(x)))          # (B, 4, 4, 8)
        B = x.shape[0]
        x = self.conv2(x.reshape(B, 16, 8))            # (B, 14, 8)
        x = x[:, :4, :].reshape(B, -1)
        x = nn.tanh(self.fc1(x))
        return self.fc2(x)


mx.random.seed(123)
model = ConvNet()

# Custom init: He-normal conv kernels, Glorot-uniform linear weights, zero biases
he = nn.init.he_normal()
glorot = nn.init.glorot_uniform()


def init_fn(name, module):
    if isinstance(module, (nn.Conv2d, nn.Conv1d)):
        module.weight = he(module.weight)
    elif isinstance(module, nn.Linear):
        module.weight = glorot(module.weight)
    if hasattr(module, "bias") and not isinstance(module, nn.GroupNorm):
        module.bias = nn.init.constant(0.0)(module.bias)


model.apply_to_modules(init_fn)
mx.eval(model.parameters())
for k, v in tree_flatten(model.parameters()):
    print(k, v.shape, f"{v.std().item():.5f}", f"{v.mean().item():.5f}")

# model.apply maps every parameter array
model.fc1.apply(lambda p: p * 0.5)
model.apply(lambda p: p + 1.0, filter_fn=lambda m, k, v: k in ("fc2", "bias"))
print("fc1 std after apply", f"{model.fc1.weight.std().item():.5f}", "fc2 bias", f"{model.fc2.bias.sum().item():.4f}", "conv bias", f"{model.conv.bias.sum().item():.4f}")
normal_init = nn.init.normal(mean=0.0, std=0.02)
model.fc2.weight = normal_init(mx.zeros_like(model.fc2.weight))
model.update(tree_map(lambda p: p, model.parameters()))
print("fc2 std", f"{model.fc2.weight.std().item():.5f}")

x = mx.random.normal((6, 8, 8, 3))
out32 = model(x)
print("fp32", out32.dtype, out32.shape, f"{out32.sum().item():.5f}")
for dtype in (mx.bfloat16, mx.float16):
    model.set_dtype(dtype)
    out = model(x.astype(dtype))
    err = mx.abs(out.astype(mx.float32) - out32).max()
    print(str(dtype), out.dtype, model.conv.weight.dtype, model.norm.weight.dtype,
          "close", (err < 0.05 * mx.abs(out32).max()).item())
model.set_dtype(mx.float32)
print("back", model.fc1.weight.dtype)

# A few bf16 training steps with an fp32 master copy kept by the optimizer state
model.set_dtype(mx.bfloat16)
y = mx.random.randint(0, 5, (6,))
opt = optim.Adam(learning_rate=1e-2)


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x).astype(mx.float32), y, reduction="mean")


lg = nn.value_and_grad(model, loss_fn)
xb = x.astype(mx.bfloat16)
for i in range(5):
    loss, grads = lg(model, xb, y)
    opt.update(model, grads)
    mx.eval(model.parameters(), opt.state)
print("bf16 grads", grads["fc2"]["weight"].dtype, "param", model.fc2.weight.dtype,
      "state", opt.state["fc2"]["weight"]["m"].dtype, "loss<2", (loss < 2.0).item())
