"""A compiled trace replayed as one CUDA graph (``mx.compile``; core/_compile_replay.py).

One node stands for the whole trace: its inputs are a call's leaves (arguments, captured
``inputs``, fresh random keys), its outputs the trace's array results. The first evaluation on
the GPU captures the trace into a CUDA graph (backend/cuda/graphs.py); every later one copies its
inputs in and replays the graph with one launch. Before capturing it waits for the fused
kernels the warm-up call asked for, so the graph holds them. When a capture is refused (work a graph cannot
hold: a host read, a host primitive, cuFFT, ...), the trace runs as plain launches for the rest
of the recording's life, and a debug log line says why.

At most MAX_GRAPHS graphs live at once (each holds its private memory); beyond that the least
recently used is released, and its recording captures again when next called.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from typing import Any, Callable, Sequence

from .. import primitive as _p

log = logging.getLogger(__name__)

_graphs = _p.cuda_modules("graphs")
_fused = _p.cuda_modules("fused")

MAX_GRAPHS = 64
#: id -> weak reference of the primitives holding a captured graph, least recently used first.
_live: "OrderedDict[int, weakref.ref]" = OrderedDict()


def _forget(key: int) -> None:
    _live.pop(key, None)


def release_all() -> int:
    """Release every captured graph (tests; ``mx.clear_cache`` leaves them). Returns how many."""
    n = 0
    while _live:
        _, ref = _live.popitem(last=False)
        prim = ref()
        if prim is not None and prim.replay is not None:
            prim.replay = None
            n += 1
    return n


class CompiledGraph(_p.Primitive):
    """The node of a graph-replayed compiled call (see the module docstring).

    ``build(inputs)`` enqueues the trace for GpuArray inputs and returns its output GpuArrays;
    ``prepare()`` puts the trace's constants on the GPU before a capture."""

    __slots__ = ("build", "prepare", "label", "replay", "refused", "__weakref__")
    name = "CompiledGraph"
    gpu_kernel = True

    def __init__(self, build: Callable[[list], list], prepare: Callable[[], None],
                 label: str) -> None:
        self.build = build
        self.prepare = prepare
        self.label = label
        self.replay: Any = None
        self.refused: str | None = None  # why this trace runs as plain launches

    def eval_cpu(self, inputs: Sequence[Any], outs: Sequence[_p.OutSpec]) -> list:
        raise RuntimeError("a CompiledGraph node is built for GPU streams only")

    def eval_gpu(self, inputs: Sequence[Any], outs: Sequence[_p.OutSpec], stream: Any
                 ) -> list:
        replay = self.replay
        key = id(self)
        if replay is None:
            if self.refused is not None:
                return self.build(list(inputs))
            graphs = _graphs()
            # The warm-up call saw the trace's fusion groups first and started their builds in
            # the background: wait for them once, so the graph holds the fused kernels (a
            # graph captured meanwhile would keep the unfused ones for its whole life).
            _fused().wait()
            try:
                replay = graphs.Replay(stream, inputs, self.build, self.prepare)
            except graphs.CaptureUnsupported as exc:
                self.refused = str(exc)
                log.debug("mx.compile: %s runs as plain launches, not as a CUDA graph: %s",
                          self.label, exc)
                return self.build(list(inputs))
            self.replay = replay
            _live[key] = weakref.ref(self, lambda _, key=key: _forget(key))
            while len(_live) > MAX_GRAPHS:
                _, ref = _live.popitem(last=False)
                old = ref()
                if old is not None:
                    old.replay = None
        elif _live.get(key) is not None:
            _live.move_to_end(key)
        return replay.run(inputs)
