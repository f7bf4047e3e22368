"""Automatic elementwise fusion at evaluation: a scheduling decision, not an op.

Before an evaluation runs its nodes, maximal groups of elementwise nodes (unary, binary,
``astype``, ``where``; broadcasts and scalar operands included) on one GPU stream, of one shape,
whose intermediates nobody else holds, become one node: the group's last node takes a ``Fused``
primitive over the group's external inputs, and the other members are dropped unevaluated.

"Nobody else holds" is decided by reference counts: a member is referenced by the evaluation's
schedule and by its consumers' input tuples, all inside the group, and by nothing else — no
user variable, no pending node outside this evaluation, no trace. Anything more (a user keeps
an intermediate, a lazy node built on it waits for a later eval) and it stays a node of its
own, materialised, and the group reads it as an input. Gradient traces (``tape``) turn fusion
off: they record every node.

A group's kernel is built on first sight in the background (backend/cuda/fused.py); until it is
ready the group runs unfused, so no evaluation waits on NVRTC. ``PYCUDAMLX_FUSION=0`` turns
fusion off (bench rows with and without it); without NVRTC nothing is fused.
"""

from __future__ import annotations

import heapq
import sys
from typing import Any

import numpy as np

from .. import _env, dtypes as dt
from .node import register
from .primitives.elementwise import AsType, Binary, Unary, Where
from .primitive import cuda_modules
from .primitives.fused import Fused

_FUSABLE = (Unary, Binary, AsType, Where)
_EXCLUDED = frozenset((dt.complex64, dt.float64))
#: References to a candidate member in the planning loop besides its consumers' input tuples:
#: the schedule list, the loop variable and getrefcount's own argument.
_BASE_REFS = 3
_getrefcount = sys.getrefcount

enabled = _env.flag_or_default("PYCUDAMLX_FUSION")
#: Tests of the planner fuse CPU nodes too (Fused's numpy body); never on in normal use.
on_cpu_for_tests = _env.flag_or_default("PYCUDAMLX_FUSE_CPU_FOR_TESTS")
_kernels_available: bool | None = None
_backend = cuda_modules("fused")


def _available() -> bool:
    global _kernels_available
    if _kernels_available is None:
        _kernels_available = _backend().available()
    return _kernels_available


def reset() -> None:
    """Re-read whether fused kernels can be built (after NVRTC was enabled or disabled)."""
    global _kernels_available
    _kernels_available = None


def _fusable(node: Any, exact: frozenset) -> bool:
    """An elementwise node whose fused result is exactly the unfused one (backend EXACT_OPS;
    no complex or float64 values: a float64 chain differed from the unfused one in a few
    elements on the H200, not yet explained)."""
    prim = node._prim
    t = type(prim)
    if t is Binary or t is Unary:
        return (prim.op.name in exact and node._inputs[0]._dtype not in _EXCLUDED
                and node._dtype not in _EXCLUDED)
    if t is AsType:
        return node._dtype not in _EXCLUDED and node._inputs[0]._dtype not in _EXCLUDED
    if t is Where:
        return node._dtype not in _EXCLUDED
    return False


def plan(order: list[Any]) -> int:
    """Rewrite fusable groups of ``order`` (a topological schedule) in place; returns the number
    of nodes folded away. Members other than a group's root become None in ``order``."""
    if not enabled:
        return 0
    groups = _groups(order)
    folded = 0
    for members in groups:
        if len(members) >= 2:
            folded += _fuse(order, members)
    return folded


def _groups(order: list[Any]) -> list[list[tuple[int, Any]]]:
    """Groups of (position, node), each root first, grown from the schedule's end backwards.

    A group grows from its root toward its inputs in decreasing schedule position, so every
    consumer of a candidate has been seen before the candidate: it joins when all of its
    consumers are members (``edges == uses``), nothing else holds it (reference count), and it
    shares the root's shape and stream. (A node whose consumers are all members of one group
    can be a candidate of no other group, so membership needs no check there.)"""
    types = _FUSABLE
    gpu_only = not on_cpu_for_tests
    exact = None
    uses: dict[int, int] = {}      # candidate id -> times it appears in pending input tuples
    where: dict[int, int] = {}     # candidate id -> position in the schedule
    ok: set[int] = set()           # ids of the nodes that may be fused
    for pos, node in enumerate(order):
        for inp in node._inputs:
            # Only candidates' uses matter, and a candidate comes before its consumers.
            j = id(inp)
            if j in ok:
                uses[j] += 1
        if (type(node._prim) in types and node._siblings is None
                and (node._stream.is_gpu or not gpu_only)):
            if exact is None:
                exact = _backend().EXACT_OPS
            if _fusable(node, exact):
                k = id(node)
                ok.add(k)
                where[k] = pos
                uses[k] = 0
    inp = node = None
    if len(ok) < 2 or (gpu_only and not _available()):
        return []
    backend = _backend()
    max_steps = backend.MAX_STEPS
    max_inputs = backend.MAX_INPUTS - 2  # room for pending inputs that stay outside
    getrefcount = _getrefcount
    base = _BASE_REFS
    assigned: set[int] = set()
    groups: list[list[tuple[int, Any]]] = []
    heappush, heappop = heapq.heappush, heapq.heappop
    ndarray = np.ndarray
    for start in range(len(order) - 1, -1, -1):
        root = order[start]
        key = id(root)
        if key not in ok or key in assigned:
            continue
        assigned.add(key)
        shape, stream = root._shape, root._stream
        members = [(start, root)]
        outside: set[int] = set()
        edges: dict[int, int] = {}
        heap: list[int] = []
        frontier = [root]
        while frontier:
            n = frontier.pop()
            for i in n._inputs:
                k = id(i)
                data = i._data
                if data is not None:
                    if type(data) is not ndarray or data.ndim:
                        outside.add(k)
                    continue
                if k not in ok:  # pending but not fusable: materialised on its own
                    continue
                e = edges.get(k)
                if e is None:
                    edges[k] = 1
                    heappush(heap, -where[k])
                else:
                    edges[k] = e + 1
            i = n = None
            while heap and not frontier and len(members) < max_steps and len(
                    outside) < max_inputs:
                pos = -heappop(heap)
                cand = order[pos]
                k = id(cand)
                u = uses[k]
                if (edges[k] == u and cand._shape == shape
                        and cand._stream is stream and getrefcount(cand) == u + base):
                    assigned.add(k)
                    members.append((pos, cand))
                    frontier.append(cand)
                cand = None
        root = None
        if len(members) > 1:
            groups.append(members)
    return groups


def _fuse(order: list[Any], members: list[tuple[int, Any]]) -> int:
    """Give the group's root a Fused primitive over its external inputs, or leave the group
    alone (its kernel is still being built, or it has too many inputs)."""
    nodes = [n for _, n in reversed(members)]  # topological order, the root last
    root = nodes[-1]
    index = {id(n): i for i, n in enumerate(nodes)}
    externals: list[Any] = []
    ext_index: dict[Any, int] = {}
    for n in nodes:
        for inp in n._inputs:
            k = id(inp)
            if k in index or k in ext_index:
                continue
            data = inp._data
            if type(data) is np.ndarray and data.ndim == 0:
                # Python scalars are a new 0-d array per op: equal values share one input slot
                vk = (inp._dtype, data.tobytes())
                slot = ext_index.get(vk)
                if slot is None:
                    slot = ext_index[vk] = len(externals)
                    externals.append(inp)
                ext_index[k] = slot
                continue
            ext_index[k] = len(externals)
            externals.append(inp)
    backend = _backend()
    if len(externals) > backend.MAX_INPUTS:
        return 0
    nin = len(externals)
    steps = []
    heads = _heads
    for n in nodes:
        prim = n._prim
        head = heads.get(prim)
        if head is None:
            head = _head(prim)
        srcs = []
        for i in n._inputs:
            k = id(i)
            j = index.get(k)
            srcs.append(ext_index[k] if j is None else nin + j)
        steps.append((*head, *srcs, n._dtype.name))
    inputs = tuple((x._dtype.name, _size(x._shape) == 1) for x in externals)
    program = (inputs, tuple(steps))
    module = None
    if root._stream.is_gpu:
        from ..backend.cuda import driver

        device = driver.get_device(root._stream.device.index)
        module = backend.module(program, device)
        if module is None:
            return 0
    root._prim = Fused(program, tuple(n._prim for n in nodes), module)
    root._inputs = tuple(externals)
    register(root, root._inputs)  # in-place updates of an input must find the root
    for pos, _ in members[1:]:
        order[pos] = None
    return len(members) - 1


#: A step's leading fields per primitive object (the op functions share one per op).
_heads: dict[Any, tuple[str, str]] = {}


def _head(prim: Any) -> tuple[str, str]:
    t = type(prim)
    if t is Unary:
        head = ("unary", prim.op.name)
    elif t is Binary:
        head = ("binary", prim.op.name)
    elif t is AsType:
        head = ("astype", "")
    else:
        head = ("where", "")
    if len(_heads) < 1024:
        _heads[prim] = head
    return head


def _size(shape: tuple[int, ...]) -> int:
    n = 1
    for e in shape:
        n *= e
    return n
