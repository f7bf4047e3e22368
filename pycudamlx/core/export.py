"""Exporting functions: ``mx.export_function``, ``mx.exporter``, ``mx.import_function``.

Exporting traces a function once per input signature (shapes and dtypes of its array
arguments, keyword names): the body runs on stand-ins of the example arrays, as in
``mx.compile``, and the lazy graph it built is walked back from its outputs to the inputs.
Arrays with a value that the graph reaches (weights read through a closure, random keys) are
constants of the trace, stored with it; everything above them is a step (a primitive, its
input references, its output shape and dtype). ``import_function`` rebuilds the steps on new
input arrays: lazy ops like any others, so an imported function runs on the default device
(the GPU too), and grad/vmap/compile see ordinary ops. The file format is pycudamlx's own
(``_export_format``): MLX's ``.mlxfn`` files and ours do not load in each other.
"""

from __future__ import annotations

import string
from typing import Any, Callable

import numpy as np

from .. import dtypes as dt
from . import _compile_replay as _replay
from . import _shape_rules
from . import _compile_trace
from . import _export_format as fmt
from . import device as dev
from ._nanobind import SIGNATURES
from .array import _ALIAS, _LEAF, array, from_data, make, make_multi
from .graph_dot import _label

__all__ = ["FunctionExporter", "export_function", "exporter", "import_function"]

_EXPORT_SIG = SIGNATURES["export_function"]
_EXPORTER_SIG = SIGNATURES["exporter"]
_IMPORT_SIG = SIGNATURES["import_function"]
_INPUTS = ("{} Inputs can either be a variable number of positional and keyword arrays or a "
           "single tuple and/or dictionary of arrays.")
_OUTPUTS = "[export_function] Outputs can be either a single array, a tuple, or a list of arrays."


def _flat_inputs(args: tuple, kwargs: dict, where: str) -> tuple[list, dict]:
    """MLX's two calling forms: arrays as ``*args, **kwargs``, or one tuple/list of arrays
    and/or one dict of arrays (with nothing else)."""
    def arrays(xs: Any) -> bool:
        return all(isinstance(x, array) for x in xs)

    if arrays(args) and arrays(kwargs.values()):
        return list(args), dict(kwargs)
    if not kwargs and 1 <= len(args) <= 2:
        pos: Any = None
        kw: Any = None
        first, rest = args[0], args[1:]
        if isinstance(first, (tuple, list)):
            pos = first
            if rest:
                kw = rest[0] if isinstance(rest[0], dict) else None
                if kw is None:
                    raise ValueError(_INPUTS.format(where))
        elif isinstance(first, dict) and not rest:
            kw = first
        if (pos is not None or kw is not None) and arrays(pos or ()) and (
                kw is None or (all(isinstance(k, str) for k in kw) and arrays(kw.values()))):
            return list(pos or ()), dict(kw or {})
    raise ValueError(_INPUTS.format(where))


_shape_text = _shape_rules.shape_text


class _Trace:
    """One exported signature: how to rebuild its outputs from its inputs."""

    __slots__ = ("kwarg_keys", "inputs", "steps", "outputs")

    def __init__(self, kwarg_keys: list, inputs: list, steps: list, outputs: list) -> None:
        self.kwarg_keys = kwarg_keys  # sorted, as MLX's keyword map
        self.inputs = inputs  # [(shape, dtype)], positional then keyword
        self.steps = steps
        self.outputs = outputs  # value references


class _Table:
    """The traces of one function and MLX's rule for picking the one a call matches."""

    def __init__(self, shapeless: bool) -> None:
        self.shapeless = shapeless
        self.traces: list[_Trace] = []

    def find(self, args: list, kwargs: dict) -> _Trace | None:
        n = len(args) + len(kwargs)
        given = args + [kwargs[k] for k in sorted(kwargs)]
        for t in self.traces:
            if len(t.inputs) != n or any(k not in kwargs for k in t.kwarg_keys):
                continue
            if all(a._dtype == d and (len(a._shape) == len(s) if self.shapeless
                                      else a._shape == s)
                   for a, (s, d) in zip(given, t.inputs)):
                return t
        return None

    def describe(self) -> str:
        """The traces as MLX lists them: grouped by input count, groups in the order of
        MLX's hash map of counts (the latest new count first), traces of a group in export
        order."""
        groups: dict[int, list[_Trace]] = {}
        for t in self.traces:
            groups.setdefault(len(t.inputs), []).append(t)
        lines = []
        n = 1
        for count in reversed(list(groups)):
            for t in groups[count]:
                npos = len(t.inputs) - len(t.kwarg_keys)
                lines.append(f" {n}. Function with {npos} positional inputs and "
                             f"{len(t.kwarg_keys)} keyword inputs:\n")
                n += 1
                for j, (s, d) in enumerate(t.inputs):
                    name = f"{j + 1}" if j < npos else f'"{t.kwarg_keys[j - npos]}"'
                    lines.append(f"   {name}: {_shape_text(s)} {d.name}\n")
        return "".join(lines)


# ----------------------------------------------------------------------------------------------
# Tracing


def _trace(fun: Callable, args: list, kwargs: dict) -> tuple[list, list, list]:
    """Run ``fun`` on stand-ins of the example arrays; (leaves, outputs, tape) where the
    leaves are the nodes that stand for the inputs (positional, then keywords sorted)."""
    keys = sorted(kwargs)
    examples = args + [kwargs[k] for k in keys]
    leaves = [make(_ALIAS, (a,), a._shape, a._dtype, a._stream or dev.resolve_stream(None))
              for a in examples]
    # The body sees a second alias of each leaf: an in-place update inside (``x += y``) moves
    # the stand-in's node, never the leaf.
    stand = [make(_ALIAS, (leaf,), leaf._shape, leaf._dtype, leaf._stream) for leaf in leaves]
    n = len(args)
    _compile_trace.enter(leaves + stand)
    try:
        with _replay.KeepEvaluated() as tape:
            out = fun(*stand[:n], **dict(zip(keys, stand[n:])))
            if isinstance(out, array):
                outs = [out]
            elif isinstance(out, (tuple, list)) and all(isinstance(o, array) for o in out):
                outs = list(out)
            else:
                raise ValueError(_OUTPUTS)
            return leaves, outs, dict(tape)
    finally:
        _compile_trace.leave()


def _walk(leaves: list, outs: list, tape: dict, constant: Callable[[array], int],
          default_stream: Any) -> tuple[list, list]:
    """The steps that rebuild ``outs`` from ``leaves``; ``constant(a)`` gives the file's
    index of a valued array. References: an int is a value slot (inputs, then one slot per
    step); ``["c", k]`` is constant k."""
    slot: dict[int, Any] = {id(a): i for i, a in enumerate(leaves)}
    n_in = len(leaves)
    steps: list = []
    groups: dict[int, int] = {}
    keep: list = []
    stack = [(a, False) for a in reversed(outs)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in slot and not expanded:
            continue
        rec = _replay._node(node, tape)
        if rec is None:  # a value: a constant of the trace
            slot[key] = ["c", constant(node)]
            continue
        prim, inputs, sib = rec
        if not expanded:
            keep.append(node)
            stack.append((node, True))
            stack.extend((i, False) for i in reversed(inputs) if id(i) not in slot)
            continue
        refs = [slot[id(i)] for i in inputs]
        if prim is _ALIAS or prim is _LEAF:
            slot[key] = refs[0]  # the same value: no step
            continue
        stream = node._stream or default_stream
        where = None if stream == default_stream else [stream.device.type.name,
                                                       stream.device.index]
        if sib is not None:
            pos = next((j for j, r in enumerate(sib.refs) if r() is node), None)
            group = groups.get(id(sib))
            if group is None:
                group = groups[id(sib)] = n_in + len(steps)
                steps.append(["multi", prim, refs,
                              [[list(s), d.name] for s, d in sib.specs], where])
                keep.append(sib)
            slot[key] = n_in + len(steps)
            steps.append(["pick", group, pos])
        else:
            slot[key] = n_in + len(steps)
            steps.append(["node", prim, refs, list(node._shape), node._dtype.name, where])
    return steps, [slot[id(a)] for a in outs]


class FunctionExporter:
    """A context managing class for exporting multiple traces of the same function to a file.

    Make one with :func:`exporter`; each call traces the function for one more input
    signature and rewrites the file, so it is complete after every call."""

    def __init__(self, file: str, fun: Callable, shapeless: bool, metadata: str | None) -> None:
        self._file = file
        self._fun = fun
        self._table = _Table(shapeless)
        self._metadata = metadata
        self._described: list[dict] = []
        self._blobs: list[np.ndarray] = []
        self._constants: dict[int, tuple[array, int]] = {}  # id -> (array kept alive, blob)
        self._closed = False
        self._save()

    def __enter__(self) -> "FunctionExporter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting traces (the file is already written)."""
        self._closed = True
        self._fun = None
        self._constants.clear()

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self._closed:
            raise RuntimeError("[export_function] Attempting to write after exporting is "
                               "closed.")
        args_l, kwargs_d = _flat_inputs(args, kwargs, "[export_function]")
        if self._table.find(args_l, kwargs_d) is not None:
            raise RuntimeError("[export_function] Attempting to export a function twice with "
                               "the same signature is not allowed.")
        trace, described = _export_trace(self._fun, args_l, kwargs_d, self._constant,
                                         self._blobs)
        self._table.traces.append(trace)
        self._described.append(described)
        self._save()

    def _constant(self, a: array) -> int:
        entry = self._constants.get(id(a))
        if entry is None:
            entry = self._constants[id(a)] = (a, len(self._blobs))
            self._blobs.append(_host(a))
        return entry[1]

    def _save(self) -> None:
        try:
            fmt.write(self._file, {"shapeless": self._table.shapeless,
                                   "metadata": self._metadata,
                                   "functions": self._described}, self._blobs)
        except OSError:
            raise RuntimeError(f"[export_function] Failed to open {self._file}") from None


def _host(a: array) -> np.ndarray:
    data = a._numpy()
    return np.ascontiguousarray(data).reshape(a._shape)


def _export_trace(fun: Callable, args: list, kwargs: dict, constant: Callable[[array], int],
                  blobs: list) -> tuple[_Trace, dict]:
    """Trace ``fun`` for one signature: the replayable trace and its JSON description
    (constants and numpy parameters go to ``blobs``)."""
    leaves, outs, tape = _trace(fun, args, kwargs)
    steps, out_refs = _walk(leaves, outs, tape, constant, dev.resolve_stream(None))
    keys = sorted(kwargs)
    inputs = [(a._shape, a._dtype) for a in leaves]
    enc = fmt.Encoder(blobs)
    try:
        encoded = [[s[0], enc.primitive(s[1])] + s[2:] if s[0] != "pick" else s for s in steps]
    except fmt.ExportError as e:
        raise ValueError(f"[export_function] Unable to serialize {e}.") from None
    described = {"kwarg_keys": keys, "inputs": [[list(s), d.name] for s, d in inputs],
                 "steps": encoded, "outputs": out_refs}
    return _Trace(keys, inputs, steps, out_refs), described


def _np_to_dt(d: np.dtype) -> dt.Dtype:
    try:
        return dt.exact_dtype_from_numpy(d)
    except TypeError:
        raise ValueError(str(d)) from None


# ----------------------------------------------------------------------------------------------
# Public API


def _check_common(fun: Any, shapeless: Any, metadata: Any, sig: str, *invoked: Any) -> None:
    if not callable(fun):
        raise dt._incompatible_arguments(sig, *invoked)
    bad = {k: v for k, v in (("shapeless", shapeless), ("metadata", metadata))
           if not (isinstance(v, bool) if k == "shapeless" else v is None or isinstance(v, str))}
    if bad:  # nanobind lists keyword arguments after the positional types
        kw = ", ".join(f"{k}: {dt._type_name(v)}" for k, v in bad.items())
        raise TypeError(f"{dt._incompatible_arguments(sig, *invoked)}, kwargs = {{ {kw} }}")


def export_function(file_or_callback: str | Callable, fun: Callable, *args: Any,
                    shapeless: bool = False, metadata: str | None = None,
                    **kwargs: Any) -> None:
    """Export ``fun`` traced with example arrays ``*args, **kwargs`` (or one tuple of arrays
    and/or one dict of arrays) to a file, or describe its graph to a callback.

    The file is pycudamlx's own format (see docs/export.md); ``shapeless=True`` lets the
    imported function take inputs of other shapes (same ndim and dtypes)."""
    _check_common(fun, shapeless, metadata, _EXPORT_SIG, file_or_callback, fun, *args)
    if isinstance(file_or_callback, str):
        exporter(file_or_callback, fun, shapeless=shapeless, metadata=metadata)(*args, **kwargs)
        return
    if not callable(file_or_callback):
        raise RuntimeError("std::bad_cast (export_function: file_or_callback must be a str "
                           "path or a callable)")
    if metadata is not None:
        raise ValueError("[export_function] The metadata argument is only supported when "
                         "exporting to a file, not when using a callback.")
    args_l, kwargs_d = _flat_inputs(args, kwargs, "[export_function]")
    _describe(file_or_callback, fun, args_l, kwargs_d)


def exporter(file: str, fun: Callable, *extra: Any, shapeless: bool = False,
             metadata: str | None = None) -> FunctionExporter:
    """A FunctionExporter: call it (or use it as a context manager) to add one trace per input
    signature of ``fun`` to ``file``. ``shapeless`` and ``metadata`` are keyword-only."""
    if not isinstance(file, str) or extra:
        raise dt._incompatible_arguments(_EXPORTER_SIG, file, fun, *extra)
    _check_common(fun, shapeless, metadata, _EXPORTER_SIG, file, fun)
    return FunctionExporter(file, fun, shapeless, metadata)


class ImportedFunction:
    """A function read from a file: call it with arrays as ``*args, **kwargs`` (or one tuple
    and/or one dict of arrays); it returns a tuple of arrays."""

    def __init__(self, file: str) -> None:
        doc, blobs = fmt.read(file)
        try:
            self._table = _Table(bool(doc["shapeless"]))
            self._metadata = doc.get("metadata") or ""
            dec = fmt.Decoder(blobs)
            self._blobs = blobs
            self._constants: dict[int, array] = {}
            self._steps_shapes: list = []
            for f in doc["functions"]:
                inputs = [(tuple(s), dt._DTYPES_BY_NAME[d]) for s, d in f["inputs"]]
                steps = []
                for s in f["steps"]:
                    if s[0] == "node":
                        steps.append(("node", dec.value(s[1]), s[2], tuple(s[3]),
                                      dt._DTYPES_BY_NAME[s[4]], s[5]))
                    elif s[0] == "multi":
                        steps.append(("multi", dec.value(s[1]), s[2],
                                      tuple((tuple(sh), dt._DTYPES_BY_NAME[d]) for sh, d in s[3]),
                                      s[4]))
                    elif s[0] == "pick":
                        steps.append(("pick", int(s[1]), int(s[2])))
                    else:
                        raise fmt.FormatError(f"a step of kind {s[0]!r}")
                self._table.traces.append(_Trace(list(f["kwarg_keys"]), inputs, steps,
                                                 f["outputs"]))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise RuntimeError(f"[import_function] {file} is damaged ({e}).") from None

    def _constant(self, k: int) -> array:
        a = self._constants.get(k)
        if a is None:
            data = self._blobs[k]
            a = self._constants[k] = from_data(data, _np_to_dt(data.dtype))
        return a

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        args_l, kwargs_d = _flat_inputs(args, kwargs, "[import_function::call]")
        trace = self._table.find(args_l, kwargs_d)
        if trace is None:
            msg = ["[import_function::call] No imported function found which matches the "
                   "given positional and keyword arguments. Possible functions include:\n",
                   self._table.describe(),
                   f"\nCalled with {len(args_l)} positional inputs and {len(kwargs_d)} "
                   "keyword inputs:\n"]
            for i, a in enumerate(args_l):
                msg.append(f"  {i + 1}: {_shape_text(a._shape)} {a._dtype.name}\n")
            for k in sorted(kwargs_d):
                a = kwargs_d[k]
                msg.append(f'  "{k}": {_shape_text(a._shape)} {a._dtype.name}\n')
            raise ValueError("".join(msg))
        given = args_l + [kwargs_d[k] for k in sorted(kwargs_d)]
        return self._replay(trace, given)

    def _replay(self, trace: _Trace, given: list) -> tuple:
        values: list = list(given)
        default = dev.resolve_stream(None)
        # Shapes: the recorded ones, unless a shapeless call changed an input's shape.
        changed = self._table.shapeless and any(
            a._shape != s for a, (s, _) in zip(given, trace.inputs))

        def get(r: Any) -> array:
            if type(r) is int:
                return values[r]
            return self._constant(r[1])

        for step in trace.steps:
            kind = step[0]
            if kind == "node":
                _, prim, refs, shape, dtype, where = step
                ins = tuple(get(r) for r in refs)
                if changed:
                    ins = self._rebroadcast_addend(prim, ins, refs, trace, get)
                    shape = _infer_shape(prim, ins, shape, self, trace, refs)
                values.append(make(prim, ins, shape, dtype, _stream(where, default)))
            elif kind == "multi":
                _, prim, refs, specs, where = step
                ins = tuple(get(r) for r in refs)
                if changed:
                    _check_unchanged(prim, ins, refs, self, trace)
                values.append(make_multi(prim, ins, specs, _stream(where, default)))
            else:
                values.append(values[step[1]][step[2]])
        # A constant returned as is gets a fresh node: an in-place update of the result
        # (``out += 1``) must not reach the stored constant used by later calls.
        return tuple(values[r] if type(r) is int else _fresh(self._constant(r[1]), default)
                     for r in trace.outputs)

    def _rebroadcast_addend(self, prim: Any, ins: tuple, refs: list, trace: _Trace,
                            get: Callable) -> tuple:
        """``addmm``'s addend is its broadcast to the exported output shape (nn.Linear's bias):
        at new shapes, broadcast the view's source again instead."""
        if type(prim).__name__ != "Matmul" or len(ins) != 3 or type(refs[2]) is not int:
            return ins
        a, b, c = ins
        if len(a._shape) < 2 or len(b._shape) < 2:
            return ins
        out = tuple(np.broadcast_shapes(a._shape[:-2], b._shape[:-2])) + (a._shape[-2],
                                                                          b._shape[-1])
        try:
            np.broadcast_shapes(c._shape, out)
            if tuple(np.broadcast_shapes(c._shape, out)) == out:
                return ins
        except ValueError:
            pass
        k = refs[2] - len(trace.inputs)
        step = trace.steps[k] if k >= 0 else None
        if step is None or step[0] != "node" or type(step[1]).__name__ != "View":
            return ins
        source = get(step[2][0])
        from .shape import broadcast_to

        return (a, b, broadcast_to(source, out, stream=c._stream))

    def _recorded_shape(self, trace: _Trace, ref: Any) -> tuple:
        if type(ref) is not int:
            return self._blobs[ref[1]].shape
        if ref < len(trace.inputs):
            return trace.inputs[ref][0]
        step = trace.steps[ref - len(trace.inputs)]
        if step[0] == "node":
            return step[3]
        group = trace.steps[step[1] - len(trace.inputs)]
        return group[3][step[2]][0]

    def __repr__(self) -> str:
        return f"<imported function: {len(self._table.traces)} traces>"


def _fresh(a: array, stream: Any) -> array:
    return make(_ALIAS, (a,), a._shape, a._dtype, stream)


def _stream(where: Any, default: Any) -> Any:
    if where is None:
        return default
    return dev.default_stream(dev.Device(getattr(dev.DeviceType, where[0]), int(where[1])))


def _infer_shape(prim: Any, ins: tuple, shape: tuple, fn: ImportedFunction, trace: _Trace,
                 refs: list) -> tuple:
    """The output shape of a step whose inputs may have new shapes (shapeless import)."""
    recorded = [tuple(fn._recorded_shape(trace, r)) for r in refs]
    out = _shape_rules.infer(prim, [a._shape for a in ins], recorded, shape)
    if out is None:
        _check_unchanged(prim, ins, refs, fn, trace)
        return shape
    return out


def _check_unchanged(prim: Any, ins: tuple, refs: list, fn: ImportedFunction, trace: _Trace
                     ) -> None:
    recorded = [tuple(fn._recorded_shape(trace, r)) for r in refs]
    if [a._shape for a in ins] != recorded:
        raise ValueError(
            f"[import_function::call] pycudamlx cannot run the operation '{prim.name}' of this "
            "shapeless function at shapes other than the exported ones (inputs "
            f"{', '.join(_shape_text(a._shape) for a in ins)}; exported with "
            f"{', '.join(_shape_text(s) for s in recorded)}). Export a trace for these shapes.")


def import_function(file: str, return_metadata: bool = False) -> Any:
    """The function exported to ``file`` (by pycudamlx), and its metadata string when
    ``return_metadata`` is True. Calls return a tuple of arrays."""
    if not isinstance(file, str) or not isinstance(return_metadata, bool):
        raise dt._incompatible_arguments(_IMPORT_SIG, file, *(
            (return_metadata,) if return_metadata is not False else ()))
    fn = ImportedFunction(file)
    return (fn, fn._metadata) if return_metadata else fn


# ----------------------------------------------------------------------------------------------
# Callback export: the graph described entry by entry, as MLX's callback form


def _names() -> Any:
    n = 0
    while True:
        k, s = n, ""
        while True:
            s = string.ascii_uppercase[k % 26] + s
            k = k // 26 - 1
            if k < 0:
                break
        yield s
        n += 1


def _describe(callback: Callable, fun: Callable, args: list, kwargs: dict) -> None:
    """Call ``callback`` with dicts: 'inputs', 'keyword_inputs', 'outputs', 'constants', then
    one 'primitive' per step (pycudamlx's primitive names and parameters)."""
    values: list = []

    def constant(a: array) -> int:
        values.append(a)
        return len(values) - 1

    leaves, outs, tape = _trace(fun, args, kwargs)
    steps, out_refs = _walk(leaves, outs, tape, constant, dev.resolve_stream(None))
    names = _names()
    ref_name: dict[Any, str] = {}

    def name(r: Any) -> str:
        key = r if type(r) is int else ("c", r[1])
        if key not in ref_name:
            ref_name[key] = next(names)
        return ref_name[key]

    npos = len(args)
    shapes: dict[Any, tuple] = {}
    for i, a in enumerate(leaves):
        shapes[i] = (a._shape, a._dtype)
    n_in = len(leaves)
    for j, s in enumerate(steps):
        if s[0] == "node":
            shapes[n_in + j] = (tuple(s[3]), dt._DTYPES_BY_NAME[s[4]])
        elif s[0] == "pick":
            spec = steps[s[1] - n_in][3][s[2]]
            shapes[n_in + j] = (tuple(spec[0]), dt._DTYPES_BY_NAME[spec[1]])

    def entry(r: Any) -> tuple:
        if type(r) is int:
            shape, dtype = shapes[r]
            return (name(r), shape, dtype)
        a = values[r[1]]
        return (name(r), a._shape, a._dtype)

    # Keys in MLX's order (payload first, then "type").
    callback({"inputs": [entry(i) for i in range(npos)], "type": "inputs"})
    callback({"keywords": [(k, name(npos + i)) for i, k in enumerate(sorted(kwargs))],
              "type": "keyword_inputs"})
    callback({"outputs": [entry(r) for r in out_refs], "type": "outputs"})
    callback({"constants": [(name(["c", k]), a) for k, a in enumerate(values)],
              "type": "constants"})
    for j, s in enumerate(steps):
        if s[0] == "pick":
            continue
        prim = s[1]
        params = {n: getattr(prim, n) for n in fmt._slot_names(type(prim))
                  if n not in ("name", "op", "_fn") and hasattr(prim, n)}
        if s[0] == "node":
            outputs = [entry(n_in + j)]
        else:
            outputs = [entry(n_in + k) for k, t in enumerate(steps)
                       if t[0] == "pick" and t[1] == n_in + j]
        callback({"arguments": [params[k] for k in sorted(params)], "outputs": outputs,
                  "inputs": [entry(r) for r in s[2]], "name": _label(prim),
                  "type": "primitive"})


