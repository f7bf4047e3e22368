from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class Block(nn.Module):
    def __init__(self, in_dims, dims, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_dims, dims, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm(dims)
        self.conv2 = nn.Conv2d(dims, dims, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm(dims)
        if stride != 1 or in_dims != dims:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_dims, dims, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm(dims),
            )
        else:
            self.shortcut = None

    def __call__(self, x):
        out = nn.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.shortcut is None:
            out += x
        else:
            out += self.shortcut(x)
        return nn.relu(out)


class ResNet(nn.Module):
    def __init__(self, num_blocks=(1, 1), num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm(8)
        self.layer1 = self._make_layer(Block, 8, 8, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(Block, 8, 16, num_blocks[1], stride=2)
        self.drop = nn.Dropout(0.1)
        self.linear = nn.Linear(16, num_classes)

    def _make_layer(self, block, in_dims, dims, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for s in strides:
            layers.append(block(in_dims, dims, s))
            in_dims = dims
        return nn.Sequential(*layers)

    def num_params(self):
        nparams = sum(x.size for k, x in tree_flatten(self.parameters()))
        return nparams

    def __call__(self, x):
        x = nn.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        x = self.layer2(x)
        x = mx.mean(x, axis=[1, 2]).reshape(x.shape[0], -1)
        return self.linear(self.drop(x))


mx.random.seed(7)
N = 96
labels = mx.random.randint(0, 3, (N,))
base = mx.random.normal((3, 12, 12, 3))
images = base[labels] + 0.8 * mx.random.normal((N, 12, 12, 3))

model = ResNet()
mx.eval(model.parameters())
print("params", model.num_params())
optimizer = optim.SGD(learning_rate=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)


def train_step(model, inp, tgt):
    output = model(inp)
    loss = mx.mean(nn.losses.cross_entropy(output, tgt))
    acc = mx.mean(mx.argmax(output, axis=1) == tgt)
    return loss, acc


state = [model.state, optimizer.state, mx.random.state]


@partial(mx.compile, inputs=state, outputs=state)
def step(inp, tgt):
    train_step_fn = nn.value_and_grad(model, train_step)
    (loss, acc), grads = train_step_fn(model, inp, tgt)
    optimizer.update(model, grads)
    return loss, acc


model.train()
for epoch in range(3):
    perm = mx.random.permutation(N)
    tot_loss, tot_acc, nb = 0.0, 0.0, 0
    for s in range(0, N, 32):
        ids = perm[s : s + 32]
        loss, acc = step(images[ids], labels[ids])
        mx.eval(state)
        tot_loss += loss.item()
        tot_acc += acc.item()
        nb += 1
    print(f"epoch {epoch} loss {tot_loss / nb:.5f} train_acc {tot_acc / nb:.4f}")

model.eval()
logits = model(images[:16])
print("eval logits", logits.shape, f"{logits.square().mean().item():.5f}")
print("bn1 var", f"{model.bn1.running_var.mean().item():.5f}")
print("momentum buf", f"{sum(mx.abs(v).sum().item() for k, v in tree_flatten(optimizer.state) if k.endswith('v')):.4f}")
