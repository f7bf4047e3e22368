from functools import partial

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np


class MLP(nn.Module):
    """A simple MLP with dropout, as in the MNIST example."""

    def __init__(self, num_layers, input_dim, hidden_dim, output_dim, p=0.2):
        super().__init__()
        layer_sizes = [input_dim] + [hidden_dim] * num_layers + [output_dim]
        self.layers = [
            nn.Linear(idim, odim)
            for idim, odim in zip(layer_sizes[:-1], layer_sizes[1:])
        ]
        self.dropout = nn.Dropout(p)

    def __call__(self, x):
        for l in self.layers[:-1]:
            x = self.dropout(nn.relu(l(x)))
        return self.layers[-1](x)


def loss_fn(model, X, y):
    return nn.losses.cross_entropy(model(X), y, reduction="mean")


def batch_iterate(batch_size, X, y):
    perm = mx.array(np.random.permutation(y.size))
    for s in range(0, y.size, batch_size):
        ids = perm[s : s + batch_size]
        yield X[ids], y[ids]


# 8x8 "digits": a class-dependent template plus noise, uint8 pixels as in MNIST
np.random.seed(0)
mx.random.seed(0)
templates = np.random.rand(10, 64)
labels = np.random.randint(0, 10, 300)
pixels = np.clip(templates[labels] + 0.3 * np.random.randn(300, 64), 0, 1)
images = mx.array((pixels * 255).astype(np.uint8)).astype(mx.float32) / 255.0
train_images, train_labels = images[:240], mx.array(labels[:240])
test_images, test_labels = images[240:], mx.array(labels[240:])
print("data", train_images.shape, train_images.dtype, train_labels.dtype)


def run(capture_random):
    mx.random.seed(1)
    np.random.seed(1)
    model = MLP(2, 64, 32, 10)
    mx.eval(model.parameters())
    optimizer = optim.SGD(learning_rate=0.1, momentum=0.9)
    state = [model.state, optimizer.state]
    if capture_random:
        state.append(mx.random.state)

    @partial(mx.compile, inputs=state, outputs=state)
    def step(X, y):
        loss_and_grad_fn = nn.value_and_grad(model, loss_fn)
        loss, grads = loss_and_grad_fn(model, X, y)
        optimizer.update(model, grads)
        return loss

    @partial(mx.compile, inputs=model.state)
    def eval_fn(X, y):
        return mx.mean(mx.argmax(model(X), axis=1) == y)

    for e in range(4):
        model.train()
        losses = []
        for X, y in batch_iterate(48, train_images, train_labels):
            losses.append(step(X, y))
            mx.eval(state)
        model.eval()
        accuracy = eval_fn(test_images, test_labels)
        print(f"Epoch {e}: loss {mx.array(losses).mean().item():.5f}, "
              f"test accuracy {accuracy.item():.3f}")
    return model


run(capture_random=True)
model = run(capture_random=False)
print("after", f"{mx.random.uniform().item():.6f}")
print("weight norm", f"{mx.linalg.norm(model.layers[0].weight).item():.5f}")
