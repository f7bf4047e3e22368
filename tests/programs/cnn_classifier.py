import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim


class CNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm(16)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.gap = nn.AvgPool2d(kernel_size=4)
        self.drop = nn.Dropout(p=0.25)
        self.fc = nn.Linear(16, num_classes)

    def __call__(self, x):
        x = self.pool(nn.relu(self.bn1(self.conv1(x))))
        x = self.pool(nn.relu(self.bn2(self.conv2(x))))
        x = self.gap(x)
        x = x.reshape(x.shape[0], -1)
        return self.fc(self.drop(x))


def make_data(n, key):
    k1, k2 = mx.random.split(key)
    labels = mx.random.randint(0, 4, (n,), key=k1)
    yy, xx = mx.meshgrid(mx.arange(16), mx.arange(16), indexing="ij")
    quads = [(yy < 8) & (xx < 8), (yy < 8) & (xx >= 8), (yy >= 8) & (xx < 8), (yy >= 8) & (xx >= 8)]
    templates = mx.stack([q.astype(mx.float32) for q in quads])
    imgs = templates[labels] + 0.5 * mx.random.normal((n, 16, 16), key=k2)
    return imgs[..., None], labels


def batch_iterate(batch_size, X, y):
    perm = mx.random.permutation(y.size)
    for s in range(0, y.size, batch_size):
        ids = perm[s : s + batch_size]
        yield X[ids], y[ids]


def loss_fn(model, X, y):
    return nn.losses.cross_entropy(model(X), y, reduction="mean")


def eval_fn(model, X, y):
    return mx.mean(mx.argmax(model(X), axis=1) == y)


mx.random.seed(42)
train_x, train_y = make_data(192, mx.random.key(1))
test_x, test_y = make_data(64, mx.random.key(2))
model = CNN()
mx.eval(model.parameters())
optimizer = optim.Adam(learning_rate=3e-3)
loss_and_grad_fn = nn.value_and_grad(model, loss_fn)

print("input", train_x.shape, train_x.dtype)
for epoch in range(3):
    model.train()
    losses = []
    for X, y in batch_iterate(32, train_x, train_y):
        loss, grads = loss_and_grad_fn(model, X, y)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
        losses.append(loss.item())
    model.eval()
    acc = eval_fn(model, test_x, test_y)
    print(f"epoch {epoch} loss {sum(losses) / len(losses):.5f} acc {acc.item():.4f}")

print("running_mean", f"{model.bn2.running_mean.sum().item():.5f}",
      "running_var", f"{model.bn2.running_var.sum().item():.5f}")
logits = model(test_x[:5])
print("logits", logits.shape, f"{mx.abs(logits).sum().item():.5f}")
