"""Mistakes with mx.random (bad keys, shapes that do not broadcast, wrong dtypes, bounds that
need a shape) and with mx.save/mx.load (unknown extensions, missing files, wrong formats,
unsupported dtypes and metadata), with the exceptions MLX raises for them."""
# compare: text
# gpu-differs: mvn_gpu
import io
import os
import tempfile

import numpy as np

import mlx.core as mx


def check(label, fn):
    try:
        out = fn()
        outs = out if isinstance(out, (tuple, list)) else [out]
        mx.eval(*[o for o in outs if isinstance(o, mx.array)])
        desc = ", ".join(f"{o.shape} {o.dtype}" if isinstance(o, mx.array) else repr(o) for o in outs if o is not None)
        print(f"{label}: ok {desc}")
    except Exception as e:  # noqa: BLE001 - the point is to print what MLX raises
        msg = str(e).replace(tmp, "<tmp>")
        print(f"{label}: {type(e).__name__}: {msg}")


tmp = tempfile.mkdtemp()
p = lambda name: os.path.join(tmp, name)  # noqa: E731
key = mx.random.key(0)

CASES = {
    "key_float": lambda: mx.random.key(1.5),
    "key_neg": lambda: mx.random.key(-1),
    "key_big": lambda: mx.random.key(2**64 + 1),
    "seed_float": lambda: mx.random.seed(0.5),
    "split_zero": lambda: mx.random.split(key, 0),
    "split_bad_key": lambda: mx.random.split(mx.array([1, 2, 3], dtype=mx.uint32)),
    "split_float_key": lambda: mx.random.split(mx.array([1.0, 2.0])),
    "split_batched": lambda: mx.random.split(mx.random.split(key, 3)),
    "uniform_bad_key": lambda: mx.random.uniform(shape=(2,), key=mx.array([1, 2, 3], dtype=mx.uint32)),
    "uniform_int_key": lambda: mx.random.uniform(shape=(2,), key=mx.array([1, 2])),
    "uniform_int_dtype": lambda: mx.random.uniform(shape=(2,), dtype=mx.int32),
    "uniform_bcast": lambda: mx.random.uniform(mx.zeros((3,)), mx.ones((2,)), (3,)),
    "uniform_no_shape": lambda: mx.random.uniform(mx.zeros((3,)), 1.0),
    "uniform_shape_mismatch": lambda: mx.random.uniform(mx.zeros((3,)), 1.0, (2,)),
    "uniform_low_gt_high": lambda: mx.random.uniform(1.0, 0.0, (3,), key=key),
    "normal_int": lambda: mx.random.normal((2,), dtype=mx.int32),
    "normal_neg_shape": lambda: mx.random.normal((-1,)),
    "normal_scale_array": lambda: mx.random.normal((2, 2), scale=mx.array([1.0, 2.0]), key=key),
    "normal_loc_bad": lambda: mx.random.normal((2,), loc=mx.zeros((3,))),
    "randint_float_dtype": lambda: mx.random.randint(0, 5, (3,), dtype=mx.float32, key=key),
    "randint_low_eq_high": lambda: mx.random.randint(3, 3, (3,), key=key),
    "randint_low_gt_high": lambda: mx.random.randint(5, 0, (3,), key=key),
    "randint_float_bounds": lambda: mx.random.randint(0.5, 4.5, (4,), key=key),
    "randint_no_shape": lambda: mx.random.randint(mx.zeros((2,), dtype=mx.int32), 4),
    "bernoulli_p_shape": lambda: mx.random.bernoulli(mx.array([0.5, 0.5]), (3,)),
    "bernoulli_p_int": lambda: mx.random.bernoulli(mx.array([1, 0]), key=key),
    "bernoulli_p_big": lambda: mx.random.bernoulli(2.0, (3,), key=key),
    "truncated_shape": lambda: mx.random.truncated_normal(mx.zeros((2,)), mx.ones((3,))),
    "truncated_int": lambda: mx.random.truncated_normal(0, 1, (2,), dtype=mx.int32),
    "truncated_swapped": lambda: mx.random.truncated_normal(1.0, -1.0, (3,), key=key),
    "categorical_both": lambda: mx.random.categorical(mx.zeros((2, 3)), shape=(2,), num_samples=2),
    "categorical_shape": lambda: mx.random.categorical(mx.zeros((2, 3)), shape=(3,)),
    "categorical_axis": lambda: mx.random.categorical(mx.zeros((2, 3)), axis=2),
    "categorical_scalar": lambda: mx.random.categorical(mx.array(1.0)),
    "mvn_gpu": lambda: mx.random.multivariate_normal(mx.zeros(2), mx.eye(2), stream=mx.gpu),
    "mvn_cov_shape": lambda: mx.random.multivariate_normal(mx.zeros(2), mx.eye(3), stream=mx.cpu),
    "mvn_cov_1d": lambda: mx.random.multivariate_normal(mx.zeros(2), mx.ones(2), stream=mx.cpu),
    "mvn_mean_0d": lambda: mx.random.multivariate_normal(mx.array(0.0), mx.eye(1), stream=mx.cpu),
    "mvn_f16": lambda: mx.random.multivariate_normal(mx.zeros(2), mx.eye(2), dtype=mx.float16, stream=mx.cpu),
    "mvn_shape": lambda: mx.random.multivariate_normal(mx.zeros((3, 2)), mx.eye(2), shape=(2,), stream=mx.cpu),
    "permutation_float": lambda: mx.random.permutation(4.0),
    "permutation_neg": lambda: mx.random.permutation(-3),
    "gumbel_int": lambda: mx.random.gumbel((2,), dtype=mx.int32),
    "laplace_int": lambda: mx.random.laplace((2,), dtype=mx.int32),
    "laplace_loc_array": lambda: mx.random.laplace((2,), loc=mx.array(1.0)),
    "normal_dtype_str": lambda: mx.random.normal((2,), dtype="float32"),
    "normal_key_list": lambda: mx.random.normal((2,), key=[0, 1]),
    "categorical_list": lambda: mx.random.categorical([0.0, 1.0]),
    "mvn_lists": lambda: mx.random.multivariate_normal([0.0], [[1.0]], stream=mx.cpu),
    "permutation_axis_float": lambda: mx.random.permutation(mx.arange(3), axis=0.0),
    "laplace_loc_str": lambda: mx.random.laplace((2,), loc="a"),
    "laplace_loc_int": lambda: mx.random.laplace((2,), loc=1, key=key),
    # io
    "load_int": lambda: mx.load(123),
    "load_format_int": lambda: mx.load(p("ok.npy"), format=1),
    "save_int_path": lambda: mx.save(5, mx.ones(2)),
    "save_numpy": lambda: mx.save(p("np.npy"), np.ones(2)),
    "save_ext": lambda: mx.save(p("a.txt"), mx.ones(2)),
    "save_dict": lambda: mx.save(p("d.npy"), {"a": mx.ones(2)}),
    "save_list": lambda: mx.save(p("l.npy"), [1.0, 2.0]),
    "save_bf16": lambda: mx.save(p("b.npy"), mx.ones(2, dtype=mx.bfloat16)),
    "savez_bf16": lambda: mx.savez(p("b.npz"), x=mx.ones(2, dtype=mx.bfloat16)),
    "savez_dup": lambda: mx.savez(p("dup.npz"), mx.ones(2), arr_0=mx.zeros(2)),
    "load_missing": lambda: mx.load(p("missing.npy")),
    "load_missing_st": lambda: mx.load(p("missing.safetensors")),
    "load_missing_npz": lambda: mx.load(p("missing.npz")),
    "load_missing_gguf": lambda: mx.load(p("missing.gguf")),
    "load_no_ext": lambda: mx.load(p("noext")),
    "load_bad_ext": lambda: mx.load(p("file.pt")),
    "load_bad_format": lambda: mx.load(p("x.npy"), format="pickle"),
    "load_meta_npy": lambda: mx.load(p("ok.npy"), return_metadata=True),
    "load_meta_npz": lambda: mx.load(p("ok.npz"), return_metadata=True),
    "load_wrong_format": lambda: mx.load(p("ok.npy"), format="safetensors"),
    "load_dir": lambda: mx.load(tmp),
    "st_not_dict": lambda: mx.save_safetensors(p("s"), [mx.ones(2)]),
    "st_meta_int": lambda: mx.save_safetensors(p("s"), {"a": mx.ones(2)}, metadata={"n": 1}),
    "st_bad_ext": lambda: mx.save_safetensors(p("s.bin"), {"a": mx.ones(2)}),
    "st_f64": lambda: mx.save_safetensors(p("f64"), {"a": mx.ones(2), "b": mx.ones(2, dtype=mx.float64)}),
    "st_f64_size": lambda: os.path.getsize(p("f64.safetensors")),
    "npy_strings": lambda: mx.load(p("strings.npy")),
    "npy_objects": lambda: mx.load(p("objects.npy")),
    "npy_complex128": lambda: mx.load(p("c128.npy")),
    "npy_big_endian": lambda: mx.load(p("big.npy")),
    "gguf_buffer": lambda: mx.save_gguf(io.BytesIO(), {"a": mx.ones(2)}),
    "gguf_handle": lambda: mx.load(open(p("ok.gguf"), "rb")),
    "load_meta_int": lambda: mx.load(p("ok.npy"), return_metadata=1),
    "load_format_upper": lambda: mx.load(p("ok.npy"), format="NPY"),
    "load_npz_as_npy": lambda: mx.load(p("ok.npz"), format="npy"),
    "gguf_bf16": lambda: mx.save_gguf(p("g"), {"a": mx.ones(2, dtype=mx.bfloat16)}),
    "gguf_u8": lambda: mx.save_gguf(p("g"), {"a": mx.ones(2, dtype=mx.uint8)}),
    "gguf_meta_2d": lambda: mx.save_gguf(p("g"), {"a": mx.ones(2)}, {"m": mx.ones((2, 2))}),
    "gguf_meta_f16": lambda: mx.save_gguf(p("g"), {"a": mx.ones(2)}, {"m": mx.array(1.0, dtype=mx.float16)}),
    "gguf_meta_list_empty": lambda: mx.save_gguf(p("g"), {"a": mx.ones(2)}, {"m": []}),
}
mx.save(p("ok.npy"), mx.ones(2))
mx.savez(p("ok.npz"), a=mx.ones(2))
np.save(p("strings.npy"), np.array(["a", "bc"]))
np.save(p("objects.npy"), np.array([1, "x"], dtype=object), allow_pickle=True)
np.save(p("c128.npy"), np.array([1 + 2j]))
np.save(p("big.npy"), np.arange(3, dtype=">i2"))
mx.save_gguf(p("ok"), {"a": mx.ones(2)})
with open(p("noext"), "wb") as f:
    f.write(b"\x93NUMPY")
for label, fn in CASES.items():
    check(label, fn)
print(sorted(os.listdir(tmp)))
