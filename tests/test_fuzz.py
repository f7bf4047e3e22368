"""Property-based fuzzing of the public API: random calls of every public function of
pycudamlx.core (and of the array operators and methods) with random arrays, scalars, shapes,
axes, dtypes and junk. Every outcome must be a result or a typed exception (ValueError,
TypeError, IndexError, RuntimeError and its subclasses, MemoryError for impossible sizes) within
a time limit: never a crash, a hang, or an AttributeError / AssertionError / ZeroDivisionError /
OverflowError / KeyError escaping from our code.

The examples are derandomised (the same every run, so CI is stable); set
PYCUDAMLX_FUZZ_RANDOM=1 for fresh ones and PYCUDAMLX_FUZZ_EXAMPLES=N for more.
"""

from __future__ import annotations

import inspect
import math
import operator
import os
import signal
import threading
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pycudamlx.core as mx  # noqa: E402

ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, MemoryError, BufferError)
MLX_OVERFLOW_MESSAGES = ("is outside the supported range", "cannot convert float infinity",
                         "cannot convert float NaN")
TIME_LIMIT_S = 10.0
EXAMPLES = int(os.environ.get("PYCUDAMLX_FUZZ_EXAMPLES", "0")) or None
RANDOM = os.environ.get("PYCUDAMLX_FUZZ_RANDOM", "") not in ("", "0")

# Functions whose purpose is global state, threads or I/O: not fuzzed with junk.
EXCLUDED = {
    "set_default_device", "set_default_stream", "set_printoptions", "printoptions",
    "new_stream", "new_thread_local_stream", "new_thread_unsafe_stream", "clear_streams",
    "stream", "set_memory_limit", "set_cache_limit", "set_wired_limit", "clear_cache",
    "reset_peak_memory", "save", "load", "savez", "savez_compressed", "save_safetensors",
    "save_gguf", "export_function", "import_function", "exporter", "export_to_dot",
    "enable_compile", "disable_compile", "seed", "synchronize",
}

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64]

_HUGE_INTS = [2**31, 2**40, 2**63, -2**63 - 1, 2**64, -2**31 - 1]


def _public_functions():
    out = []
    for name in sorted(dir(mx)):
        if name.startswith("_") or name in EXCLUDED:
            continue
        obj = getattr(mx, name)
        if inspect.isclass(obj) and obj is not mx.array:
            continue
        if inspect.ismodule(obj) or not callable(obj):
            continue
        out.append(name)
    return out


FUNCTIONS = _public_functions()

small_ints = st.integers(-4, 8)
ints = st.one_of(small_ints, small_ints, st.sampled_from(_HUGE_INTS))
floats = st.one_of(st.floats(-100, 100, width=32), st.sampled_from(
    [0.0, -0.0, math.nan, math.inf, -math.inf, 1e30, 1e-30]))
scalars = st.one_of(st.booleans(), ints, floats, st.complex_numbers(max_magnitude=10,
                                                                     allow_nan=False))
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
odd_shapes = st.one_of(shapes, st.lists(ints, min_size=0, max_size=3).map(tuple),
                       st.just((1,) * 70))
dtypes = st.sampled_from(DTYPES)


@st.composite
def arrays(draw):
    shape = draw(shapes)
    dtype = draw(dtypes)
    n = int(np.prod(shape)) if shape else 1
    raw = draw(st.lists(st.floats(-50, 50, width=32), min_size=n, max_size=n))
    values = np.array(raw, dtype=np.float32).reshape(shape)
    a = mx.array(values if dtype is not mx.bool_ else values > 0, dtype)
    if draw(st.booleans()) and a.ndim >= 2:
        from pycudamlx.core.array import from_data

        a = from_data(np.swapaxes(a._numpy(), 0, 1), a.dtype)  # a non-contiguous view
    if draw(st.booleans()):
        a = a + mx.array(0, a.dtype) if a.dtype is not mx.bool_ else a  # a lazy node
    return a


junk = st.one_of(st.none(), st.text(max_size=3), st.just([1, [2]]), st.just({"a": 1}),
                 st.just(object()), st.just(np.array(["x"])), st.just(b"ab"),
                 st.just(float), st.just(mx.cpu))
nested_lists = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=8)
values = st.one_of(arrays(), arrays(), arrays(), scalars, shapes, nested_lists, dtypes, junk,
                   st.lists(arrays(), max_size=3), st.just(np.float32(2.5)),
                   st.just(np.arange(3)))
axes = st.one_of(st.none(), small_ints, st.lists(small_ints, max_size=3).map(tuple))


def _value_for(param: str):
    """A strategy for a parameter, from MLX's argument names."""
    if param in ("axis", "axes", "axis1", "axis2", "source", "destination", "start_axis",
                 "end_axis"):
        return st.one_of(axes, values)
    if param in ("shape", "reps", "pad_width", "strides"):
        return st.one_of(odd_shapes, values)
    if param == "dtype":
        return st.one_of(dtypes, values)
    if param == "stream":
        return st.sampled_from([None, mx.cpu, mx.Device(mx.cpu), mx.default_stream(mx.cpu),
                                "cpu"])
    if param in ("keepdims", "reverse", "inclusive", "equal_nan", "copy", "indexing"):
        return st.one_of(st.booleans(), values)
    if param in ("k", "offset", "n", "m", "num", "ddof", "decimals", "repeats",
                 "indices_or_sections", "start", "stop", "step"):
        return st.one_of(ints, values)
    return values


def _signature_params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]


class _Hang(BaseException):
    pass


#: Address space a single fuzzed call may add (Linux): a drawn size that asks for more gets a
#: MemoryError (an allowed outcome, as MLX's "[malloc] Unable to allocate") instead of growing
#: the test process until the kernel's OOM killer ends the whole CI run (seen once: 24 GB).
CALL_MEMORY_LIMIT = 4 << 30


def _address_space_cap():
    try:
        import resource

        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError):
        return None
    old = resource.getrlimit(resource.RLIMIT_AS)
    cap = used + CALL_MEMORY_LIMIT
    if old[0] != resource.RLIM_INFINITY and old[0] < cap:
        return None
    resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
    return old


def _call_with_limit(fn, *args, **kwargs):
    """Call ``fn``; a call still running after TIME_LIMIT_S is a hang (SIGALRM interrupts it),
    and one that would add more than CALL_MEMORY_LIMIT of address space gets a MemoryError."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "setitimer"):
        return fn(*args, **kwargs)

    def on_alarm(signum, frame):
        raise _Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    old_cap = _address_space_cap()
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if old_cap is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, old_cap)


def _check(label, fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _call_with_limit(fn, *args, **kwargs)
            # Results are evaluated too: laziness must not hide an error.
            for leaf in (out if isinstance(out, (list, tuple)) else [out]):
                if isinstance(leaf, mx.array):
                    _call_with_limit(mx.eval, leaf)
                    _call_with_limit(repr, leaf)
    except _Hang:
        pytest.fail(f"{label} did not finish within {TIME_LIMIT_S} s: args={args!r} "
                    f"kwargs={kwargs!r}")
    except ALLOWED:
        pass
    except OverflowError as exc:
        # MLX's own OverflowErrors: an int argument outside int32 (nanobind's caster), and
        # Python's int()/float conversions of inf/nan scalars.
        if not any(m in str(exc) for m in MLX_OVERFLOW_MESSAGES):
            raise AssertionError(f"{label} raised OverflowError: {exc} (args={args!r}, "
                                 f"kwargs={kwargs!r})") from exc
    except Exception as exc:  # noqa: BLE001 - the property under test
        raise AssertionError(f"{label} raised {type(exc).__name__}: {exc} "
                             f"(args={args!r}, kwargs={kwargs!r})") from exc


_SETTINGS = settings(
    max_examples=EXAMPLES or 1500, deadline=None, derandomize=not RANDOM, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)


@_SETTINGS
@given(st.data())
def test_public_functions_return_or_raise_typed_errors(data):
    name = data.draw(st.sampled_from(FUNCTIONS), label="function")
    fn = getattr(mx, name)
    params = _signature_params(fn)
    args, kwargs = [], {}
    if params is None:
        args = data.draw(st.lists(values, max_size=3), label="args")
    else:
        for p in params:
            if p.kind is p.VAR_POSITIONAL:
                args += data.draw(st.lists(values, max_size=2), label=p.name)
                continue
            required = p.default is p.empty
            if not required and not data.draw(st.booleans(), label=f"pass {p.name}"):
                continue
            v = data.draw(_value_for(p.name), label=p.name)
            if p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and not required
                                            and data.draw(st.booleans())):
                kwargs[p.name] = v
            else:
                args.append(v)
    _check(f"mx.{name}", fn, *args, **kwargs)


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, operator.lt, operator.le, operator.gt, operator.ge,
          operator.eq, operator.ne, operator.matmul, divmod]
UNARY = [operator.neg, operator.pos, operator.abs, operator.invert, bool, int, float, complex,
         len, list, repr, str, hash, operator.index, lambda a: a.item(), lambda a: a.tolist(),
         lambda a: np.array(a), lambda a: bytes(a), lambda a: format(a, ".2f"),
         lambda a: a.T, lambda a: a.astype(mx.float16)]


@_SETTINGS
@given(st.data())
def test_operators_return_or_raise_typed_errors(data):
    a = data.draw(arrays(), label="a")
    if data.draw(st.booleans()):
        op = data.draw(st.sampled_from(BINARY), label="op")
        other = data.draw(values, label="other")
        if data.draw(st.booleans()):
            _check(f"{op.__name__}(other, a)", op, other, a)
        else:
            _check(f"{op.__name__}(a, other)", op, a, other)
        inplace = {operator.add: operator.iadd, operator.sub: operator.isub,
                   operator.mul: operator.imul, operator.truediv: operator.itruediv,
                   operator.and_: operator.iand, operator.pow: operator.ipow}.get(op)
        if inplace is not None:
            _check(f"{inplace.__name__}(a, other)", inplace, a, other)
    else:
        op = data.draw(st.sampled_from(UNARY), label="op")
        _check(getattr(op, "__name__", "unary"), op, a)


@_SETTINGS
@given(st.data())
def test_methods_return_or_raise_typed_errors(data):
    a = data.draw(arrays(), label="a")
    names = sorted(n for n in dir(mx.array) if not n.startswith("_") and callable(
        getattr(mx.array, n, None)) and n not in ("at",))
    name = data.draw(st.sampled_from(names), label="method")
    method = getattr(a, name)
    params = _signature_params(method) or []
    args, kwargs = [], {}
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            args += data.draw(st.lists(st.one_of(small_ints, values), max_size=3), label=p.name)
        elif p.default is p.empty or data.draw(st.booleans()):
            v = data.draw(_value_for(p.name), label=p.name)
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = v
            else:
                args.append(v)
    _check(f"array.{name}", method, *args, **kwargs)


def test_every_public_function_is_fuzzed():
    assert "array" in FUNCTIONS and "add" in FUNCTIONS and len(FUNCTIONS) > 20
