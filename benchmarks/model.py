"""Model-level benchmark: a llama-shaped model, written the way mlx-lm writes its llama, run by
pycudamlx or by real MLX from one script (prefill, greedy decode, a training step).

The model code below uses only the public ``mlx.core`` / ``mlx.nn`` / ``mlx.optimizers`` API,
so the same lines run against ``pycudamlx`` (``--backend pycudamlx``) and against MLX
(``--backend mlx``: its CUDA build on the GPU machine, its CPU build elsewhere). Weights are
random, drawn with numpy from ``--seed`` per parameter name, so both backends get bit-identical
parameters.

Workloads (tokens/s, median and best over ``--reps`` after ``--warmup`` untimed runs):

* ``prefill``: one prompt of ``--prompt`` random tokens through a fresh KV cache, then the
  first token sampled, as mlx-lm's generate_step does for a prompt shorter than its
  prefill step (time: ``mx.eval`` of the token, i.e. every layer on all prompt positions).
* ``decode``: mlx-lm's generate loop (a generation stream, the next step queued with
  ``mx.async_eval`` before the host reads the current token with ``.item()``, greedy
  argmax of the log-probabilities, ``mx.clear_cache()`` every 256 tokens), ``--tokens``
  tokens after the prompt; the rate is (tokens - 1) over the time from the first token to
  the last (the prompt is not counted). The generated ids are recorded.
* ``train``: ``nn.value_and_grad`` + ``optim.AdamW`` over ``--batch`` x ``--seq`` random
  tokens, mean cross-entropy; ``--compile`` wraps the step in
  ``mx.compile(step, inputs=state, outputs=state)`` as mlx-lm's trainer does. The train
  shape is ``--train-shape`` (default 150m; tiny when ``--shape tiny``).

prefill and decode run for each ``--variant``: ``dense`` (weights in ``--dtype``) and ``q4``
(``nn.quantize(model, group_size=64, bits=4)`` of the same weights).

    python benchmarks/model.py --backend pycudamlx --shape 1b --json ours.json
    python benchmarks/model.py --compare --shape 1b --json both.json   # both backends, ratios
    python benchmarks/model.py --compare --shape tiny --check          # tokens/losses agree
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

log = logging.getLogger("model")

BACKENDS = ("pycudamlx", "mlx")

#: (hidden, layers, heads, kv heads, head_dim, ffn, vocab)
SHAPES = {
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=32000),
    "150m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 num_key_value_heads=4, head_dim=64, intermediate_size=2048, vocab_size=32000),
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=256),
}


# ------------------------------------------------------------------------------------------------
# The model, as mlx_lm/models/llama.py and mlx_lm/models/cache.py write it (defined once per
# backend: the classes close over that backend's mx and nn)


@dataclass
class ModelArgs:
    hidden_size: int
    num_hidden_layers: int
    intermediate_size: int
    num_attention_heads: int
    vocab_size: int
    num_key_value_heads: int
    head_dim: Optional[int] = None
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    rope_traditional: bool = False
    tie_word_embeddings: bool = False


def define_model(mx: Any, nn: Any) -> SimpleNamespace:
    """The llama classes and the KV cache written against one backend's ``mx`` and ``nn``."""

    class KVCache:
        step = 256

        def __init__(self):
            self.keys = None
            self.values = None
            self.offset = 0

        def update_and_fetch(self, keys, values):
            prev = self.offset
            if self.keys is None or (prev + keys.shape[2]) > self.keys.shape[2]:
                B, n_kv_heads, _, k_head_dim = keys.shape
                v_head_dim = values.shape[3]
                n_steps = (self.step + keys.shape[2] - 1) // self.step
                k_shape = (B, n_kv_heads, n_steps * self.step, k_head_dim)
                v_shape = (B, n_kv_heads, n_steps * self.step, v_head_dim)
                new_k = mx.zeros(k_shape, keys.dtype)
                new_v = mx.zeros(v_shape, values.dtype)
                if self.keys is not None:
                    if prev % self.step != 0:
                        self.keys = self.keys[..., :prev, :]
                        self.values = self.values[..., :prev, :]
                    self.keys = mx.concatenate([self.keys, new_k], axis=2)
                    self.values = mx.concatenate([self.values, new_v], axis=2)
                else:
                    self.keys, self.values = new_k, new_v

            self.offset += keys.shape[2]
            self.keys[..., prev : self.offset, :] = keys
            self.values[..., prev : self.offset, :] = values
            return self.keys[..., : self.offset, :], self.values[..., : self.offset, :]

        @property
        def state(self):
            if self.offset == self.keys.shape[2]:
                return self.keys, self.values
            return self.keys[..., : self.offset, :], self.values[..., : self.offset, :]

    class StaticKVCache:
        """A fixed-size KV buffer (no growth, no slicing): one shape at every step, so a decode
        step compiles once. ``state`` is shared by every layer's cache: ``state["offset"]`` the
        int32 position of the next token (an array, read on the device), ``state["kv"][i]``
        layer i's [keys, values] of shape (B, kv heads, max_len, head_dim)."""

        def __init__(self, state, index):
            self.state, self.index = state, index

        @property
        def offset(self):
            return self.state["offset"]

        def update_and_fetch(self, keys, values):
            kv = self.state["kv"][self.index]
            start = self.state["offset"]
            kv[0] = mx.slice_update(kv[0], keys, start, axes=(2,))
            kv[1] = mx.slice_update(kv[1], values, start, axes=(2,))
            return kv[0], kv[1]

        def mask(self, length):
            """Query i (at offset + i) sees keys 0 .. offset + i of the buffer."""
            max_len = self.state["kv"][0][0].shape[2]
            positions = self.state["offset"] + mx.arange(length, dtype=mx.int32)
            return mx.arange(max_len, dtype=mx.int32)[None, :] <= positions[:, None]

    def create_attention_mask(h, cache=None):
        if cache is not None and isinstance(cache[0], StaticKVCache):
            return cache[0].mask(h.shape[1])
        # mlx-lm passes the string "causal" for a multi-token step and no mask for one token
        return "causal" if h.shape[1] > 1 else None

    def scaled_dot_product_attention(queries, keys, values, cache, scale, mask):
        return mx.fast.scaled_dot_product_attention(
            queries, keys, values, scale=scale, mask=mask
        )

    class Attention(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            dim = args.hidden_size
            self.n_heads = n_heads = args.num_attention_heads
            self.n_kv_heads = n_kv_heads = args.num_key_value_heads
            self.head_dim = head_dim = args.head_dim or args.hidden_size // n_heads
            self.scale = head_dim**-0.5
            self.q_proj = nn.Linear(dim, n_heads * head_dim, bias=False)
            self.k_proj = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.v_proj = nn.Linear(dim, n_kv_heads * head_dim, bias=False)
            self.o_proj = nn.Linear(n_heads * head_dim, dim, bias=False)
            self.rope = nn.RoPE(head_dim, traditional=args.rope_traditional,
                                base=args.rope_theta)

        def __call__(self, x, mask=None, cache=None):
            B, L, D = x.shape
            queries, keys, values = self.q_proj(x), self.k_proj(x), self.v_proj(x)
            queries = queries.reshape(B, L, self.n_heads, -1).transpose(0, 2, 1, 3)
            keys = keys.reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
            values = values.reshape(B, L, self.n_kv_heads, -1).transpose(0, 2, 1, 3)
            if cache is not None:
                queries = self.rope(queries, offset=cache.offset)
                keys = self.rope(keys, offset=cache.offset)
                keys, values = cache.update_and_fetch(keys, values)
            else:
                queries = self.rope(queries)
                keys = self.rope(keys)
            output = scaled_dot_product_attention(
                queries, keys, values, cache=cache, scale=self.scale, mask=mask
            )
            output = output.transpose(0, 2, 1, 3).reshape(B, L, -1)
            return self.o_proj(output)

    class MLP(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            dim, hidden_dim = args.hidden_size, args.intermediate_size
            self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
            self.down_proj = nn.Linear(hidden_dim, dim, bias=False)
            self.up_proj = nn.Linear(dim, hidden_dim, bias=False)

        def __call__(self, x):
            return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))

    class TransformerBlock(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.self_attn = Attention(args)
            self.mlp = MLP(args)
            self.input_layernorm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)
            self.post_attention_layernorm = nn.RMSNorm(args.hidden_size,
                                                       eps=args.rms_norm_eps)

        def __call__(self, x, mask=None, cache=None):
            r = self.self_attn(self.input_layernorm(x), mask, cache)
            h = x + r
            r = self.mlp(self.post_attention_layernorm(h))
            return h + r

    class LlamaModel(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.embed_tokens = nn.Embedding(args.vocab_size, args.hidden_size)
            self.layers = [TransformerBlock(args) for _ in range(args.num_hidden_layers)]
            self.norm = nn.RMSNorm(args.hidden_size, eps=args.rms_norm_eps)

        def __call__(self, inputs, cache=None):
            h = self.embed_tokens(inputs)
            mask = create_attention_mask(h, cache)
            if cache is None:
                cache = [None] * len(self.layers)
            for layer, c in zip(self.layers, cache):
                h = layer(h, mask, cache=c)
            return self.norm(h)

    class Model(nn.Module):
        def __init__(self, args: ModelArgs):
            super().__init__()
            self.args = args
            self.model = LlamaModel(args)
            if not args.tie_word_embeddings:
                self.lm_head = nn.Linear(args.hidden_size, args.vocab_size, bias=False)

        def __call__(self, inputs, cache=None):
            out = self.model(inputs, cache)
            if self.args.tie_word_embeddings:
                return self.model.embed_tokens.as_linear(out)
            return self.lm_head(out)

        @property
        def layers(self):
            return self.model.layers

        def make_cache(self):
            return [KVCache() for _ in self.layers]

        def make_static_cache(self, max_len, dtype):
            """(the caches, their shared state tree: what a compiled step declares as
            ``inputs``/``outputs``)."""
            a = self.args
            hd = a.head_dim or a.hidden_size // a.num_attention_heads
            shape = (1, a.num_key_value_heads, max_len, hd)
            state = {"offset": mx.array([0], dtype=mx.int32),
                     "kv": [[mx.zeros(shape, dtype), mx.zeros(shape, dtype)]
                            for _ in self.layers]}
            return [StaticKVCache(state, i) for i in range(len(self.layers))], state

    return SimpleNamespace(Model=Model, KVCache=KVCache, StaticKVCache=StaticKVCache)


# ------------------------------------------------------------------------------------------------
# Weights: numpy, one generator per parameter name, so every backend loads the same numbers


def numpy_weights(names_shapes: list[tuple[str, tuple[int, ...]]], args: ModelArgs,
                  seed: int) -> Iterator[tuple[str, np.ndarray]]:
    """float32 weights for each parameter: norms 1; linears N(0, 1/fan_in) (logits of about
    unit spread), the two residual outputs (o_proj, down_proj) further by 1/sqrt(2 * layers),
    so activations stay O(1) through the stack; the embedding N(0, 0.5^2), comparable to the
    residual branches, so the next token depends on the current one and greedy decoding does
    not settle on one token (with a tied head, N(0, 1/d) instead: unit-spread logits; random
    tied models tend to repeat one token)."""
    resid = 1.0 / math.sqrt(2 * args.num_hidden_layers)
    for name, shape in names_shapes:
        if name.endswith("norm.weight"):
            yield name, np.ones(shape, np.float32)
            continue
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        std = 1.0 / math.sqrt(shape[-1])
        if name.endswith("embed_tokens.weight") and not args.tie_word_embeddings:
            std = 0.5
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            std *= resid
        w = rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(std)
        yield name, w


# ------------------------------------------------------------------------------------------------
# One backend


class Runner:
    """One backend's modules, device, model definition and the workloads."""

    def __init__(self, backend: str, device: Optional[str] = None) -> None:
        if backend == "mlx":
            import mlx.core as mx
            import mlx.nn as nn
            import mlx.optimizers as optim
        elif backend == "pycudamlx":
            import pycudamlx.core as mx
            import pycudamlx.nn as nn
            import pycudamlx.optimizers as optim
        else:
            raise ValueError(f"unknown backend {backend!r}")
        self.backend, self.mx, self.nn, self.optim = backend, mx, nn, optim
        if device is not None:
            mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
        self.device = mx.default_device()
        self.defs = define_model(mx, nn)

    # -- setup ---------------------------------------------------------------------------------

    def build(self, args: ModelArgs, dtype: str, seed: int, bits: Optional[int] = None) -> Any:
        """The model with the numpy weights in ``dtype`` (then quantized with ``bits``)."""
        mx, nn = self.mx, self.nn
        from importlib import import_module

        tree_flatten = import_module(
            "mlx.utils" if self.backend == "mlx" else "pycudamlx.utils").tree_flatten
        model = self.defs.Model(args)  # its own random init stays lazy and is replaced
        names = [(k, tuple(v.shape)) for k, v in tree_flatten(model.parameters())]
        dt = getattr(mx, dtype)
        weights = []
        for k, w in numpy_weights(names, args, seed):  # one host tensor at a time
            a = mx.array(w)
            weights.append((k, a if dt == mx.float32 else a.astype(dt)))
            mx.eval(weights[-1][1])
        model.load_weights(weights)
        del weights
        if bits is not None:
            nn.quantize(model, group_size=64, bits=bits)
        mx.eval(model.parameters())
        return model

    def sync(self) -> None:
        self.mx.synchronize()

    # -- generation, as mlx_lm.generate.generate_step --------------------------------------------

    def generate(self, model: Any, prompt: Any, max_tokens: int, times: Optional[list] = None):
        """Greedy tokens after ``prompt``; ``times`` receives perf_counter at each token."""
        mx = self.mx
        generation_stream = self._generation_stream()
        prompt_cache = model.make_cache()

        def sampler(logprobs):
            return mx.argmax(logprobs, axis=-1)

        def _step(y):
            with mx.stream(generation_stream):
                logits = model(y[None], cache=prompt_cache)
                logits = logits[:, -1, :]
                logprobs = logits - mx.logsumexp(logits, keepdims=True)
                y = sampler(logprobs)
                return y, logprobs.squeeze(0)

        with mx.stream(generation_stream):
            y, logprobs = _step(prompt)
        mx.async_eval(y, logprobs)
        n = 0
        while True:
            if n != max_tokens:
                next_y, next_logprobs = _step(y)
                mx.async_eval(next_y, next_logprobs)
            if n == 0:
                mx.eval(y)
            if n == max_tokens:
                break
            token = y.item()
            if times is not None:
                times.append(time.perf_counter())
            yield token
            if n % 256 == 0:
                mx.clear_cache()
            y, logprobs = next_y, next_logprobs
            n += 1

    def _generation_stream(self) -> Any:
        if not hasattr(self, "_gen_stream"):
            self._gen_stream = self.mx.new_stream(self.mx.default_device())
        return self._gen_stream

    def prefill_once(self, model: Any, prompt: Any) -> float:
        """Seconds for the prompt through a fresh cache and the first token (evaluated)."""
        mx = self.mx
        generation_stream = self._generation_stream()
        cache = model.make_cache()
        self.sync()
        t0 = time.perf_counter()
        with mx.stream(generation_stream):
            logits = model(prompt[None], cache=cache)[:, -1, :]
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            y = mx.argmax(logprobs, axis=-1)
        mx.eval(y)
        self.sync()
        dt = time.perf_counter() - t0
        del cache, logits, logprobs, y
        return dt

    def decode_once(self, model: Any, prompt: Any, n_tokens: int) -> tuple[float, list[int]]:
        """(seconds from the first token to the last, the token ids)."""
        stamps: list[float] = []
        self.sync()
        tokens = list(self.generate(model, prompt, n_tokens, stamps))
        self.sync()
        return stamps[-1] - stamps[0], tokens

    def make_static_step(self, model: Any, max_len: int) -> tuple[Any, dict]:
        """(a compiled step: tokens -> the next greedy token, the KV state it carries).

        The step runs the model over a fixed-size KV buffer of ``max_len`` positions and is
        ``mx.compile(step, inputs=state, outputs=state)``: a prompt is one trace, a single
        token the other, so every decode token replays one trace."""
        mx = self.mx
        dtype = model.layers[0].self_attn.q_proj.weight.dtype
        if dtype not in (mx.float16, mx.bfloat16, mx.float32):  # quantized: the scales' dtype
            dtype = model.layers[0].self_attn.q_proj.scales.dtype
        caches, state = model.make_static_cache(max_len, dtype)
        mx.eval(state)

        def step(y):
            logits = model(y[None], cache=caches)[:, -1, :]
            state["offset"] = state["offset"] + y.shape[0]
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            return mx.argmax(logprobs, axis=-1)

        return mx.compile(step, inputs=state, outputs=state), state

    def generate_static(self, model: Any, prompt: Any, max_tokens: int,
                        times: Optional[list] = None):
        """Greedy tokens after ``prompt`` from make_static_step's compiled step; the loop
        queues token n+1 before reading token n, as ``generate`` does."""
        mx = self.mx
        max_len = -(-(prompt.shape[0] + max_tokens) // 256) * 256
        step, _ = self.make_static_step(model, max_len)
        stream = self._generation_stream()
        with mx.stream(stream):
            y = step(prompt)
        mx.async_eval(y)
        for n in range(max_tokens):
            if n + 1 != max_tokens:
                with mx.stream(stream):
                    next_y = step(y)
                mx.async_eval(next_y)
            token = y.item()
            if times is not None:
                times.append(time.perf_counter())
            yield token
            if n + 1 != max_tokens:
                y = next_y

    def decode_static_once(self, model: Any, prompt: Any, n_tokens: int
                           ) -> tuple[float, list[int]]:
        """As decode_once, through generate_static."""
        stamps: list[float] = []
        self.sync()
        tokens = list(self.generate_static(model, prompt, n_tokens, stamps))
        self.sync()
        return stamps[-1] - stamps[0], tokens

    # -- training, as mlx_lm.tuner.trainer -----------------------------------------------------

    def make_train_step(self, model: Any, compile_step: bool, lr: float = 1e-4):
        mx, nn, optim = self.mx, self.nn, self.optim

        def loss_fn(model, inputs, targets):
            logits = model(inputs)
            return nn.losses.cross_entropy(logits, targets).astype(mx.float32).mean()

        loss_value_and_grad = nn.value_and_grad(model, loss_fn)
        optimizer = optim.AdamW(learning_rate=lr)
        state = [model.state, optimizer.state, mx.random.state]

        def step(inputs, targets):
            loss, grad = loss_value_and_grad(model, inputs, targets)
            optimizer.update(model, grad)
            return loss

        if compile_step:
            step = mx.compile(step, inputs=state, outputs=state)
        return step, state

    def train_steps(self, model: Any, batch: np.ndarray, n: int, compile_step: bool,
                    warmup: int) -> tuple[list[float], list[float]]:
        """(seconds per timed step, loss of every step, warm-up steps included)."""
        mx = self.mx
        step, state = self.make_train_step(model, compile_step)
        data = mx.array(batch)
        inputs, targets = data[:, :-1], data[:, 1:]
        mx.eval(inputs, targets)
        times, losses = [], []
        for i in range(warmup + n):
            self.sync()
            t0 = time.perf_counter()
            loss = step(inputs, targets)
            mx.eval(state, loss)
            self.sync()
            dt = time.perf_counter() - t0
            losses.append(float(loss.item()))
            if i >= warmup:
                times.append(dt)
            log.info("    %s train step %d: loss %.6f, %.3f s", self.backend, i, losses[-1], dt)
        return times, losses

    # -- description ---------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        mx = self.mx
        out = {"python": platform.python_version(), "numpy": np.__version__,
               "device": str(self.device)}
        if self.backend == "mlx":
            out["mlx"] = mx.__version__
        else:
            out["pycudamlx"] = __import__("pycudamlx").__version__
        name = None
        if self.backend == "pycudamlx" and self.device == mx.gpu:
            try:
                from pycudamlx.backend.cuda import driver

                name = driver.get_device(0).properties.name
            except Exception as exc:  # noqa: BLE001 - the name is informative only
                log.warning("no device name: %r", exc)
        if name is None:
            try:
                name = mx.device_info().get("device_name")
            except Exception:  # noqa: BLE001
                name = None
        out["device_name"] = name or platform.processor() or platform.machine()
        return out


# ------------------------------------------------------------------------------------------------
# A run: every requested workload on one backend


def model_args(shape: str, tied: bool) -> ModelArgs:
    return ModelArgs(**SHAPES[shape], tie_word_embeddings=tied)


def n_params(args: ModelArgs) -> int:
    d, f, v, hd = args.hidden_size, args.intermediate_size, args.vocab_size, args.head_dim
    attn = d * hd * (2 * args.num_attention_heads + 2 * args.num_key_value_heads)
    per_layer = attn + 3 * d * f + 2 * d
    return args.num_hidden_layers * per_layer + v * d * (1 if args.tie_word_embeddings else 2) + d


def _row(workload: str, variant: str, shape: str, tokens_per_run: int, times: list[float],
         **extra: Any) -> dict[str, Any]:
    med, best = statistics.median(times), min(times)
    return {"workload": workload, "variant": variant, "shape": shape, "unit": "tok/s",
            "tokens_per_run": tokens_per_run, "times_s": times, "median_s": med, "min_s": best,
            "median": tokens_per_run / med if med > 0 else float("nan"),
            "best": tokens_per_run / best if best > 0 else float("nan"), **extra}


def _decode_row(workload: str, once: Any, model: Any, prompt: Any, variant: str,
                opts: argparse.Namespace) -> dict[str, Any]:
    """The row of one decode workload: ``once(model, prompt, tokens)`` -> (seconds, token ids),
    after the warm-up runs; the token ids must repeat between repetitions."""
    for _ in range(opts.warmup):
        once(model, prompt, opts.tokens)
    times, tokens = [], None
    for _ in range(opts.reps):
        dt, toks = once(model, prompt, opts.tokens)
        if tokens is not None and toks != tokens:
            log.error("%s: greedy tokens changed between repetitions", opts.backend)
        tokens = toks
        times.append(dt)
    row = _row(workload, variant, opts.shape, opts.tokens - 1, times, token_ids=tokens)
    log.info("  %s %s: %.1f tok/s (median of %d), tokens %s...", workload, variant,
             row["median"], len(times), tokens[:8])
    return row


def run_backend(opts: argparse.Namespace) -> dict[str, Any]:
    """Every workload of ``opts`` on ``opts.backend``: the JSON document."""
    runner = Runner(opts.backend, opts.device)
    mx = runner.mx
    args = model_args(opts.shape, opts.tied)
    train_shape = opts.train_shape or ("tiny" if opts.shape == "tiny" else "150m")
    doc: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "backend": opts.backend, "versions": runner.describe(), "shape": opts.shape,
        "shape_args": SHAPES[opts.shape], "params": n_params(args), "dtype": opts.dtype,
        "tied": opts.tied, "train_shape": train_shape, "compile": opts.compile,
        "prompt": opts.prompt, "tokens": opts.tokens, "batch": opts.batch, "seq": opts.seq,
        "reps": opts.reps, "warmup": opts.warmup, "seed": opts.seed, "rows": [],
    }
    log.info("%s on %s (%s): shape %s, %.1fM parameters, %s", opts.backend,
             doc["versions"]["device_name"], doc["versions"]["device"], opts.shape,
             doc["params"] / 1e6, opts.dtype)
    prompt_np = np.random.default_rng([opts.seed, 1]).integers(
        0, args.vocab_size, opts.prompt).astype(np.uint32)
    gen = [w for w in opts.workload if w in ("prefill", "decode", "decode-compiled")]
    for variant in (opts.variant if gen else []):
        bits = 4 if variant == "q4" else None
        t0 = time.perf_counter()
        model = runner.build(args, opts.dtype, opts.seed, bits)
        log.info("  built %s %s model in %.1f s", opts.shape, variant, time.perf_counter() - t0)
        prompt = mx.array(prompt_np)
        if "prefill" in gen:
            for _ in range(opts.warmup):
                runner.prefill_once(model, prompt)
            times = [runner.prefill_once(model, prompt) for _ in range(opts.reps)]
            doc["rows"].append(_row("prefill", variant, opts.shape, opts.prompt, times))
            log.info("  prefill %s: %.1f tok/s (median of %d)", variant,
                     doc["rows"][-1]["median"], len(times))
        for workload, once in (("decode", runner.decode_once),
                               ("decode-compiled", runner.decode_static_once)):
            if workload in gen:
                doc["rows"].append(_decode_row(workload, once, model, prompt, variant, opts))
        del model
        mx.clear_cache()
        _write(opts.json, doc)
    if "train" in opts.workload:
        targs = model_args(train_shape, opts.tied)
        model = runner.build(targs, opts.dtype, opts.seed)
        batch = np.random.default_rng([opts.seed, 2]).integers(
            0, targs.vocab_size, (opts.batch, opts.seq + 1)).astype(np.uint32)
        # a compiled step traces twice: the optimizer state appears after the first update
        warmup = max(opts.warmup, 2) if opts.compile else opts.warmup
        times, losses = runner.train_steps(model, batch, opts.reps, opts.compile, warmup)
        doc["rows"].append(_row("train", "compiled" if opts.compile else "eager", train_shape,
                                opts.batch * opts.seq, times, losses=losses))
        log.info("  train: %.1f tok/s (median of %d)", doc["rows"][-1]["median"], len(times))
        del model
        mx.clear_cache()
    _write(opts.json, doc)
    return doc


def _write(path: Optional[Path], doc: dict[str, Any]) -> None:
    if path is not None:  # after every row: a run cut short still leaves its raw results
        Path(path).write_text(json.dumps(doc, indent=1))


# ------------------------------------------------------------------------------------------------
# --compare: both backends in subprocesses, ratios


def _child_argv(argv: list[str], backend: str, json_path: str) -> list[str]:
    """This call's arguments for one backend: --compare, --check and --json dropped."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--compare", "--check"):
            continue
        if a in ("--json", "--backend"):
            skip = True
            continue
        if a.startswith(("--json=", "--backend=")):
            continue
        out.append(a)
    return [sys.executable, str(Path(__file__).resolve()), *out, "--backend", backend,
            "--json", json_path]


def run_compare(opts: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    docs: dict[str, Any] = {}
    env = dict(os.environ)
    if opts.check:  # float32 means float32: no TF32 GEMMs on either GPU backend
        env["MLX_ENABLE_TF32"] = "0"
    with tempfile.TemporaryDirectory() as tmp:
        for backend in BACKENDS:
            path = os.path.join(tmp, backend + ".json")
            log.info("=== %s", backend)
            proc = subprocess.run(_child_argv(argv, backend, path), stdout=subprocess.PIPE,
                                  text=True, env=env)
            if proc.returncode != 0:
                log.error("%s exited with %d", backend, proc.returncode)
            if os.path.exists(path):
                docs[backend] = json.loads(Path(path).read_text())
    return docs


def compare_rows(docs: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per (workload, variant): both figures, ours / MLX and token agreement."""
    ours = {(r["workload"], r["variant"]): r for r in docs.get("pycudamlx", {}).get("rows", [])}
    theirs = {(r["workload"], r["variant"]): r for r in docs.get("mlx", {}).get("rows", [])}
    out = []
    for key in list(ours) + [k for k in theirs if k not in ours]:
        a, b = ours.get(key), theirs.get(key)
        row = {"workload": key[0], "variant": key[1], "shape": (a or b)["shape"],
               "ours": a and a["median"], "mlx": b and b["median"],
               "ours_best": a and a["best"], "mlx_best": b and b["best"]}
        row["ratio"] = (row["ours"] / row["mlx"]) if a and b and row["mlx"] else None
        if a and b and "token_ids" in a and "token_ids" in b:
            row["tokens_equal"] = a["token_ids"] == b["token_ids"]
            row["first_difference"] = next(
                (i for i, (x, y) in enumerate(zip(a["token_ids"], b["token_ids"])) if x != y),
                None)
        if a and b and "losses" in a and "losses" in b:
            row["loss_max_rel_diff"] = max(abs(x - y) / max(abs(y), 1e-12)
                                           for x, y in zip(a["losses"], b["losses"]))
        out.append(row)
    return out


def check(docs: dict[str, Any], loss_rtol: float) -> list[str]:
    """The --check failures (empty when greedy tokens are identical and losses agree)."""
    failures = []
    if set(docs) != set(BACKENDS):
        failures.append(f"missing results: have {sorted(docs)}")
    for row in compare_rows(docs):
        name = f"{row['workload']} {row['variant']}"
        if row.get("tokens_equal") is False:
            failures.append(f"{name}: greedy tokens differ from index {row['first_difference']}")
        if row.get("loss_max_rel_diff") is not None and row["loss_max_rel_diff"] > loss_rtol:
            failures.append(f"{name}: losses differ by {row['loss_max_rel_diff']:.3g} "
                            f"(tolerance {loss_rtol:g})")
        if row["ours"] is None or row["mlx"] is None:
            failures.append(f"{name}: a backend has no result")
    return failures


# ------------------------------------------------------------------------------------------------
# Tables


def _fmt(x: Optional[float]) -> str:
    return f"{x:>12.1f}" if x is not None else f"{'-':>12}"


def print_table(doc: dict[str, Any]) -> None:
    v = doc["versions"]
    print(f"\n{doc['backend']} {v.get(doc['backend'], '')} on {v['device_name']} "
          f"({v['device']}), shape {doc['shape']} ({doc['params'] / 1e6:.1f}M), {doc['dtype']}")
    print(f"{'workload':<28}{'median tok/s':>14}{'best tok/s':>12}")
    for r in doc["rows"]:
        print(f"{r['workload'] + ' ' + r['variant'] + ' [' + r['shape'] + ']':<28}"
              f"{r['median']:>14.1f}{r['best']:>12.1f}")


def print_compare(docs: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    for b in BACKENDS:
        if b in docs:
            v = docs[b]["versions"]
            print(f"{b}: {v.get(b, '?')} on {v['device_name']} ({v['device']})")
    any_doc = next(iter(docs.values()), None)
    if any_doc:
        print(f"shape {any_doc['shape']} ({any_doc['params'] / 1e6:.1f}M), {any_doc['dtype']}, "
              f"prompt {any_doc['prompt']}, {any_doc['tokens']} tokens, train "
              f"{any_doc['batch']}x{any_doc['seq']} [{any_doc['train_shape']}]; "
              "median tok/s over reps")
    print(f"{'workload':<28}{'pycudamlx':>12}{'mlx':>12}{'ours/mlx':>10}  agreement")
    for r in rows:
        ratio = f"{r['ratio']:>10.2f}" if r["ratio"] is not None else f"{'-':>10}"
        agree = ""
        if "tokens_equal" in r:
            agree = ("tokens equal" if r["tokens_equal"]
                     else f"tokens differ from #{r['first_difference']}")
        if r.get("loss_max_rel_diff") is not None:
            agree = f"losses rel. diff {r['loss_max_rel_diff']:.2g}"
        print(f"{r['workload'] + ' ' + r['variant'] + ' [' + r['shape'] + ']':<28}"
              f"{_fmt(r['ours'])}{_fmt(r['mlx'])}{ratio}  {agree}")


# ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=BACKENDS, default="pycudamlx")
    p.add_argument("--compare", action="store_true",
                   help="run both backends in subprocesses and print ours / MLX per row")
    p.add_argument("--check", action="store_true",
                   help="with --compare: fail unless greedy tokens are identical and the "
                        "training losses agree (meant for --shape tiny --dtype float32)")
    p.add_argument("--device", choices=("cpu", "gpu"),
                   help="the backend's default device (default: the backend's own default)")
    p.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    p.add_argument("--train-shape", choices=sorted(SHAPES),
                   help="shape of the train workload (default 150m; tiny with --shape tiny)")
    p.add_argument("--tied", action="store_true",
                   help="tie the lm head to the embedding (default: a separate lm_head)")
    p.add_argument("--dtype", choices=("bfloat16", "float16", "float32"),
                   help="weight dtype (default bfloat16; float32 with --check)")
    p.add_argument("--workload", action="append",
                   choices=("prefill", "decode", "decode-compiled", "train"),
                   help="repeat; default prefill, decode and train")
    p.add_argument("--variant", action="append", choices=("dense", "q4"),
                   help="prefill/decode weights, repeat; default dense and q4")
    p.add_argument("--prompt", type=int, default=512, help="prompt tokens")
    p.add_argument("--tokens", type=int, default=128, help="generated tokens")
    p.add_argument("--batch", type=int, default=8, help="train batch")
    p.add_argument("--seq", type=int, default=512, help="train sequence length")
    p.add_argument("--compile", action="store_true", help="mx.compile the training step")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--loss-rtol", type=float, default=1e-4, help="--check's loss tolerance")
    p.add_argument("--json", type=Path, help="write raw results here")
    opts = p.parse_args(argv)
    opts.workload = opts.workload or ["prefill", "decode", "train"]
    opts.variant = opts.variant or ["dense", "q4"]
    opts.dtype = opts.dtype or ("float32" if opts.check else "bfloat16")
    if opts.check and not opts.compare:
        p.error("--check compares the two backends: use it with --compare")
    if opts.tokens < 2:
        p.error("--tokens must be at least 2 (the rate is over tokens after the first)")
    return opts


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if not opts.compare:
        doc = run_backend(opts)
        print_table(doc)
        return 0
    if opts.check and "--dtype" not in " ".join(argv):
        argv = [*argv, "--dtype", opts.dtype]
    docs = run_compare(opts, argv)
    rows = compare_rows(docs)
    if opts.json:
        opts.json.write_text(json.dumps({"runs": docs, "compare": rows}, indent=1))
    print()
    print_compare(docs, rows)
    if opts.check:
        failures = check(docs, opts.loss_rtol)
        for f in failures:
            print(f"CHECK FAILED: {f}")
        if failures:
            return 1
        print("check: greedy tokens identical, losses agree")
    return 0 if set(docs) == set(BACKENDS) else 1


if __name__ == "__main__":
    sys.exit(main())
