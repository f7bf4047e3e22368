import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from mlx.utils import tree_flatten, tree_map


class SeqClassifier(nn.Module):
    def __init__(self, vocab, dims, hidden, n_classes, cell="lstm"):
        super().__init__()
        self.embed = nn.Embedding(vocab, dims)
        if cell == "lstm":
            self.rnn = nn.LSTM(dims, hidden)
        elif cell == "gru":
            self.rnn = nn.GRU(dims, hidden)
        else:
            self.rnn = nn.RNN(dims, hidden, nonlinearity=nn.tanh)
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(hidden, n_classes)
        self.cell = cell

    def __call__(self, x, lengths):
        h = self.embed(x)
        out = self.rnn(h)
        if self.cell == "lstm":
            out = out[0]  # hidden states; out[1] holds the cell states
        # hidden state at the last real (unpadded) position of each sequence
        idx = (lengths - 1)[:, None, None]
        last = mx.take_along_axis(out, mx.broadcast_to(idx, (x.shape[0], 1, out.shape[-1])), axis=1)
        return self.head(self.dropout(last.squeeze(1)))


rng = np.random.default_rng(0)
vocab, T, N = 20, 12, 96
lengths_np = rng.integers(4, T + 1, size=N)
tokens_np = rng.integers(1, vocab, size=(N, T))
for i, l in enumerate(lengths_np):
    tokens_np[i, l:] = 0  # padding
# label: does token 7 appear more often than token 3 in the sequence?
labels_np = ((tokens_np == 7).sum(1) > (tokens_np == 3).sum(1)).astype(np.int32)
tokens, lengths, labels = mx.array(tokens_np), mx.array(lengths_np), mx.array(labels_np)
print("positives", float(labels.sum().item()))


def loss_fn(model, x, l, y):
    return nn.losses.cross_entropy(model(x, l), y, reduction="mean")


def evaluate(model):
    model.eval()
    logits = model(tokens, lengths)
    loss = loss_fn(model, tokens, lengths, labels)
    model.train()
    return mx.mean(mx.argmax(logits, axis=1) == labels).item(), loss.item()


for cell in ("lstm", "gru", "rnn"):
    mx.random.seed(1)
    model = SeqClassifier(vocab, 16, 24, 2, cell)
    mx.eval(model.parameters())
    nparams = sum(v.size for _, v in tree_flatten(model.parameters()))
    opt = optim.RMSprop(learning_rate=1e-2)
    loss_and_grad = nn.value_and_grad(model, loss_fn)
    for epoch in range(4):
        perm = mx.random.permutation(N)
        for b in range(0, N, 32):
            idx = perm[b:b + 32]
            loss, grads = loss_and_grad(model, tokens[idx], lengths[idx], labels[idx])
            opt.update(model, grads)
            mx.eval(model.parameters(), opt.state)
    acc, full_loss = evaluate(model)
    gnorm = mx.sqrt(sum((g * g).sum() for _, g in tree_flatten(grads)))
    print(cell, float(nparams), f"loss {full_loss:.5f}", f"acc {acc:.4f}", f"gnorm {gnorm.item():.5f}")

# the LSTM returns (hidden, cell) with shape (B, T, H); initial states are accepted
lstm = nn.LSTM(4, 5)
x = mx.random.normal((2, 3, 4))
hs, cs = lstm(x)
print("lstm", hs.shape, cs.shape, f"{hs.sum().item():.5f}", f"{cs.sum().item():.5f}")
h0, c0 = mx.zeros((2, 5)) + 0.1, mx.ones((2, 5)) * 0.2
hs2, cs2 = lstm(x, hidden=h0, cell=c0)
print("lstm init", f"{hs2[:, -1].sum().item():.5f}", f"{cs2[:, -1].sum().item():.5f}")
gru = nn.GRU(4, 6, bias=False)
g = gru(x[0])  # unbatched
print("gru", g.shape, f"{g.sum().item():.5f}", f"{gru(x, hidden=mx.ones((2, 6))).mean().item():.5f}")
