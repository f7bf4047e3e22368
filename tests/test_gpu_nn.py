"""pycudamlx.nn / optimizers on the GPU under strict mode (every op ran as a kernel), without
real MLX: each GPU result is compared with the same computation by pycudamlx on the CPU stream
(same weights, same inputs, same seeds). The CPU backend is itself held to real MLX by
tests/test_nn.py and tests/test_optimizers.py, so these tests need no MLX on the GPU machine.

Covered: parameter initialisation on the GPU, MLP/conv/recurrent/attention/transformer forward
passes, losses, dropout, float16/bfloat16 models, optimizer steps (state trees included),
clip_grad_norm, and full training steps (nn.value_and_grad + optimizer.update).
TF32 is off (PYCUDAMLX_ENABLE_TF32=0) except in the test that checks the default TF32 path."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx import _env
from pycudamlx.utils import tree_flatten, tree_map

pytestmark = pytest.mark.gpu

#: Where the computations under test run, and where their reference runs.
GPU = mx.gpu
CPU = mx.cpu

RNG = np.random.default_rng(5)

#: Tolerances of a float32 GPU result (TF32 off) against the CPU backend, and for 16-bit floats.
TOL = {"float32": 2e-4, "float16": 2e-2, "bfloat16": 8e-2}


@pytest.fixture(autouse=True)
def _strict_gpu(gpu_device, monkeypatch):
    """Host fallbacks on a GPU stream raise; float32 matmuls in full precision."""
    monkeypatch.setattr(_env, "STRICT_GPU", True)
    monkeypatch.setenv("PYCUDAMLX_ENABLE_TF32", "0")
    yield


# ----------------------------------------------------------------------------------------------
# helpers


def _in_gpu_memory(a: mx.array) -> bool:
    mx.eval(a)
    return type(a._data).__name__ == "GpuArray"


def _host(a: mx.array) -> np.ndarray:
    mx.eval(a)
    if a.dtype in (mx.float16, mx.bfloat16):
        a = a.astype(mx.float32, stream=CPU)
    return np.array(a)


def _close(out: mx.array, ref: mx.array, tol: float = TOL["float32"]) -> None:
    """``out`` (computed on the GPU) lives in GPU memory and equals ``ref`` (the CPU's)."""
    assert _in_gpu_memory(out)
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    np.testing.assert_allclose(_host(out), _host(ref), rtol=tol, atol=tol)


def _close_trees(out: Any, ref: Any, tol: float = TOL["float32"]) -> None:
    fo, fr = tree_flatten(out), tree_flatten(ref)
    assert [k for k, _ in fo] == [k for k, _ in fr]
    for (k, a), (_, b) in zip(fo, fr):
        if isinstance(a, mx.array):
            if k.endswith("learning_rate") and a._data is not None and a.size == 1:
                # a hyperparameter made on the host: GPU ops read it through the constant
                # cache (backend/cuda/constants.py), the array keeps its host value
                np.testing.assert_allclose(_host(a), _host(b), rtol=tol, atol=tol)
                continue
            try:
                _close(a, b, tol)
            except AssertionError as e:
                raise AssertionError(f"{k}: {e}") from None
        else:
            assert a == b, k


def _on_cpu(a: mx.array) -> mx.array:
    """A CPU copy of ``a`` (its own data, nothing shared with the GPU array)."""
    return mx.array(np.array(a))


def _twins(build: Callable[[], nn.Module], seed: int = 0) -> tuple[nn.Module, nn.Module]:
    """``build()`` on the GPU and on the CPU from the same seed. The GPU's initialisation (random
    kernels) must give the CPU's weights; the CPU twin then takes the GPU weights exactly."""
    mx.random.seed(seed)
    with mx.stream(GPU):
        gpu = build()
        mx.eval(gpu.parameters())
    mx.random.seed(seed)
    with mx.stream(CPU):
        cpu = build()
        mx.eval(cpu.parameters())
    fg, fc = tree_flatten(gpu.parameters()), tree_flatten(cpu.parameters())
    assert [k for k, _ in fg] == [k for k, _ in fc]
    for (k, a), (_, b) in zip(fg, fc):
        # the normal sampler may differ by a few float32 ulps (one 16-bit ulp after a cast)
        _close(a, b, tol=1e-5 if a.dtype == mx.float32 else TOL[str(a.dtype).split(".")[-1]])
    cpu.update(tree_map(_on_cpu, gpu.parameters()))
    return gpu, cpu


def _x(*shape: int, dtype=np.float32) -> mx.array:
    return mx.array(RNG.standard_normal(shape).astype(dtype))


def _both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """``fn()`` with every op on the GPU, then on the CPU."""
    with mx.stream(GPU):
        out = fn()
        mx.eval(out)
    with mx.stream(CPU):
        ref = fn()
        mx.eval(ref)
    return out, ref


def _forward(gpu: nn.Module, cpu: nn.Module, *inputs: Any) -> tuple[Any, Any]:
    with mx.stream(GPU):
        out = gpu(*inputs)
        mx.eval(out)
    with mx.stream(CPU):
        ref = cpu(*inputs)
        mx.eval(ref)
    return out, ref


# ----------------------------------------------------------------------------------------------
# forward passes


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32),
                         nn.Linear(32, 32), nn.SiLU(), nn.RMSNorm(32),
                         nn.Linear(32, 32, bias=False), nn.Mish(), nn.Dropout(0.3),
                         nn.Linear(32, 10))


def test_mlp_forward():
    gpu, cpu = _twins(_mlp)
    gpu.eval(), cpu.eval()
    out, ref = _forward(gpu, cpu, _x(7, 12))
    _close(out, ref)


@pytest.mark.parametrize("tf32", [False, True], ids=["tf32_off", "tf32_default"])
def test_mlp_forward_large(tf32, monkeypatch):
    """A wider MLP (cuBLAS/tensor-core GEMM sizes); with TF32 (MLX's default on CUDA) the
    inputs of each product are rounded to 10 mantissa bits, hence the looser tolerance."""
    if tf32:
        monkeypatch.delenv("PYCUDAMLX_ENABLE_TF32", raising=False)
        monkeypatch.delenv("MLX_ENABLE_TF32", raising=False)

    def build():
        return nn.Sequential(nn.Linear(96, 256), nn.ReLU(), nn.Linear(256, 256), nn.Tanh(),
                             nn.Linear(256, 33))

    gpu, cpu = _twins(build)
    out, ref = _forward(gpu, cpu, _x(130, 96))
    _close(out, ref, tol=2e-2 if tf32 else 2e-4)


LOSSES = {
    "cross_entropy_mean": lambda o, t, p: nn.losses.cross_entropy(o, t, reduction="mean"),
    "cross_entropy_smooth": lambda o, t, p: nn.losses.cross_entropy(o, t, label_smoothing=0.1),
    "cross_entropy_probs": lambda o, t, p: nn.losses.cross_entropy(o, mx.softmax(p, axis=-1)),
    "nll": lambda o, t, p: nn.losses.nll_loss(nn.log_softmax(o), t, reduction="sum"),
    "binary_cross_entropy": lambda o, t, p: nn.losses.binary_cross_entropy(
        o, mx.sigmoid(p), reduction="mean"),
    "mse": lambda o, t, p: nn.losses.mse_loss(o, p, reduction="mean"),
    "l1": lambda o, t, p: nn.losses.l1_loss(o, p),
    "smooth_l1": lambda o, t, p: nn.losses.smooth_l1_loss(o, p, beta=0.5, reduction="sum"),
    "huber": lambda o, t, p: nn.losses.huber_loss(o, p, delta=0.7, reduction="mean"),
    "log_cosh": lambda o, t, p: nn.losses.log_cosh_loss(o, p, reduction="mean"),
    "kl_div": lambda o, t, p: nn.losses.kl_div_loss(nn.log_softmax(o), nn.log_softmax(p),
                                                    reduction="sum"),
    "gaussian_nll": lambda o, t, p: nn.losses.gaussian_nll_loss(o, p, mx.exp(p) + 0.1,
                                                                full=True),
    "cosine_similarity": lambda o, t, p: nn.losses.cosine_similarity_loss(o, p, axis=-1),
    "hinge": lambda o, t, p: nn.losses.hinge_loss(o, mx.sign(p), reduction="mean"),
    "margin_ranking": lambda o, t, p: nn.losses.margin_ranking_loss(
        o[:, 0], p[:, 0], mx.sign(p[:, 1]), margin=0.1),
    "triplet": lambda o, t, p: nn.losses.triplet_loss(o, p, o[::-1], reduction="mean"),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_losses(name):
    logits, other = _x(7, 10), _x(7, 10)
    tgt = mx.array(RNG.integers(0, 10, size=(7,)).astype(np.int32))
    out, ref = _both(lambda: LOSSES[name](logits, tgt, other))
    _close(out, ref)


CONV_NETS = {
    "conv2d": lambda: nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=2, groups=2), nn.GroupNorm(2, 8), nn.AvgPool2d(2, 1),
        nn.Upsample(2, mode="linear")),
    "conv1d": lambda: nn.Sequential(
        nn.Conv1d(4, 8, 5, padding=2, dilation=1), nn.InstanceNorm(8, affine=True),
        nn.LeakyReLU(0.1), nn.MaxPool1d(3, stride=2, padding=1),
        nn.ConvTranspose1d(8, 6, 3, stride=2, padding=1), nn.Upsample(1.5, mode="nearest")),
    "conv3d": lambda: nn.Sequential(
        nn.Conv3d(2, 4, 3, padding=1), nn.ELU(), nn.AvgPool3d(2),
        nn.Conv3d(4, 4, (1, 3, 3), bias=False), nn.Hardswish()),
    "transposed2d": lambda: nn.Sequential(
        nn.ConvTranspose2d(3, 6, 3, stride=2, padding=1, output_padding=1), nn.GroupNorm(3, 6),
        nn.GELU(approx="tanh"), nn.Conv2d(6, 4, 1), nn.Upsample((2, 1), mode="cubic")),
}
CONV_INPUTS = {"conv2d": (2, 16, 16, 3), "conv1d": (2, 21, 4), "conv3d": (2, 6, 7, 8, 2),
               "transposed2d": (2, 7, 9, 3)}


@pytest.mark.parametrize("name", list(CONV_NETS))
def test_conv_net_forward(name):
    gpu, cpu = _twins(CONV_NETS[name])
    gpu.eval(), cpu.eval()
    out, ref = _forward(gpu, cpu, _x(*CONV_INPUTS[name]))
    _close(out, ref, tol=5e-4)


def test_batchnorm_training_updates_running_stats():
    gpu, cpu = _twins(lambda: nn.BatchNorm(6, momentum=0.3))
    x = _x(5, 4, 6) * 3 + 1
    for _ in range(2):
        out, ref = _forward(gpu, cpu, x)
        _close(out, ref)
    _close_trees(gpu.state, cpu.state)


def test_transformer_encoder_forward():
    gpu, cpu = _twins(lambda: nn.TransformerEncoder(2, 32, 4, mlp_dims=48))
    gpu.eval(), cpu.eval()
    x = _x(2, 9, 32)
    mask = nn.MultiHeadAttention.create_additive_causal_mask(9)
    out, ref = _forward(gpu, cpu, x, mask)
    _close(out, ref, tol=1e-3)


def test_transformer_post_norm_with_decoder():
    def build():
        return nn.Transformer(dims=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2,
                              mlp_dims=40, norm_first=False, activation=nn.gelu)

    gpu, cpu = _twins(build)
    gpu.eval(), cpu.eval()
    src, tgt = _x(2, 7, 32), _x(2, 5, 32)
    tgt_mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
    out, ref = _forward(gpu, cpu, src, tgt, None, tgt_mask, None)
    _close(out, ref, tol=1e-3)


def test_attention_with_positions():
    """MultiHeadAttention with distinct query/key/value dims, RoPE, ALiBi, sinusoids."""
    gpu, cpu = _twins(lambda: nn.MultiHeadAttention(24, 4, query_input_dims=16,
                                                    key_input_dims=20, value_input_dims=12,
                                                    value_dims=32, value_output_dims=8, bias=True))
    q, k, v = _x(3, 6, 16), _x(3, 11, 20), _x(3, 11, 12)
    out, ref = _forward(gpu, cpu, q, k, v)
    _close(out, ref, tol=1e-3)

    rope = nn.RoPE(8, traditional=True, base=500.0)
    alibi = nn.ALiBi()
    sin = nn.SinusoidalPositionalEncoding(16, cos_first=True)
    x = _x(2, 4, 9, 8)
    out, ref = _both(lambda: [rope(x, offset=3), nn.RoPE(6)(x),
                              alibi(x @ x.swapaxes(-1, -2), offset=1),
                              sin(mx.arange(5).astype(mx.float32))])
    for a, b in zip(out, ref):
        _close(a, b, tol=1e-4)


def test_embedding_language_model_forward():
    """Embedding, an encoder, and the embedding reused as the output projection (as_linear)."""
    gpu, cpu = _twins(_EmbeddingLM)
    gpu.eval(), cpu.eval()
    ids = mx.array(RNG.integers(0, 50, size=(2, 9)).astype(np.int32))
    out, ref = _forward(gpu, cpu, ids)
    _close(out, ref, tol=1e-3)


class _EmbeddingLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 32)
        self.enc = nn.TransformerEncoder(1, 32, 4)

    def __call__(self, ids):
        return self.emb.as_linear(self.enc(self.emb(ids), None))


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_recurrent(layer):
    gpu, cpu = _twins(lambda: getattr(nn, layer)(6, 8))
    x = _x(3, 5, 6)
    out, ref = _forward(gpu, cpu, x)
    if layer == "LSTM":  # (hidden, cell)
        _close_trees(list(out), list(ref))
    else:
        _close(out, ref)


@pytest.mark.parametrize("layer,shape", [("Dropout(0.5)", (4, 33)),
                                         ("Dropout2d(0.25)", (3, 4, 5, 6)),
                                         ("Dropout3d(0.4)", (2, 3, 4, 5, 6))])
def test_dropout_masks_match_the_cpu(layer, shape):
    """The same seed draws the same mask on both devices (the GPU's bernoulli is bit-exact)."""
    drop = eval("nn." + layer)
    x = _x(*shape)
    mx.random.seed(3)
    with mx.stream(GPU):
        out = drop(x)
        mx.eval(out)
    mx.random.seed(3)
    with mx.stream(CPU):
        ref = drop(x)
    _close(out, ref, tol=1e-6)
    assert (_host(out) == 0).any()


class _Block(nn.Module):
    """Linear, GELU, LayerNorm, a Transformer encoder layer (no mask), Linear."""

    def __init__(self, dtype=None):
        super().__init__()
        self.inp = nn.Linear(16, 64)
        self.norm = nn.LayerNorm(64)
        self.layer = nn.TransformerEncoderLayer(64, 4, 96)
        self.out = nn.Linear(64, 8)
        if dtype is not None:
            self.set_dtype(dtype)

    def __call__(self, x):
        return self.out(self.layer(self.norm(nn.gelu(self.inp(x))), None))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_forward(dtype):
    d = getattr(mx, dtype)
    gpu, cpu = _twins(lambda: _Block(d))
    gpu.eval(), cpu.eval()
    x = _x(3, 5, 16).astype(d)
    out, ref = _forward(gpu, cpu, x)
    assert out.dtype == d
    _close(out, ref, tol=TOL[dtype])


# ----------------------------------------------------------------------------------------------
# optimizers


def _param_tree() -> dict:
    """A parameter-shaped tree: nested dicts, a list, a vector, a 3-D tensor, a matrix."""
    shapes = {"w": (16, 8), "b": (8,), "layers": [{"k": (2, 3, 4)}, {"k": (9, 5), "s": (1,)}]}
    return tree_map(lambda s: RNG.standard_normal(s).astype(np.float32), shapes,
                    is_leaf=lambda s: isinstance(s, tuple))


OPTIMIZERS = [
    "SGD(0.1)", "SGD(0.05, momentum=0.9, weight_decay=0.01)",
    "SGD(0.05, momentum=0.9, nesterov=True)", "SGD(0.05, momentum=0.8, dampening=0.3)",
    "RMSprop(0.01)", "Adagrad(0.1)", "AdaDelta(0.5, rho=0.8)",
    "Adam(0.01)", "Adam(0.01, betas=[0.8, 0.9], bias_correction=True)",
    "AdamW(0.01)", "AdamW(0.02, weight_decay=0.1, bias_correction=True)", "Adamax(0.01)",
    "Lion(0.001)", "Lion(0.001, weight_decay=0.1)",
    "Adafactor()", "Adafactor(learning_rate=0.01, relative_step=False, beta_1=0.9, "
    "weight_decay=0.01)", "Adafactor(warmup_init=True, scale_parameter=False)",
    "Muon(0.02)", "Muon(0.02, nesterov=False, weight_decay=0.01, ns_steps=3)",
    "Adam(learning_rate=optim.exponential_decay(0.1, 0.9))",
    "SGD(optim.cosine_decay(0.1, 3, end=0.01), momentum=0.5)",
]


@pytest.mark.parametrize("expr", OPTIMIZERS)
def test_optimizer_steps(expr):
    """Three steps on GPU parameters give the CPU's parameters and optimizer state; every
    parameter and state array stays in GPU memory."""
    params = _param_tree()
    grads = [tree_map(lambda p: RNG.standard_normal(p.shape).astype(np.float32), params)
             for _ in range(3)]
    results = []
    for device in (GPU, CPU):
        opt = eval("optim." + expr, {"optim": optim})
        with mx.stream(device):
            p = tree_map(mx.array, params)
            for g in grads:
                p = opt.apply_gradients(tree_map(mx.array, g), p)
                mx.eval(p, opt.state)
        results.append((p, opt.state))
    (p_gpu, s_gpu), (p_cpu, s_cpu) = results
    _close_trees(p_gpu, p_cpu, tol=1e-4)
    _close_trees(s_gpu, s_cpu, tol=1e-4)
    assert s_gpu["step"].item() == 3


@pytest.mark.parametrize("expr", ["SGD(0.1, momentum=0.9)", "Adam(0.01)", "AdamW(0.01)",
                                  "Lion(0.01)", "Adafactor()"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_optimizer_low_precision_parameters(expr, dtype):
    d = getattr(mx, dtype)
    params = _param_tree()
    grads = tree_map(lambda p: RNG.standard_normal(p.shape).astype(np.float32), params)
    results = []
    for device in (GPU, CPU):
        opt = eval("optim." + expr, {"optim": optim})
        with mx.stream(device):
            p = tree_map(lambda a: mx.array(a).astype(d), params)
            for _ in range(2):
                p = opt.apply_gradients(tree_map(lambda a: mx.array(a).astype(d), grads), p)
            mx.eval(p)
        results.append(p)
    for (k, a), _ in zip(tree_flatten(results[0]), tree_flatten(results[1])):
        assert a.dtype == d, k
    _close_trees(results[0], results[1], tol=TOL[dtype])


def test_clip_grad_norm_and_update_model():
    grads = tree_map(lambda a: a * 0.1 + 0.01, _param_tree())
    for max_norm in (0.5, 100.0):
        out, ref = _both(lambda: optim.clip_grad_norm(tree_map(mx.array, grads), max_norm))
        _close_trees(out[0], ref[0], tol=1e-5)
        _close(out[1], ref[1], tol=1e-5)

    gpu, cpu = _twins(lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2)))
    g = tree_map(lambda p: mx.array(RNG.standard_normal(p.shape).astype(np.float32)),
                 cpu.parameters())
    for model, device in ((gpu, GPU), (cpu, CPU)):
        opt = optim.MultiOptimizer([optim.Adam(0.01), optim.SGD(0.1)],
                                   [lambda name, _: name.endswith("bias")])
        with mx.stream(device):
            opt.update(model, g)
            mx.eval(model.parameters())
    _close_trees(gpu.parameters(), cpu.parameters(), tol=1e-5)


# ----------------------------------------------------------------------------------------------
# training steps


def _train(model: nn.Module, opt: optim.Optimizer, loss_fn: Callable, batches: list,
           device: Any) -> list[float]:
    step = nn.value_and_grad(model, loss_fn)
    losses = []
    with mx.stream(device):
        for inputs in batches:
            loss, grads = step(model, *inputs)
            opt.update(model, grads)
            mx.eval(loss, model.parameters(), opt.state)
            if device is GPU:
                assert _in_gpu_memory(loss)
                assert all(_in_gpu_memory(g) for _, g in tree_flatten(grads))
            losses.append(loss.item())
    return losses


def _train_both(build: Callable, make_opt: Callable, loss_fn: Callable, batches: list,
                tol: float) -> None:
    gpu, cpu = _twins(build)
    lg = _train(gpu, make_opt(), loss_fn, batches, GPU)
    lc = _train(cpu, make_opt(), loss_fn, batches, CPU)
    np.testing.assert_allclose(lg, lc, rtol=tol, atol=tol)
    _close_trees(gpu.parameters(), cpu.parameters(), tol=tol)
    assert lg[-1] < lg[0]  # it learns


@pytest.mark.parametrize("opt", ["Adam(0.01)", "SGD(0.1, momentum=0.9)", "AdamW(0.01)",
                                 "Lion(0.001)", "Adafactor(learning_rate=0.01, "
                                 "relative_step=False)"])
def test_mlp_training_step(opt):
    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    x = _x(16, 6) * 2
    y = mx.array(RNG.integers(0, 3, size=(16,)).astype(np.int32))
    _train_both(lambda: nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.LayerNorm(16),
                                      nn.Linear(16, 3)),
                lambda: eval("optim." + opt, {"optim": optim}), loss_fn, [(x, y)] * 4,
                tol=2e-4)


def test_conv_training_step():
    def build():
        return nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.BatchNorm(6), nn.SiLU(),
                             nn.MaxPool2d(2), nn.Conv2d(6, 4, 3, stride=2),
                             lambda h: h.reshape(h.shape[0], -1), nn.Linear(16, 5))

    def loss_fn(model, x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    x = _x(4, 10, 10, 2)
    y = mx.array(RNG.integers(0, 5, size=(4,)).astype(np.int32))
    _train_both(build, lambda: optim.SGD(0.05, momentum=0.9), loss_fn, [(x, y)] * 3, tol=1e-3)


def test_transformer_lm_training_step():
    vocab, dims = 40, 32

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, dims)
            self.encoder = nn.TransformerEncoder(2, dims, 4, mlp_dims=64, norm_first=True)
            self.head = nn.Linear(dims, vocab)

        def __call__(self, ids):
            mask = nn.MultiHeadAttention.create_additive_causal_mask(ids.shape[1])
            return self.head(self.encoder(self.embedding(ids), mask))

    def loss_fn(model, ids, targets):
        return nn.losses.cross_entropy(model(ids), targets, reduction="mean")

    ids = RNG.integers(0, vocab, size=(3, 12)).astype(np.int32)
    batches = [(mx.array(ids[:, :-1]), mx.array(ids[:, 1:]))] * 3
    _train_both(LM, lambda: optim.AdamW(3e-3, weight_decay=0.01), loss_fn, batches, tol=1e-3)


def test_value_and_grad_of_model_on_gpu():
    """mx.value_and_grad over the trainable parameters directly (MLX's functional style),
    with the gradients of a frozen layer left out."""
    gpu, cpu = _twins(lambda: nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 1)))
    gpu.layers[0].freeze(), cpu.layers[0].freeze()
    x, y = _x(9, 5), _x(9, 1)
    results = []
    for model, device in ((gpu, GPU), (cpu, CPU)):
        def loss(params, x, y, model=model):
            model.update(params)
            return nn.losses.mse_loss(model(x), y)

        with mx.stream(device):
            value, grads = mx.value_and_grad(loss)(model.trainable_parameters(), x, y)
            mx.eval(value, grads)
        results.append((value, grads))
    _close(results[0][0], results[1][0], tol=1e-5)
    _close_trees(results[0][1], results[1][1], tol=1e-4)
    assert [k for k, _ in tree_flatten(results[0][1])] == ["layers.2.weight", "layers.2.bias"]
