"""mlx-lm's entry points on tiny random models, printed as JSON: run under real MLX or under
pycudamlx (through ``pycudamlx.mlx_alias``) by tests/test_mlx_lm.py, which compares the two.

    python tests/mlx_lm_cases.py WORKDIR CASE     # imports mlx: whichever one the process has
    python tests/mlx_lm_cases.py WORKDIR hub      # the stand-in hub model of mlx-lm's own tests

WORKDIR holds the model folders the cases share; ``build`` writes them with numpy, safetensors
and tokenizers only (no MLX), so both backends load the very same weights and tokenizer. The
weights are scaled so the logits are well separated: greedy tokens then do not hinge on the
last bit of a sum, and the GPU must give the CPU's tokens.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path

import numpy as np

TEXT = ("hello world this is a tiny tokenizer for testing the generation of text with a small "
        "model. the quick brown fox jumps over the lazy dog. write a story about einstein. "
        "what is the capital of france? paris is the capital. once upon a time there was a "
        "king. 0123456789 !?.,;:'\"()[]{}<>-_=+*/\\|@#$%^&~`\n\t ") * 10
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
        "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 2,
         "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
         "max_position_embeddings": 2048}
#: Tiny configs of model families whose layers differ (GQA, qk-norm, sliding windows and soft
#: caps, fused qkv, mixtures of experts, state-space scans); vocab_size is the tokenizer's.
FAMILIES = {
    "llama": LLAMA,
    "qwen3": {"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
              "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 16, "rms_norm_eps": 1e-6, "rope_theta": 1e6,
              "max_position_embeddings": 2048, "tie_word_embeddings": True},
    "gemma3_text": {"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 3,
                    "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "head_dim": 16, "rms_norm_eps": 1e-6, "sliding_window": 4,
                    "sliding_window_pattern": 2, "query_pre_attn_scalar": 16},
    "phi3": {"model_type": "phi3", "hidden_size": 64, "num_hidden_layers": 2,
             "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 4,
             "rms_norm_eps": 1e-5, "rope_theta": 10000.0},
    "mixtral": {"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
                "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
                "num_local_experts": 4, "num_experts_per_tok": 2, "rms_norm_eps": 1e-5,
                "rope_theta": 1e6},
    "qwen3_moe": {"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
                  "intermediate_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2,
                  "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2,
                  "decoder_sparse_step": 1, "mlp_only_layers": [], "moe_intermediate_size": 32,
                  "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": False,
                  "max_position_embeddings": 2048, "norm_topk_prob": True},
    "mamba": {"model_type": "mamba", "hidden_size": 32, "intermediate_size": 64,
              "state_size": 8, "num_hidden_layers": 2, "conv_kernel": 4, "use_bias": False,
              "use_conv_bias": True, "time_step_rank": 4, "tie_word_embeddings": True},
}
PROMPT = "the quick brown fox"


def _tokenizer(folder: Path) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TEXT], trainer)
    tok.save(str(folder / "tokenizer.json"))
    added = {str(tok.token_to_id(s)): {"content": s, "special": True, "lstrip": False,
                                       "rstrip": False, "normalized": False,
                                       "single_word": False} for s in SPECIALS}
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "chat_template": CHAT, "model_max_length": 4096,
        "added_tokens_decoder": added}))
    return tok.get_vocab_size()


def _weights(model_class, args) -> dict[str, np.ndarray]:
    """Deterministic numpy weights for every parameter of the model, keyed by name."""
    from mlx.utils import tree_flatten

    model = model_class(args)
    out = {}
    for name, p in tree_flatten(model.parameters()):
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        shape = tuple(p.shape)
        if name.endswith("norm.weight") or name.endswith("layernorm.weight") or (
                len(shape) == 1 and "norm" in name):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("A_log"):
            w = np.log(np.tile(np.arange(1, shape[-1] + 1, dtype=np.float64), (shape[0], 1)))
        elif len(shape) == 1:
            w = 0.1 * rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) * (2.0 / np.sqrt(shape[-1]))
        out[name] = w.astype(np.float32)
    return out


def build(work: Path) -> None:
    from safetensors.numpy import save_file

    from mlx_lm.utils import _get_classes

    for family, config in FAMILIES.items():
        folder = work / family
        if (folder / "config.json").exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        config = dict(config, vocab_size=_tokenizer(folder), eos_token_id=2)
        model_class, args_class = _get_classes(config)
        save_file(_weights(model_class, args_class.from_dict(config)),
                  str(folder / "model.safetensors"), metadata={"format": "mlx"})
        (folder / "config.json").write_text(json.dumps(config))
    data = work / "data"
    data.mkdir(exist_ok=True)
    rows = [{"text": t.strip() + "."} for t in TEXT.split(".")[:6] if t.strip()]
    for split in ("train", "valid", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def hub(work: Path) -> None:
    """A stand-in for the hub model mlx-lm's own tests load by name: a tiny random 4-bit qwen2
    in the Hugging Face cache layout under WORK/hub (point HF_HUB_CACHE there, offline)."""
    from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

    repo = work / "hub" / "models--mlx-community--Qwen1.5-0.5B-Chat-4bit"
    snap = repo / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text("0" * 40)
    config = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
              "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
              "rms_norm_eps": 1e-6, "rope_theta": 1e6, "tie_word_embeddings": False,
              "max_position_embeddings": 4096, "vocab_size": _tokenizer(snap),
              "eos_token_id": 2}
    model_class, args_class = _get_classes(config)
    model = model_class(args_class.from_dict(config))
    import mlx.core as mx

    model.load_weights([(k, mx.array(v)) for k, v in
                        _weights(model_class, args_class.from_dict(config)).items()])
    model, config = quantize_model(model, config, 64, 4)
    save_model(snap, model)
    save_config(config, snap / "config.json")


def _load(work: Path, family: str = "llama"):
    from mlx_lm import load

    return load(str(work / family))


def _floats(a) -> list[float]:
    return [round(float(x), 6) for x in np.array(a, dtype=np.float32).reshape(-1)]


def case_greedy(work: Path) -> dict:
    from mlx_lm import generate, stream_generate

    model, tok = _load(work)
    text = generate(model, tok, PROMPT, max_tokens=16)
    steps = list(stream_generate(model, tok, PROMPT, max_tokens=16))
    return {"text": text, "tokens": [s.token for s in steps],
            "logprob": [_floats(s.logprobs[s.token])[0] for s in steps]}


def case_chat_template(work: Path) -> dict:
    from mlx_lm import generate

    model, tok = _load(work)
    prompt = tok.apply_chat_template([{"role": "user", "content": "write a story"}],
                                     add_generation_prompt=True)
    return {"prompt": list(prompt), "text": generate(model, tok, prompt, max_tokens=12)}


def case_sampling(work: Path) -> dict:
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    model, tok = _load(work)
    prompt = mx.array(tok.encode(PROMPT))
    out = {}
    for name, kw in {"temp": dict(temp=0.9), "top_p": dict(temp=0.8, top_p=0.9),
                     "min_p": dict(temp=1.0, min_p=0.1), "top_k": dict(temp=1.0, top_k=5),
                     "xtc": dict(temp=1.0, xtc_probability=0.5, xtc_threshold=0.05)}.items():
        mx.random.seed(3)
        sampler = make_sampler(**kw)
        out[name] = [int(t) for t, _ in generate_step(prompt, model, sampler=sampler,
                                                      max_tokens=10)]
    procs = make_logits_processors(logit_bias={5: 3.0, 17: -4.0}, repetition_penalty=1.5,
                                   presence_penalty=0.5, frequency_penalty=0.3)
    out["processors"] = [int(t) for t, _ in generate_step(prompt, model,
                                                          logits_processors=procs,
                                                          max_tokens=12)]
    return out


def case_batch(work: Path) -> dict:
    from mlx_lm import batch_generate

    model, tok = _load(work)
    prompts = [tok.encode(p) for p in ("hello", "the quick brown fox jumps", "paris is")]
    r = batch_generate(model, tok, prompts, max_tokens=[8, 5, 10], return_token_ids=True)
    return {"texts": r.texts, "tokens": [list(map(int, t)) for t in r.token_ids]}


def case_prompt_cache(work: Path) -> dict:
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.models.cache import (load_prompt_cache, make_prompt_cache, save_prompt_cache,
                                     trim_prompt_cache)

    model, tok = _load(work)
    ids = tok.encode(PROMPT + " jumps over")
    cache = make_prompt_cache(model)
    first = [int(t) for t, _ in generate_step(mx.array(ids), model, prompt_cache=cache,
                                              max_tokens=6)]
    path = str(work / "cache.safetensors")
    save_prompt_cache(path, cache, {"who": "test"})
    loaded, meta = load_prompt_cache(path, return_metadata=True)
    trimmed = trim_prompt_cache(loaded, 3)
    again = [int(t) for t, _ in generate_step(mx.array(tok.encode(" the")), model,
                                              prompt_cache=loaded, max_tokens=6)]
    rotating = make_prompt_cache(model, max_kv_size=8)
    ring = [int(t) for t, _ in generate_step(mx.array(ids), model, prompt_cache=rotating,
                                             max_tokens=12)]
    quant = [int(t) for t, _ in generate_step(mx.array(ids), model, kv_bits=4, kv_group_size=32,
                                              quantized_kv_start=0, max_tokens=8)]
    return {"first": first, "meta": meta, "trimmed": trimmed, "offset": loaded[0].offset,
            "again": again, "rotating": ring, "quantized_kv": quant}


def case_convert_quantized(work: Path) -> dict:
    import shutil

    from mlx_lm import convert, generate

    q = work / f"llama-q4-{os.getpid()}"
    shutil.rmtree(q, ignore_errors=True)
    convert(str(work / "llama"), mlx_path=str(q), quantize=True, q_group_size=32, q_bits=4)
    config = json.loads((q / "config.json").read_text())
    model, tok = _load(work, q.name)
    text = generate(model, tok, PROMPT, max_tokens=12)
    shutil.rmtree(q, ignore_errors=True)
    return {"quantization": config["quantization"], "text": text}


def case_families(work: Path) -> dict:
    import mlx.core as mx

    out = {}
    for family in FAMILIES:
        model, tok = _load(work, family)
        ids = mx.array([tok.encode(PROMPT + " jumps over the lazy dog")])
        whole = model(ids)
        from mlx_lm.models.cache import make_prompt_cache

        cache = make_prompt_cache(model)
        model(ids[:, :5], cache=cache)
        chunked = model(ids[:, 5:], cache=cache)
        out[family] = {"shape": list(whole.shape), "last": _floats(whole[0, -1, :8]),
                       "sum": _floats(whole.astype(mx.float32).sum())[0],
                       "chunked_last": _floats(chunked[0, -1, :8]),
                       "argmax": [int(t) for t in mx.argmax(whole[0], axis=-1).tolist()]}
    return out


def case_lora(work: Path) -> dict:
    """A few LoRA steps through mlx_lm's trainer (the `mlx_lm lora` command's code path)."""
    import types

    import mlx.optimizers as optim
    from mlx_lm.tuner.datasets import load_dataset
    from mlx_lm.tuner.trainer import TrainingArgs, evaluate, train
    from mlx_lm.tuner.utils import linear_to_lora_layers

    import mlx.core as mx

    mx.random.seed(0)
    np.random.seed(0)
    model, tok = _load(work)
    model.freeze()
    linear_to_lora_layers(model, 2, {"rank": 4, "scale": 10.0, "dropout": 0.0})
    args = types.SimpleNamespace(data=str(work / "data"), train=True, test=False,
                                 hf_dataset=None, mask_prompt=False)
    train_set, valid_set, _ = load_dataset(args, tok)
    losses = []

    class Report:
        def on_train_loss_report(self, info):
            losses.append(round(info["train_loss"], 5))

        def on_val_loss_report(self, info):
            losses.append(round(info["val_loss"], 5))

    targs = TrainingArgs(batch_size=2, iters=4, val_batches=1, steps_per_report=1,
                         steps_per_eval=4, steps_per_save=100, max_seq_length=64,
                         adapter_file=str(work / f"adapters-{os.getpid()}.safetensors"))
    from mlx_lm.tuner.trainer import CacheDataset

    train(model=model, optimizer=optim.AdamW(learning_rate=2e-3, eps=1e-5), args=targs,
          train_dataset=CacheDataset(train_set), val_dataset=CacheDataset(valid_set),
          training_callback=Report())
    os.remove(targs.adapter_file)
    val = evaluate(model=model, dataset=CacheDataset(valid_set), batch_size=2, num_batches=1,
                   max_seq_length=64)
    return {"losses": losses, "val": round(float(val), 5)}


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main() -> None:
    work, case = Path(sys.argv[1]), sys.argv[2]
    if case in ("build", "hub"):
        (build if case == "build" else hub)(work)
        print("RESULT {}")
        return
    result = CASES[case](work)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
