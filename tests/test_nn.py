"""pycudamlx.nn against real mlx.nn 0.32.4: same seed -> same initial parameters (names,
shapes, values), same weights -> same forward outputs, Module API behaviour and error
messages, losses, activations, initializers, load_weights of MLX-saved files."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pycudamlx.core as mx
import pycudamlx.nn as nn
import pycudamlx.optimizers as optim
from pycudamlx.utils import tree_flatten, tree_map, tree_unflatten

M = pytest.importorskip("mlx.core")
MN = pytest.importorskip("mlx.nn")
from mlx.utils import tree_flatten as m_tree_flatten  # noqa: E402
from mlx.utils import tree_map as m_tree_map  # noqa: E402


def _has_autodiff() -> bool:
    try:
        mx.value_and_grad
    except AttributeError:
        return False
    return True


needs_autodiff = pytest.mark.skipif(not _has_autodiff(),
                                    reason="mx.value_and_grad not in pycudamlx.core yet")


def to_mlx(tree):
    return tree_map(lambda a: M.array(np.array(a)) if isinstance(a, mx.array) else a, tree)


def to_ours(tree):
    return m_tree_map(lambda a: mx.array(np.array(a)) if isinstance(a, M.array) else a, tree)


def npy(a):
    return np.array(a.astype(mx.float32) if isinstance(a, mx.array) and a.dtype == mx.bfloat16
                    else a)


def build_pair(expr: str, seed: int = 0):
    """The same constructor in both libraries under the same seed."""
    M.random.seed(seed)
    mx.random.seed(seed)
    theirs = eval("MN." + expr)
    ours = eval("nn." + expr)
    return ours, theirs


def assert_same_params(ours, theirs, exact: bool = False):
    po, pt = tree_flatten(ours.parameters()), m_tree_flatten(theirs.parameters())
    assert [k for k, _ in po] == [k for k, _ in pt]
    for (k, a), (_, b) in zip(po, pt):
        assert a.shape == tuple(b.shape), k
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], k
        if exact:
            np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=k)
        else:
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6,
                                       err_msg=k)


def _no_addresses(text: str) -> str:
    """A repr with function addresses and module paths blanked (RNN shows its nonlinearity)."""
    return re.sub(r"<function (\S+) at 0x[0-9a-f]+>", r"<function \1>", text)


def close(a, b, rtol=1e-4, atol=1e-5):
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, rtol, atol)
        return
    assert a.shape == tuple(b.shape)
    np.testing.assert_allclose(npy(a), np.array(b), rtol=rtol, atol=atol)


rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    x = rng.standard_normal(shape).astype(dtype)
    return mx.array(x), M.array(x)


# ----------------------------------------------------------------------------- layers
LAYERS = [
    # (constructor, input shapes, extra call kwargs)
    ("Linear(5, 7)", [(3, 5)]),
    ("Linear(5, 7, bias=False)", [(2, 4, 5)]),
    ("Bilinear(3, 4, 5)", [(6, 3), (6, 4)]),
    ("Identity(1, a=2)", [(2, 3)]),
    ("Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))", [(3, 4)]),
    ("LayerNorm(6)", [(2, 3, 6)]),
    ("LayerNorm(6, affine=False)", [(2, 6)]),
    ("LayerNorm(6, bias=False)", [(2, 6)]),
    ("RMSNorm(6, eps=1e-3)", [(2, 3, 6)]),
    ("GroupNorm(2, 6)", [(2, 3, 4, 6)]),
    ("GroupNorm(3, 6, pytorch_compatible=True)", [(2, 5, 6)]),
    ("GroupNorm(2, 4, affine=False)", [(2, 5, 4)]),
    ("InstanceNorm(4)", [(2, 3, 5, 4)]),
    ("InstanceNorm(4, affine=True)", [(2, 7, 4)]),
    ("Conv1d(3, 4, 3, stride=2, padding=1)", [(2, 9, 3)]),
    ("Conv1d(4, 6, 3, groups=2, dilation=2, bias=False)", [(1, 11, 4)]),
    ("Conv2d(3, 5, (3, 2), stride=(2, 1), padding=1)", [(2, 7, 6, 3)]),
    ("Conv2d(4, 4, 3, groups=4)", [(1, 6, 6, 4)]),
    ("Conv3d(2, 3, 2, padding=1)", [(1, 4, 4, 3, 2)]),
    ("ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1)", [(2, 5, 3)]),
    ("ConvTranspose2d(3, 2, 3, stride=2)", [(1, 4, 5, 3)]),
    ("ConvTranspose3d(2, 2, 2, stride=2)", [(1, 2, 3, 2, 2)]),
    ("MaxPool1d(3, stride=2, padding=1)", [(2, 9, 3)]),
    ("AvgPool1d(2)", [(2, 8, 3)]),
    ("MaxPool2d(2)", [(2, 6, 8, 3)]),
    ("MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0))", [(1, 7, 5, 2)]),
    ("AvgPool2d(3, stride=2, padding=1)", [(1, 7, 7, 2)]),
    ("MaxPool3d(2)", [(1, 4, 4, 4, 2)]),
    ("AvgPool3d(2, stride=1)", [(1, 3, 4, 3, 2)]),
    ("RoPE(8)", [(2, 3, 5, 8)]),
    ("RoPE(6, traditional=True, base=100.0, scale=0.5)", [(2, 5, 8)]),
    ("SinusoidalPositionalEncoding(8)", [(5,)]),
    ("SinusoidalPositionalEncoding(6, cos_first=True, full_turns=True, scale=1.0)", [(2, 3)]),
    ("ALiBi()", [(2, 4, 3, 5)]),
    ("MultiHeadAttention(8, 2)", [(2, 5, 8), (2, 4, 8), (2, 4, 8)]),
    ("MultiHeadAttention(8, 4, key_input_dims=6, value_dims=12, value_output_dims=5, "
     "bias=True)", [(2, 3, 8), (2, 4, 6), (2, 4, 6)]),
    ("TransformerEncoderLayer(8, 2, mlp_dims=16)", [(2, 5, 8), None]),
    ("TransformerEncoderLayer(8, 2, norm_first=False)", [(2, 5, 8), None]),
    ("TransformerDecoderLayer(8, 2, norm_first=False)", [(2, 5, 8), (2, 3, 8), None, None]),
    ("Transformer(8, 2, 1, 2, 12)", [(2, 5, 8), (2, 3, 8), None, None, None]),
    ("RNN(3, 5)", [(2, 4, 3)]),
    ("RNN(3, 5, bias=False, nonlinearity=nn.relu)", [(4, 3)]),
    ("GRU(3, 5)", [(2, 4, 3)]),
    ("GRU(3, 5, bias=False)", [(2, 4, 3)]),
    ("LSTM(3, 5)", [(2, 4, 3)]),
    ("LSTM(3, 5, bias=False)", [(4, 3)]),
    ("PReLU(3)", [(2, 3)]),
    ("GELU('tanh')", [(2, 3)]),
    ("Dropout(0.3)", [(4, 5)]),
    ("BatchNorm(4)", [(3, 4)]),
    ("BatchNorm(4, affine=False, track_running_stats=False)", [(3, 2, 4)]),
]


@pytest.mark.parametrize("expr,shapes", LAYERS, ids=[e for e, _ in LAYERS])
def test_layer_init_repr_and_forward(expr, shapes):
    M.random.seed(1)
    theirs = eval("MN." + expr.replace("nn.", "MN."))
    mx.random.seed(1)
    ours = eval("nn." + expr)
    assert_same_params(ours, theirs)
    if "nonlinearity=" not in expr:  # MLX's activations are compiled (_gc_func) objects
        assert _no_addresses(repr(ours)) == _no_addresses(repr(theirs))
    ours.update(to_ours(theirs.parameters()))  # identical weights from here
    ins = [rand(*s) if s is not None else (None, None) for s in shapes]
    if expr.startswith("Transformer(") or "DecoderLayer" in expr or "EncoderLayer" in expr:
        causal = MN.MultiHeadAttention.create_additive_causal_mask(shapes[0][1])
        ins[len(ins) - len([s for s in shapes if s is None])] = (mx.array(np.array(causal)),
                                                                causal)
    ours.eval(), theirs.eval()
    out_o = ours(*[a for a, _ in ins])
    out_t = theirs(*[b for _, b in ins])
    close(out_o, out_t)


def test_batchnorm_training_updates_running_stats():
    ours, theirs = build_pair("BatchNorm(5, momentum=0.2)")
    x, xm = rand(6, 3, 5)
    for _ in range(2):
        close(ours(x), theirs(xm))
    assert_same_params(ours, theirs)
    assert sorted(tree_flatten(ours.trainable_parameters(), destination={})) == ["bias", "weight"]
    ours.unfreeze()
    assert "running_mean" not in tree_flatten(ours.trainable_parameters(), destination={})
    ours.eval(), theirs.eval()
    close(ours(x), theirs(xm))
    with pytest.raises(ValueError, match="more than one value per channel"):
        nn.BatchNorm(3)(mx.ones((1, 3)))
    with pytest.raises(ValueError, match="2, 3 or 4 dimensions, but got 5"):
        nn.BatchNorm(3)(mx.ones((1, 2, 2, 2, 3)))


def test_embedding_and_tied_linear():
    ours, theirs = build_pair("Embedding(11, 6)")
    assert_same_params(ours, theirs)
    ours.update(to_ours(theirs.parameters()))
    idx = np.array([[1, 4, 10], [0, 0, 3]], dtype=np.int32)
    close(ours(mx.array(idx)), theirs(M.array(idx)))
    h, hm = rand(2, 6)
    close(ours.as_linear(h), theirs.as_linear(hm))


def test_dropout_masks_match_under_same_seed():
    for expr, shape in [("Dropout(0.4)", (5, 7)), ("Dropout2d(0.5)", (2, 3, 4, 6)),
                        ("Dropout3d(0.25)", (2, 2, 3, 4, 5))]:
        ours, theirs = build_pair(expr)
        x, xm = rand(*shape)
        M.random.seed(7)
        mx.random.seed(7)
        close(ours(x), theirs(xm))
        ours.eval()
        assert ours(x) is x
        assert repr(ours) == repr(theirs)
    with pytest.raises(ValueError, match=re.escape("The dropout probability 1 is not in [0, 1)")):
        nn.Dropout(1)
    with pytest.raises(ValueError, match="Expected 3 or 4 dimensions"):
        nn.Dropout2d()(mx.ones((2, 3)))


def test_quantized_layers_and_quantize():
    M.random.seed(2)
    theirs = MN.Sequential(MN.Embedding(16, 64), MN.Linear(64, 32), MN.LayerNorm(32))
    mx.random.seed(2)
    ours = nn.Sequential(nn.Embedding(16, 64), nn.Linear(64, 32), nn.LayerNorm(32))
    ours.update(to_ours(theirs.parameters()))
    MN.quantize(theirs, group_size=32, bits=4)
    nn.quantize(ours, group_size=32, bits=4)
    assert repr(ours) == repr(theirs)
    assert_same_params(ours, theirs, exact=True)  # packing is bit-identical
    assert (sorted(tree_flatten(ours.trainable_parameters(), destination={}))
            == sorted(m_tree_flatten(theirs.trainable_parameters(), destination={})))
    idx = np.array([[1, 5, 15]], dtype=np.int32)
    close(ours(mx.array(idx)), theirs(M.array(idx)))
    h, hm = rand(2, 64)
    close(ours.layers[0].as_linear(h), theirs.layers[0].as_linear(hm))
    # a predicate choosing per-layer settings
    M.random.seed(0)
    t2 = MN.Sequential(MN.Linear(64, 64), MN.Linear(64, 8))
    o2 = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 8))
    o2.update(to_ours(t2.parameters()))
    pred = (lambda p, m: {"group_size": 64, "bits": 8} if p == "layers.0" else False)
    MN.quantize(t2, class_predicate=pred)
    nn.quantize(o2, class_predicate=pred)
    assert repr(o2) == repr(t2)
    close(o2(h), t2(hm))
    with pytest.raises(ValueError, match="Invalid quantization mode 'bogus'"):
        nn.QuantizedLinear(64, 8, mode="bogus")
    with pytest.raises(ValueError, match="Unable to quantize model of type"):
        nn.quantize(nn.Sequential(nn.ReLU()), class_predicate=lambda p, m: True)



@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_quantize_microscaling_modes(mode):
    """nn.quantize(mode=...) used to raise NotImplementedError: the packed weights and uint8
    scales equal MLX's, there are no biases, the embedding returns bfloat16 and an unfrozen
    scale has MLX's gradient error."""
    M.random.seed(4)
    theirs = MN.Sequential(MN.Embedding(16, 64), MN.Linear(64, 32), MN.Linear(32, 8))
    ours = nn.Sequential(nn.Embedding(16, 64), nn.Linear(64, 32), nn.Linear(32, 8))
    ours.update(to_ours(theirs.parameters()))
    MN.quantize(theirs, mode=mode)
    nn.quantize(ours, mode=mode)
    assert repr(ours) == repr(theirs)
    assert_same_params(ours, theirs, exact=True)
    assert "biases" not in ours.layers[1]
    idx = np.array([[1, 5, 15]], dtype=np.int32)
    emb, emb_ref = ours.layers[0](mx.array(idx)), theirs.layers[0](M.array(idx))
    assert emb.dtype == mx.bfloat16 and str(emb_ref.dtype) == "mlx.core.bfloat16"
    np.testing.assert_array_equal(np.array(emb.astype(mx.float32)),
                                  np.array(emb_ref.astype(M.float32)))
    h, hm = rand(2, 64)
    close(ours.layers[1](h), theirs.layers[1](hm))
    ours.layers[1].unfreeze(keys=["scales"])
    loss = nn.value_and_grad(ours.layers[1], lambda m, v: m(v).sum())
    with pytest.raises(ValueError, match=f"no gradient wrt scales in {mode} quantization"):
        loss(ours.layers[1], h)


# ----------------------------------------------------------------------------- activations
ACTIVATION_FNS = ["sigmoid", "relu", "relu2", "relu6", "leaky_relu", "log_softmax", "elu",
                  "softmax", "softplus", "softsign", "softshrink", "celu", "silu",
                  "log_sigmoid", "gelu", "gelu_approx", "gelu_fast_approx", "glu", "step",
                  "selu", "mish", "hardswish", "hard_tanh", "hard_shrink", "softmin", "tanh"]
ACTIVATION_CLASSES = ["Sigmoid", "ReLU", "ReLU2", "ReLU6", "LeakyReLU(0.2)", "ELU(0.7)",
                      "Softmax", "Softplus", "Softsign", "Softshrink(0.3)", "CELU(1.5)", "SiLU",
                      "LogSoftmax", "LogSigmoid", "GELU", "GELU('precise')", "GELU('fast')",
                      "GLU(0)", "Step(0.2)", "SELU", "Mish", "Hardswish", "HardTanh",
                      "HardShrink(0.7)", "Softmin", "Tanh", "PReLU(1, 0.1)"]


@pytest.mark.parametrize("name", ACTIVATION_FNS)
def test_activation_functions(name):
    x, xm = rand(4, 6)
    x = x * 3
    xm = xm * 3
    out_o, out_t = getattr(nn, name)(x), getattr(MN, name)(xm)
    assert str(out_o.dtype).split(".")[-1] == str(out_t.dtype).split(".")[-1]
    close(out_o, out_t)
    if name not in ("step",):
        h, hm = mx.array(np.array(xm).astype(np.float16)), M.array(np.array(xm), M.float16)
        close(getattr(nn, name)(h), getattr(MN, name)(hm), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("expr", ACTIVATION_CLASSES)
def test_activation_classes(expr):
    ours, theirs = build_pair(expr if "(" in expr else expr + "()")
    assert repr(ours) == repr(theirs)
    assert_same_params(ours, theirs)
    x, xm = rand(4, 6)
    close(ours(x * 2), theirs(xm * 2))


def test_activation_arguments():
    x, xm = rand(3, 4)
    close(nn.leaky_relu(x, 0.3), MN.leaky_relu(xm, 0.3))
    close(nn.elu(x, alpha=0.5), MN.elu(xm, alpha=0.5))
    close(nn.hard_tanh(x, -0.5, 0.2), MN.hard_tanh(xm, -0.5, 0.2))
    close(nn.log_softmax(x, axis=0), MN.log_softmax(xm, axis=0))
    close(nn.prelu(x, mx.array([0.1, 0.2, 0.3, 0.4])), MN.prelu(xm, M.array([0.1, 0.2, 0.3, 0.4])))
    with pytest.raises(ValueError, match="The approximation should be in"):
        nn.GELU("bogus")


# ----------------------------------------------------------------------------- losses
def _loss_inputs():
    logits, logits_m = rand(5, 7)
    tgt = rng.integers(0, 7, size=(5,)).astype(np.int32)
    probs = np.array(M.softmax(M.array(rng.standard_normal((5, 7)).astype(np.float32)), -1))
    return logits, logits_m, tgt, probs


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy(reduction):
    logits, lm, tgt, probs = _loss_inputs()
    w = rng.random(5).astype(np.float32)
    cases = [dict(), dict(label_smoothing=0.2), dict(weights="w")]
    for kw in cases:
        ko = {k: (mx.array(w) if v == "w" else v) for k, v in kw.items()}
        kt = {k: (M.array(w) if v == "w" else v) for k, v in kw.items()}
        close(nn.losses.cross_entropy(logits, mx.array(tgt), reduction=reduction, **ko),
              MN.losses.cross_entropy(lm, M.array(tgt), reduction=reduction, **kt))
        close(nn.losses.cross_entropy(logits, mx.array(probs), reduction=reduction, **ko),
              MN.losses.cross_entropy(lm, M.array(probs), reduction=reduction, **kt))
    # class axis 0
    close(nn.losses.cross_entropy(logits.T, mx.array(tgt), axis=0, reduction=reduction),
          MN.losses.cross_entropy(lm.T, M.array(tgt), axis=0, reduction=reduction))


def test_loss_functions_match():
    L, LM = nn.losses, MN.losses
    a, am = rand(4, 6)
    b, bm = rand(4, 6)
    c, cm = rand(4, 6)
    p = np.abs(np.array(am)) / 5 + 0.05
    t01 = (rng.random((4, 6)) > 0.5).astype(np.float32)
    sgn = np.sign(np.array(bm)).astype(np.float32)
    for red in ("none", "mean", "sum"):
        close(L.binary_cross_entropy(a, mx.array(t01), reduction=red),
              LM.binary_cross_entropy(am, M.array(t01), reduction=red))
        close(L.binary_cross_entropy(mx.array(p), mx.array(t01), with_logits=False,
                                     weights=mx.array(p), reduction=red),
              LM.binary_cross_entropy(M.array(p), M.array(t01), with_logits=False,
                                      weights=M.array(p), reduction=red))
        close(L.l1_loss(a, b, red), LM.l1_loss(am, bm, red))
        close(L.mse_loss(a, b, red), LM.mse_loss(am, bm, red))
        close(L.nll_loss(nn.log_softmax(a), mx.array([1, 0, 5, 2]), reduction=red),
              LM.nll_loss(MN.log_softmax(am), M.array([1, 0, 5, 2]), reduction=red))
        close(L.gaussian_nll_loss(a, b, mx.array(p), full=True, reduction=red),
              LM.gaussian_nll_loss(am, bm, M.array(p), full=True, reduction=red))
        close(L.kl_div_loss(nn.log_softmax(a), nn.log_softmax(b), reduction=red),
              LM.kl_div_loss(MN.log_softmax(am), MN.log_softmax(bm), reduction=red))
        close(L.smooth_l1_loss(a, b, beta=0.5, reduction=red),
              LM.smooth_l1_loss(am, bm, beta=0.5, reduction=red))
        close(L.triplet_loss(a, b, c, p=3, margin=0.5, reduction=red),
              LM.triplet_loss(am, bm, cm, p=3, margin=0.5, reduction=red))
        close(L.hinge_loss(a, mx.array(sgn), red), LM.hinge_loss(am, M.array(sgn), red))
        close(L.huber_loss(a, b, delta=0.7, reduction=red),
              LM.huber_loss(am, bm, delta=0.7, reduction=red))
        close(L.log_cosh_loss(a, b, red), LM.log_cosh_loss(am, bm, red))
        close(L.cosine_similarity_loss(a, b, reduction=red),
              LM.cosine_similarity_loss(am, bm, reduction=red))
        close(L.margin_ranking_loss(a, b, mx.array(sgn), margin=0.1, reduction=red),
              LM.margin_ranking_loss(am, bm, M.array(sgn), margin=0.1, reduction=red))


def _error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - comparing exception class and text
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("call", [
    "L.cross_entropy(A(4, 3), A(4, 3, 1))",
    "L.cross_entropy(A(4, 3), I(5))",
    "L.cross_entropy(A(4, 3), I(4), label_smoothing=1.0)",
    "L.cross_entropy(A(4, 3), I(4), weights=A(3))",
    "L.cross_entropy(A(4, 3), I(4), reduction='avg')",
    "L.binary_cross_entropy(A(4), A(3))",
    "L.mse_loss(A(4), A(3))",
    "L.l1_loss(A(2, 4), A(4))",
    "L.smooth_l1_loss(A(4), A(3))",
    "L.gaussian_nll_loss(A(4), A(4), A(3))",
    "L.gaussian_nll_loss(A(3), A(4), A(3))",
    "L.margin_ranking_loss(A(4), A(4), A(3))",
])
def test_loss_errors_match(call):
    def ours():
        L, A, I = nn.losses, (lambda *s: mx.ones(s)), (lambda *s: mx.zeros(s, mx.int32))  # noqa
        return eval(call)

    def theirs():
        L, A, I = MN.losses, (lambda *s: M.ones(s)), (lambda *s: M.zeros(s, M.int32))  # noqa
        return eval(call)

    assert _error_of(ours) == _error_of(theirs) != None  # noqa: E711


# ----------------------------------------------------------------------------- init
@pytest.mark.parametrize("expr", [
    "constant(0.3)", "normal(0.5, 2.0)", "uniform(-2, 3)", "identity()", "glorot_normal()",
    "glorot_uniform()", "he_normal()", "he_uniform()", "normal(dtype={f16})",
])
def test_init_matches_under_same_seed(expr):
    shape = (6, 6) if "identity" in expr else (5, 3, 4)
    M.random.seed(4)
    theirs = eval("MN.init." + expr.format(f16="M.float16"))(M.zeros(shape))
    mx.random.seed(4)
    ours = eval("nn.init." + expr.format(f16="mx.float16"))(mx.zeros(shape))
    close(ours, theirs, rtol=2e-3, atol=1e-5)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def test_init_modes_and_errors():
    w, wm = mx.zeros((8, 3, 2)), M.zeros((8, 3, 2))
    for mode in ("fan_in", "fan_out"):
        M.random.seed(0)
        mx.random.seed(0)
        close(nn.init.he_uniform()(w, mode=mode, gain=2.0),
              MN.init.he_uniform()(wm, mode=mode, gain=2.0))
    M.random.seed(0)
    mx.random.seed(0)
    close(nn.init.sparse(0.5)(mx.zeros((4, 6))), MN.init.sparse(0.5)(M.zeros((4, 6))))
    for call in ["glorot_normal()(X(3))", "he_normal()(X(3, 4), mode='bad')",
                 "identity()(X(3, 4))", "sparse(0.2)(X(3))"]:
        e_o = _error_of(lambda: eval("nn.init." + call, {"nn": nn, "X": lambda *s: mx.zeros(s)}))
        e_t = _error_of(lambda: eval("MN.init." + call, {"MN": MN, "X": lambda *s: M.zeros(s)}))
        assert e_o == e_t != None  # noqa: E711
    q = nn.init.orthogonal()(mx.zeros((5, 3)))
    np.testing.assert_allclose(np.array(q.T @ q), np.eye(3), atol=1e-5)


# ----------------------------------------------------------------------------- Module API
class _Net:
    """The same small model class defined over either library."""

    @staticmethod
    def build(lib):
        class Block(lib.Module):
            def __init__(self):
                super().__init__()
                self.lin = lib.Linear(3, 4)
                self.norm = lib.LayerNorm(4)
                core = mx if lib is nn else M
                self.extras = {"a": lib.Linear(4, 2), "scale": core.ones((2,))}
                self._hidden = core.zeros((1,))
                self.name = "blk"

            def __call__(self, x):
                return self.extras["a"](self.norm(self.lin(x))) * self.extras["scale"]

        class Net(lib.Module):
            def __init__(self):
                super().__init__()
                self.blocks = [Block(), Block()]
                self.head = lib.Linear(2, 1, bias=False)

            def __call__(self, x):
                for b in self.blocks:
                    x = b(x) if x.shape[-1] == 3 else x
                return self.head(x)

        return Net()


def _pair_net():
    M.random.seed(0)
    theirs = _Net.build(MN)
    mx.random.seed(0)
    ours = _Net.build(nn)
    return ours, theirs


def keys(tree):
    """The dotted parameter paths of a tree (either library's: the flattening is the same)."""
    return [k for k, _ in tree_flatten(tree)]


def test_module_trees_match():
    ours, theirs = _pair_net()
    assert_same_params(ours, theirs)
    assert repr(ours) == repr(theirs)
    assert keys(ours.trainable_parameters()) == keys(theirs.trainable_parameters())
    assert ([k for k, _ in tree_flatten(ours.children(), is_leaf=nn.Module.is_module)]
            == [k for k, _ in m_tree_flatten(theirs.children(), is_leaf=MN.Module.is_module)])
    assert ([k for k, _ in tree_flatten(ours.leaf_modules(), is_leaf=nn.Module.is_module)]
            == [k for k, _ in m_tree_flatten(theirs.leaf_modules(),
                                             is_leaf=MN.Module.is_module)])
    assert [k for k, _ in ours.named_modules()] == [k for k, _ in theirs.named_modules()]
    assert ([type(m).__name__ for m in ours.modules()]
            == [type(m).__name__ for m in theirs.modules()])
    assert ours.state is ours and ours.blocks[0].name == "blk"
    assert "_hidden" in ours.blocks[0] and "_hidden" not in ours.blocks[0].parameters()
    ours.update(to_ours(theirs.parameters()))
    x, xm = rand(2, 3)
    close(ours(x), theirs(xm))


@pytest.mark.parametrize("ops", [
    ["freeze()"], ["freeze(keys='bias')"], ["freeze(keys=['weight'], recurse=False)"],
    ["freeze()", "unfreeze(keys='bias')"], ["freeze()", "blocks[1].unfreeze()"],
    ["freeze(keys='scale')"], ["blocks[0].freeze(recurse=False)"],
    ["freeze()", "unfreeze(recurse=False)"], ["freeze(keys='bias', strict=True)"],
])
def test_freeze_unfreeze(ops):
    ours, theirs = _pair_net()
    for op in ops:
        eval("ours." + op)
        eval("theirs." + op)
    assert keys(ours.trainable_parameters()) == keys(theirs.trainable_parameters())
    assert keys(ours.parameters()) == keys(theirs.parameters())


@pytest.mark.parametrize("op", [
    "freeze(keys='nope', strict=True)", "unfreeze(keys=['bias', 'zz'], strict=True)",
    "freeze(keys='bias', recurse=False, strict=True)",
    "update({'head': {'weight': 1}})", "update({'nothere': 1})",
    "update({'blocks': [{}, {}, {}]})", "update([1])",
    "update_modules({'head': 3})", "update_modules({'zz': {}})",
    "update_modules({'blocks': [{}, {}, {}]})",
    "load_weights([('head.weight', W(1, 2))])",
    "load_weights([('head.weight', W(1, 3))], strict=False) or 'fine'",
    "load_weights(ALL + [('extra', W(1))])",
    "load_weights([(k, W(1)) if k == 'head.weight' else (k, v) for k, v in ALL])",
    "load_weights([(k, 3) if k == 'head.weight' else (k, v) for k, v in ALL])",
])
def test_module_errors_match(op):
    ours, theirs = _pair_net()

    def run(model, W):
        env = {"m": model, "W": W,
               "ALL": (tree_flatten if model is ours else m_tree_flatten)(model.parameters())}
        return eval("m." + op, env)

    e_o = _error_of(lambda: run(ours, lambda *s: mx.zeros(s)))
    e_t = _error_of(lambda: run(theirs, lambda *s: M.zeros(s)))
    assert e_o == e_t


def test_update_apply_set_dtype_train():
    ours, theirs = _pair_net()
    ours.update({"head": {"weight": mx.ones((1, 2))}})
    assert np.array(ours.head.weight).tolist() == [[1.0, 1.0]]
    ours.update({"blocks": [{}, {"lin": {"bias": mx.zeros((4,))}}]})
    assert not np.array(ours.blocks[1].lin.bias).any()
    ours.update({"zz": 1}, strict=False)  # ignored
    swapped = nn.Linear(4, 2)
    ours.update_modules({"blocks": [{}, {"extras": {"a": swapped}}]})
    assert ours.blocks[1].extras["a"] is swapped
    ours.apply(lambda a: a * 0 + 2, filter_fn=lambda m, k, v: k == "head" or k == "weight")
    assert np.array(ours.head.weight).tolist() == [[2.0, 2.0]]
    ours.set_dtype(mx.bfloat16)
    theirs.set_dtype(M.bfloat16)
    assert ({k: str(v.dtype) for k, v in tree_flatten(ours.parameters())}
            == {k: str(v.dtype) for k, v in m_tree_flatten(theirs.parameters())})
    ours.set_dtype(mx.float16, predicate=None)
    assert {v.dtype for _, v in tree_flatten(ours.parameters())} == {mx.float16}
    assert ours.training and ours.blocks[0].norm.training
    assert ours.eval() is ours and not ours.blocks[1].extras["a"].training
    ours.train()
    assert ours.blocks[1].norm.training
    ours.blocks[0].lin = mx.zeros((2,))  # an array replacing a module attribute
    assert "lin" in tree_flatten(ours.blocks[0].parameters(), destination={})
    del ours.blocks[0].lin
    assert "lin" not in ours.blocks[0]
    with pytest.raises(AttributeError):
        ours.blocks[0].lin
    ours.flag = 3
    assert ours.flag == 3 and "flag" not in ours
    with pytest.raises(TypeError):
        hash(ours)


def test_save_and_load_weights_interop(tmp_path):
    ours, theirs = _pair_net()
    for ext in ("npz", "safetensors"):
        path = str(tmp_path / f"theirs.{ext}")
        theirs.save_weights(path)
        ours.load_weights(path)
        assert_same_params(ours, theirs, exact=True)
        x, xm = rand(2, 3)
        close(ours(x), theirs(xm))
        mine = str(tmp_path / f"ours.{ext}")
        ours.update(tree_map(lambda a: a + 1, ours.parameters()))
        ours.save_weights(mine)
        theirs.load_weights(mine)
        assert_same_params(ours, theirs, exact=True)
    with pytest.raises(ValueError, match="Unsupported file extension"):
        ours.save_weights(str(tmp_path / "w.bin"))
    ours.load_weights([], strict=False)


def test_mlx_checkpoint_of_a_transformer_loads(tmp_path):
    M.random.seed(5)
    theirs = MN.TransformerEncoder(2, 16, 4, mlp_dims=24)
    path = str(tmp_path / "enc.safetensors")
    theirs.save_weights(path)
    ours = nn.TransformerEncoder(2, 16, 4, mlp_dims=24).load_weights(path)
    x, xm = rand(2, 7, 16)
    mask = MN.MultiHeadAttention.create_additive_causal_mask(7)
    close(ours(x, mx.array(np.array(mask))), theirs(xm, mask), rtol=1e-3, atol=1e-4)
    close(nn.MultiHeadAttention.create_additive_causal_mask(5, mx.float16),
          MN.MultiHeadAttention.create_additive_causal_mask(5, M.float16))


def test_constructor_errors_match():
    for expr in ["LayerNorm(4, eps=0)", "RMSNorm(4, eps=-1)", "GroupNorm(3, 4)",
                 "GroupNorm(0, 4)", "InstanceNorm(3, eps=0.0)", "Conv1d(3, 4, 2, groups=2)",
                 "MultiHeadAttention(10, 3)", "MaxPool2d((2, 2, 2))", "AvgPool1d(0)",
                 "MaxPool1d(2, padding=-1)", "SinusoidalPositionalEncoding(5)",
                 "RNN(2, 3, nonlinearity=5)"]:
        e_o = _error_of(lambda: eval("nn." + expr))
        e_t = _error_of(lambda: eval("MN." + expr))
        assert e_o == e_t != None, expr  # noqa: E711
    e_o = _error_of(lambda: nn.InstanceNorm(3)(mx.ones((2, 3))))
    e_t = _error_of(lambda: MN.InstanceNorm(3)(M.ones((2, 3))))
    assert e_o == e_t


# ----------------------------------------------------------------------------- autodiff
@needs_autodiff
def test_value_and_grad_matches_mlx():
    ours, theirs = _pair_net()
    ours.update(to_ours(theirs.parameters()))
    ours.blocks[0].freeze(keys="bias")
    theirs.blocks[0].freeze(keys="bias")
    x, xm = rand(4, 3)
    y, ym = rand(4, 1)

    def loss_o(model, a, b):
        return nn.losses.mse_loss(model(a), b)

    def loss_t(model, a, b):
        return MN.losses.mse_loss(model(a), b)

    v_o, g_o = nn.value_and_grad(ours, loss_o)(ours, x, y)
    v_t, g_t = MN.value_and_grad(theirs, loss_t)(theirs, xm, ym)
    close(v_o, v_t)
    assert keys(g_o) == keys(g_t)
    for (k, a), (_, b) in zip(tree_flatten(g_o), m_tree_flatten(g_t)):
        close(a, b, rtol=1e-3, atol=1e-5)


def test_value_and_grad_defers_to_core():
    model = nn.Linear(2, 1)
    fn = nn.value_and_grad(model, lambda x: model(x).sum())  # wrapping never fails
    assert fn.__name__ == "<lambda>"
    if not _has_autodiff():
        with pytest.raises(AttributeError, match="value_and_grad"):
            fn(mx.ones((1, 2)))


def test_checkpoint_runs_the_function():
    model = nn.Linear(3, 2)
    x = mx.ones((2, 3))
    close(nn.utils.checkpoint(model)(x), M.array(np.array(model(x))))


# ----------------------------------------------------------------------------- upsample
@pytest.mark.parametrize("args,shape", [
    ("2", (2, 3, 4, 2)), ("(2, 3)", (1, 3, 2, 2)), ("1.5", (1, 4, 5, 1)),
    ("(0.5, 2)", (1, 6, 3, 2)),
    ("2, mode='linear'", (2, 3, 4, 2)), ("2, mode='linear', align_corners=True", (1, 3, 4, 2)),
    ("(1.5, 2.5), mode='linear'", (1, 4, 3, 1)), ("3, mode='linear'", (1, 4, 2)),
    ("2, mode='cubic'", (1, 4, 3, 2)), ("2, mode='cubic', align_corners=True", (1, 3, 3, 1)),
    ("0.5, mode='linear', antialias=True", (1, 8, 6, 2)),
    ("0.5, mode='cubic', antialias=True", (1, 8, 8, 1)),
    ("2, mode='linear'", (1, 2, 3, 2, 1)),
])
def test_upsample(args, shape):
    ours, theirs = eval(f"nn.Upsample({args})"), eval(f"MN.Upsample({args})")
    assert repr(ours) == repr(theirs)
    x, xm = rand(*shape)
    close(ours(x), theirs(xm), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call", [
    "Upsample(2, mode='area')", "Upsample(2, antialias=True)",
    "Upsample(2, mode='linear', align_corners=True, antialias=True)",
    "Upsample(2)(X(3, 4))", "Upsample((2, 2))(X(1, 3, 4))",
])
def test_upsample_errors(call):
    e_o = _error_of(lambda: eval("nn." + call, {"nn": nn, "X": lambda *s: mx.zeros(s)}))
    e_t = _error_of(lambda: eval("MN." + call, {"MN": MN, "X": lambda *s: M.zeros(s)}))
    assert e_o == e_t != None  # noqa: E711


def _finite_difference_value_and_grad(fun, argnums=0):
    """A stand-in for mx.value_and_grad (central differences over every leaf of argument 0)
    so nn.value_and_grad's plumbing is checked before the core has autodiff."""
    assert argnums == 0

    def wrapped(params, *args, **kwargs):
        value = fun(params, *args, **kwargs)
        flat = tree_flatten(params)
        grads = []
        for i, (key, leaf) in enumerate(flat):
            base = np.array(leaf).astype(np.float64)
            g = np.zeros_like(base)
            for j in np.ndindex(base.shape):
                diffs = []
                for sign in (1, -1):
                    bumped = base.copy()
                    bumped[j] += sign * 1e-2
                    trial = list(flat)
                    trial[i] = (key, mx.array(bumped.astype(np.float32)))
                    diffs.append(fun(tree_unflatten(trial), *args, **kwargs).item())
                g[j] = (diffs[0] - diffs[1]) / 2e-2
            grads.append((key, mx.array(g.astype(np.float32))))
        fun(params, *args, **kwargs)  # leave the model holding the original parameters
        return value, tree_unflatten(grads)

    return wrapped


def test_value_and_grad_plumbing_with_a_stand_in(monkeypatch):
    """Only trainable parameters are differentiated, the model is updated with them, the
    gradient tree has their structure, and values match MLX's real gradients."""
    import pycudamlx.core as core

    monkeypatch.setattr(core, "value_and_grad", _finite_difference_value_and_grad,
                        raising=False)
    M.random.seed(3)
    theirs = MN.Sequential(MN.Linear(3, 4), MN.Tanh(), MN.Linear(4, 2))
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ours.update(to_ours(theirs.parameters()))
    ours.layers[2].freeze(keys="bias")
    theirs.layers[2].freeze(keys="bias")
    x, xm = rand(5, 3)

    v_o, g_o = nn.value_and_grad(ours, lambda a: (ours(a) ** 2).sum())(x)
    v_t, g_t = MN.value_and_grad(theirs, lambda a: (theirs(a) ** 2).sum())(xm)
    close(v_o, v_t)
    assert keys(g_o) == keys(g_t) == ["layers.0.weight", "layers.0.bias", "layers.2.weight"]
    for (_, a), (_, b) in zip(tree_flatten(g_o), m_tree_flatten(g_t)):
        close(a, b, rtol=2e-2, atol=2e-3)
    optim.SGD(0.1).update(ours, g_o)
    assert keys(ours.parameters()) == keys(theirs.parameters())


def test_pycudamlx_run_serves_nn_and_optimizers(tmp_path, capsys):
    from pycudamlx import mlx_compat

    script = tmp_path / "train.py"
    script.write_text(
        "import mlx.core as mx\n"
        "import mlx.nn as nn\n"
        "import mlx.optimizers as optim\n"
        "from mlx.nn.layers.base import Module\n"
        "from mlx.nn.losses import mse_loss\n"
        "from mlx.utils import tree_map\n"
        "model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())\n"
        "opt = optim.AdamW(learning_rate=optim.cosine_decay(0.1, 10))\n"
        "grads = tree_map(mx.ones_like, model.trainable_parameters())\n"
        "opt.update(model, grads)\n"
        "mx.eval(model.parameters(), opt.state)\n"
        "loss = mse_loss(model(mx.ones((4, 3))), mx.zeros((4, 2)))\n"
        "print(type(model).__module__, isinstance(model, Module), opt.step.item(),"
        " loss.dtype)\n")
    mlx_compat.run_script(str(script), [])
    out = capsys.readouterr().out
    assert "pycudamlx.nn.layers.containers True 1 mlx.core.float32" in out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_layers_in_low_precision(dtype):
    """set_dtype then forward: same result dtype as MLX, values within the dtype's precision."""
    tol = 0.05 if dtype == "float16" else 0.2
    for expr, shapes in LAYERS[::3]:
        M.random.seed(1)
        theirs = eval("MN." + expr.replace("nn.", "MN."))
        mx.random.seed(1)
        ours = eval("nn." + expr)
        ours.update(to_ours(theirs.parameters()))
        ours.set_dtype(getattr(mx, dtype))
        theirs.set_dtype(getattr(M, dtype))
        ours.eval(), theirs.eval()
        ins = []
        for s in shapes:
            x = rng.standard_normal(s).astype(np.float32) if s is not None else None
            ins.append((None, None) if x is None else
                       (mx.array(x).astype(getattr(mx, dtype)), M.array(x, getattr(M, dtype))))
        out_o, out_t = ours(*[a for a, _ in ins]), theirs(*[b for _, b in ins])
        pairs = zip(out_o, out_t) if isinstance(out_o, tuple) else [(out_o, out_t)]
        for a, b in pairs:
            assert str(a.dtype) == str(b.dtype), expr
            close(a.astype(mx.float32), b.astype(M.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("call", [
    "Linear(3, 4)(C.ones((2, 5)))", "Linear(3, 4, bias=False)(C.ones((2, 5)))",
    "Embedding(4, 3)(C.ones((2,)))", "Conv2d(3, 4, 3)(C.ones((1, 5, 5, 2)))",
    "MaxPool2d(2)(C.ones((4, 4)))", "LayerNorm(4)(C.ones((2, 3)))",
    "RMSNorm(4)(C.ones((2, 3)))",
    "MultiHeadAttention(8, 2)(C.ones((1, 3, 8)), C.ones((1, 4, 8)), C.ones((1, 5, 8)))",
    "GRU(3, 4)(C.ones((2, 3)), C.ones((5,)))", "Bilinear(2, 3, 4)(C.ones((2, 2)), C.ones((3, 3)))",
    "glu(C.ones((3, 5)))", "RoPE(4)(C.ones((2,)))",
])
def test_call_errors_match(call):
    """Bad inputs reach the core op that rejects them, with MLX's class and message."""
    e_o = _error_of(lambda: mx.eval(eval("nn." + call, {"nn": nn, "C": mx})))
    e_t = _error_of(lambda: M.eval(eval("MN." + call, {"MN": MN, "C": M})))
    assert e_o == e_t != None  # noqa: E711


def test_error_messages_match_mlx():
    """Mismatched inputs fail where MLX fails (the same op, so the same message); a
    non-callable custom_function names the class as mlx.core.custom_function."""
    calls = [lambda m, n: n.losses.cosine_similarity_loss(m.ones((3, 2)), m.ones((2, 2))),
             lambda m, n: m.custom_function(3),
             lambda m, n: m.round(m.ones(2), 1.5)]
    for call in calls:
        errors = []
        for m, n in ((M, MN), (mx, nn)):
            with pytest.raises(Exception) as info:
                call(m, n)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1]


@pytest.mark.parametrize("path", ["core", "core.random", "core.linalg", "core.fft", "core.fast",
                                  "core.metal", "core.cuda", "nn", "nn.init", "nn.losses",
                                  "optimizers"])
def test_missing_module_attribute_reads_as_in_mlx(path):
    """mx.random.choice and the like: the AttributeError names MLX's module, as MLX does."""
    import importlib
    msgs = []
    for root in ("mlx", "pycudamlx"):
        module = importlib.import_module(f"{root}.{path}")
        with pytest.raises(AttributeError) as info:
            module.no_such_name_here
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
