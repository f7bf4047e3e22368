"""Evaluation of the lazy graph: an iterative topological walk, each node evaluated once.

Nodes are the arrays themselves (see core/array.py): an unevaluated array holds ``_prim``,
``_inputs`` and ``_stream``; once evaluated it holds ``_data`` (a numpy array for the CPU, a
GpuArray for the GPU) and drops its inputs, so intermediate buffers free by reference counting
as soon as their last consumer ran. The walk keeps no references to finished nodes.
"""

from __future__ import annotations

import gc
import sys
import threading
from typing import Any, Iterable

import numpy as np

from .. import _env
from ..backend.memstats import track_host
from . import fusion
from .primitive import StrictGpuError, cuda_modules

_lock = threading.RLock()
_gc_isenabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable

#: While a gradient trace runs (pycudamlx.autodiff), a dict that keeps, for every node evaluated
#: meanwhile, what evaluation drops: id -> (node, primitive, inputs, siblings). A function under
#: ``mx.grad`` may evaluate (``.item()``, printing, ``mx.eval``) and its graph must survive that.
tape: dict | None = None


#: backend.cuda's modules, imported on first GPU use (importing never touches CUDA): the
#: GpuArray module, memory (residency decisions off the hot path) and the constant cache
#: (small host values written by the GPU in stream order).
_gpu = cuda_modules("array")
_memory = cuda_modules("memory")
_constants = cuda_modules("constants")


#: Host arrays of these sizes go to the GPU through the constant cache (no host sync).
_CONSTANT_BYTES = frozenset((1, 2, 4, 8))


def to_numpy(a: Any) -> np.ndarray:
    """The evaluated data of ``a`` as numpy, to read (a zero-copy view of managed memory where
    that leaves the pages where they are; small reads from the GPU are copies)."""
    data = a._data
    if isinstance(data, np.ndarray):
        return data
    return data.to_numpy(view=False)


def to_gpu(a: Any, cuda_stream: Any) -> Any:
    """The evaluated data of ``a`` as a GpuArray on ``cuda_stream``'s device (uploads once)."""
    data = a._data
    if isinstance(data, np.ndarray):
        if data.nbytes in _CONSTANT_BYTES:
            # A Python scalar, a key, a one-element array: written by the GPU in stream order
            # and cached by value; the array keeps its host data (no sync, no page migration).
            return _constants().upload(data, a._dtype, cuda_stream)
        g = _gpu().from_numpy(data, a._dtype, cuda_stream)
        a._data = g  # managed memory serves the host too; keep one copy
        return g
    if data.buffer.device is not cuda_stream.device:
        host = data.to_numpy()
        g = _gpu().from_numpy(np.ascontiguousarray(host), a._dtype, cuda_stream)
        return g
    buf = data.buffer
    writer = buf.last_write
    if writer is not None and writer is not cuda_stream:  # written on another stream
        _memory().order_after_write(buf, cuda_stream)
    if buf.location != cuda_stream.device.index:
        # Pages on the host (an upload, a host view handed out) or unknown: prefetch them to
        # this device before the kernel (large blocks), instead of page faults. Resident data
        # (the common case) costs this one comparison.
        _memory().before_kernel(buf, cuda_stream)
    return data


_ndarray = np.ndarray


def _host_result(r: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A CPU body's result as the node's numpy array (its dtype and shape), counted in the
    memory statistics as MLX counts CPU buffers."""
    try:  # the slot, not the np_dtype property (~50 ns more on every CPU op)
        np_dtype = dtype._np_dtype
    except AttributeError:  # bfloat16 before ml_dtypes is imported
        np_dtype = dtype.np_dtype
    if type(r) is not _ndarray:
        r = np.asarray(r)
    if r.dtype != np_dtype:
        r = r.astype(np_dtype)
    if r.shape != shape:
        r = r.reshape(shape)
    track_host(r)
    return r


_getrefcount = sys.getrefcount


def _donatable(inputs: tuple, gpu_inputs: list, cuda_stream: Any) -> bool:
    """Whether the node's first input buffer may become its result: nothing but this node can
    see the old value (MLX's ``is_donatable``), decided by reference counts.

    The input node is held only by this node's input tuple (no user variable, no other pending
    consumer), its GpuArray only by that node and ``gpu_inputs`` (no array sharing the data),
    the buffer only by that GpuArray (no other view of it alive); the buffer never left the
    library (no numpy or DLPack view of it), no other stream used it last, and no gradient trace
    or CUDA-graph capture is recording (both keep old values or replay fixed buffers)."""
    if tape is not None or _memory().capture_pool is not None:
        return False
    # Counted with no local names bound to them: one reference each from the holder named
    # above, plus gpu_inputs' for the GpuArray, plus getrefcount's argument.
    if (_getrefcount(inputs[0]) != 2 or _getrefcount(gpu_inputs[0]) != 3
            or _getrefcount(gpu_inputs[0].buffer) != 2):
        return False
    buf = gpu_inputs[0].buffer
    return not buf._exported and (buf.last_use is None or buf.last_use is cuda_stream)


def _run(node: Any) -> None:
    prim = node._prim
    inputs = node._inputs
    stream = node._stream
    sib = node._siblings
    if sib is None and not stream.is_gpu:
        # One output on the CPU (nearly every CPU node): the general path below without its
        # tuples, loops and zips, about a fifth of a small CPU op's evaluation.
        shape, dtype = node._shape, node._dtype
        r = _host_result(prim.eval_cpu([d if type(d := i._data) is _ndarray else to_numpy(i)
                                        for i in inputs], ((shape, dtype),))[0], shape, dtype)
        if tape is not None:
            tape[id(node)] = (node, prim, inputs, None)
        node._data = r
        node._prim = None
        node._inputs = ()
        return
    if sib is None:
        outs = ((node._shape, node._dtype),)
        targets = (node,)
    else:
        targets = tuple(ref() for ref in sib.refs)
        outs = sib.specs
    if stream.is_gpu:
        cuda_stream = stream.cuda_stream()
        cuda_stream.device.activate()  # this thread may not have the context current yet
        if prim.gpu_kernel:
            gpu_inputs = [to_gpu(i, cuda_stream) for i in inputs]
            results = None
            if prim.donates_first and _donatable(inputs, gpu_inputs, cuda_stream):
                results = prim.eval_gpu_donated(gpu_inputs, outs, cuda_stream)
            if results is None:
                results = prim.eval_gpu(gpu_inputs, outs, cuda_stream)
            for g in gpu_inputs:
                g.buffer.last_use = cuda_stream
        else:
            if _env.STRICT_GPU:
                raise StrictGpuError(
                    f"{prim.name} has no GPU kernel and would run on the host "
                    "(PYCUDAMLX_STRICT_GPU=1)")
            with np.errstate(all="ignore"):
                host = prim.eval_cpu([to_numpy(i) for i in inputs], outs)
            results = [_gpu().from_numpy(np.asarray(r, dtype=spec[1].np_dtype).reshape(spec[0]),
                                         spec[1], cuda_stream) for r, spec in zip(host, outs)]
    else:
        host = prim.eval_cpu([to_numpy(i) for i in inputs], outs)
        results = [_host_result(r, shape, dtype) for r, (shape, dtype) in zip(host, outs)]
    if tape is not None:
        for t in targets:
            if t is not None:
                tape[id(t)] = (t, prim, inputs, sib)
    for t, r in zip(targets, results):
        if t is not None:
            t._data = r
            t._prim = None
            t._inputs = ()
            t._siblings = None


def _schedule(stack: list[Any]) -> list[Any]:
    """The unevaluated nodes reachable from ``stack``, each after all of its inputs.

    An iterative post-order walk (a chain of 10^5 nodes needs no recursion): a node is pushed,
    on its first pop marked and pushed again above its pending inputs, and emitted on its second
    pop. A stale duplicate of a node always lies below the copy that expanded it, so ``done``
    keeps it from being emitted twice."""
    order: list[Any] = []
    emit = order.append
    seen: set[int] = set()
    mark = seen.add
    done: set[int] = set()
    push = stack.append
    pop = stack.pop
    while stack:
        node = pop()
        key = id(node)
        if key in seen:
            if key not in done:
                done.add(key)
                emit(node)
            continue
        if node._data is not None:
            continue
        mark(key)
        push(node)
        sib = node._siblings
        if sib is not None:
            # One output stands for its group (_run evaluates them all): a compiled step's
            # ~335 outputs would each expand the same ~337 inputs here and in graph/fusion.py.
            for r in sib.refs:
                t = r()
                if t is not None and t is not node:
                    k = id(t)
                    mark(k)
                    done.add(k)
            t = None
        inputs = node._inputs
        # The first input is expanded first, so a node's other inputs come right before it in
        # the schedule (``y = y * c + d`` keeps its side branches next to their consumer, where
        # graph/fusion.py groups them).
        for j in range(len(inputs) - 1, -1, -1):
            inp = inputs[j]
            if inp._data is None and id(inp) not in seen:
                push(inp)
        inp = None
    return order


def evaluate(roots: Iterable[Any]) -> None:
    """Evaluate every unevaluated array reachable from ``roots``, inputs first."""
    stack = [r for r in roots if r._data is None]
    if not stack:
        return
    if len(stack) == 1:  # the common case: one node whose inputs are all evaluated
        node = stack[0]
        for inp in node._inputs:
            if inp._data is None:
                break
        else:
            with _lock:
                if node._data is None:
                    if node._stream.is_gpu:
                        _run(node)
                    else:
                        with np.errstate(all="ignore"):  # numpy bodies rely on it
                            _run(node)
            return
        inp = node = None  # graph/fusion.py counts references: hold none here
    # The cyclic garbage collector is paused for the walk: its allocations (schedule, planner
    # sets, results) would trigger collections that traverse every live lazy node, about half
    # of a long chain's evaluation time; the walk makes no cycles, and refcounting frees the
    # intermediates as it goes. numpy's error state is set once for the whole walk (numpy
    # bodies rely on it; entering it costs about a microsecond, too much to pay per node).
    collecting = _gc_isenabled()
    if collecting:
        _gc_disable()
    try:
        with _lock, np.errstate(all="ignore"):
            order = _schedule(stack)
            del stack
            if tape is None and len(order) > 1:
                fusion.plan(order)  # elementwise groups become one node each (graph/fusion.py)
            for i in range(len(order)):
                node = order[i]
                order[i] = None  # let intermediates go once their consumers ran
                if node is not None and node._data is None:
                    _run(node)
                del node
    finally:
        if collecting:
            _gc_enable()
