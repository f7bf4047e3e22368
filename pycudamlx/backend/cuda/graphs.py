"""CUDA graphs: record a stream's work once, replay it with one ``cuGraphLaunch``.

``mx.compile`` replays a traced function as a graph (graph/primitives/compiled_graph.py decides
when). A graph bakes in every address its kernels touch, so it owns them:

* **A private pool** (``GraphPool``): while a capture runs, every allocation comes from it
  (memory.capture_pool), in device memory. Blocks freed during the capture are reused inside it
  (the graph runs its nodes in stream order), and no block returns to the shared pool while the
  graph lives, so nothing else is ever given an address a replay writes. The pool counts as
  active memory until the graph is released.
* **Static inputs and outputs** (``Replay``): each call copies its inputs into the graph's input
  blocks, launches, and copies the outputs into fresh blocks of the shared pool. A caller's
  arrays therefore never alias the graph's memory, and an output a caller still holds is never
  overwritten by the next replay. The copies cost one driver call per array (device to device).
* **What cannot be captured** raises ``memory.CaptureUnsupported`` inside the capture (host
  reads or writes of GPU memory, a host sync, cuFFT, a library's first use on a stream); the
  capture is discarded (nothing ran: captured work executes only at launch) and the caller runs
  the work as plain launches instead.

Capture uses relaxed mode (the private pool may call the driver's allocator meanwhile) on our
own non-blocking stream (capture cannot start on the legacy default stream).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable, Sequence

from .. import memstats
from . import driver, memory
from .array import GpuArray, contiguous_strides, empty
from .stream import CudaStream

log = logging.getLogger(__name__)

CaptureUnsupported = memory.CaptureUnsupported
stats = memstats.stats


class GraphBuffer(memory.Buffer):
    """A block of a graph's private pool: freeing it gives it back to that pool."""

    __slots__ = ("pool",)

    def __init__(self, ptr: int, nbytes: int, device: driver.CudaDevice, capacity: int,
                 pool: "GraphPool") -> None:
        super().__init__(ptr, nbytes, memory.DEVICE, device, capacity)
        self.pool = pool

    def set_location(self, location: int) -> None:  # device memory: always on its device
        pass

    def free(self) -> None:
        ptr = self.ptr
        if ptr:
            self.ptr = 0
            self.pool.put(ptr, self.capacity)


class GraphPool:
    """The device memory one graph bakes in (see the module docstring)."""

    __slots__ = ("device", "free", "blocks", "closed", "last_use", "__weakref__")

    def __init__(self, device: driver.CudaDevice) -> None:
        self.device = device
        self.free: dict[int, list[int]] = {}  # block size -> free block addresses
        self.blocks: list[tuple[int, int]] = []  # every (address, size) the pool took
        self.closed = False
        self.last_use: CudaStream | None = None

    @property
    def nbytes(self) -> int:
        return sum(size for _, size in self.blocks)

    def allocate(self, nbytes: int, device: driver.CudaDevice) -> GraphBuffer:
        if device is not self.device:
            raise CaptureUnsupported("an allocation on another device")
        size = memory._block_size(nbytes)
        free = self.free.get(size)
        if free:
            ptr = free.pop()
        else:
            ptr = memory._new_block(nbytes, size, device, memory.DEVICE)
            self.blocks.append((ptr, size))
            memory._count(size)
        return GraphBuffer(ptr, nbytes, device, size, self)

    def put(self, ptr: int, size: int) -> None:
        if self.closed:  # released already: the block goes to the shared pool
            index = self.device.index
            memory._pool.put(ptr, size, memory.DEVICE, index, self.last_use, index)
        else:
            self.free.setdefault(size, []).append(ptr)

    def release(self, last_use: CudaStream | None) -> None:
        """Give the blocks back to the shared pool, ordered after ``last_use``'s queued work
        (a launch may still be running); a block still held follows when its buffer goes."""
        if self.closed:
            return
        self.closed = True
        self.last_use = last_use
        stats.active_bytes -= self.nbytes
        index = self.device.index
        for size, ptrs in self.free.items():
            for ptr in ptrs:
                memory._pool.put(ptr, size, memory.DEVICE, index, last_use, index)
        self.free.clear()


def capture(stream: CudaStream, pool: GraphPool, body: Callable[[], Any]) -> tuple[Any, Any]:
    """Run ``body`` with ``stream``'s work recorded into a graph (not run) and its allocations
    from ``pool``; return (the executable graph, what ``body`` returned). Raises
    CaptureUnsupported when the body did something a graph cannot hold; nothing ran then."""
    if memory.capture_pool is not None:  # one capture at a time (evaluation holds its lock)
        raise CaptureUnsupported("a capture while another is in progress")
    driver.begin_capture(stream.handle)
    memory.capture_thread = threading.get_ident()
    memory.capture_pool = pool
    try:
        result = body()
    except BaseException as exc:
        memory.capture_pool = memory.capture_thread = None
        code, graph = driver.end_capture(stream.handle)
        if code == 0:
            driver.destroy_graph(graph)
        if isinstance(exc, CaptureUnsupported) or not isinstance(exc, Exception):
            raise
        raise CaptureUnsupported(f"{type(exc).__name__}: {exc}") from exc
    memory.capture_pool = memory.capture_thread = None
    code, graph = driver.end_capture(stream.handle)
    if code:
        name, _ = driver._error_strings(code)
        raise CaptureUnsupported(f"the capture was invalidated ({name})")
    try:
        graph_exec = driver.instantiate_graph(graph)
    except driver.CudaError as exc:
        raise CaptureUnsupported(f"cuGraphInstantiate failed ({exc.name})") from exc
    finally:
        driver.destroy_graph(graph)
    return graph_exec, result


def _copy(dst: GpuArray, src: GpuArray, stream: CudaStream) -> None:
    """``dst`` (contiguous) = ``src`` (any layout), on ``stream``."""
    n = dst.size * dst.dtype.size
    if not n:
        return
    if src.is_contiguous():
        isz = src.dtype.size
        memory.copy_device_to_device(dst.buffer, src.buffer, n, stream,
                                     dst.offset * isz, src.offset * isz)
    else:
        from . import elementwise

        elementwise.copy(src, dst, stream)


def _release(graph_exec: Any, pool: GraphPool, stream: CudaStream) -> None:
    driver.destroy_graph(graph_exec, executable=True)
    pool.release(stream)


class Replay:
    """One captured graph with its static input and output blocks; ``run`` replays it.

    ``build(inputs)`` enqueues the work on ``stream`` for GpuArray inputs and returns the output
    GpuArrays; it runs once, under capture, on the static inputs. ``prepare()`` runs first,
    outside the capture (it puts the trace's constants on the GPU)."""

    __slots__ = ("stream", "pool", "static_in", "static_out", "graph_exec", "__weakref__")

    def __init__(self, stream: CudaStream, inputs: Sequence[GpuArray],
                 build: Callable[[list[GpuArray]], list[GpuArray]],
                 prepare: Callable[[], None] | None = None) -> None:
        device = stream.device
        self.stream = stream
        pool = self.pool = GraphPool(device)
        try:
            if prepare is not None:
                prepare()
            self.static_in = [GpuArray(pool.allocate(g.size * g.dtype.size, device), 0,
                                       tuple(g.shape), contiguous_strides(tuple(g.shape)),
                                       g.dtype) for g in inputs]
            self.graph_exec, outs = capture(stream, pool, lambda: build(list(self.static_in)))
        except BaseException:
            self.static_in = []
            pool.release(stream)
            raise
        self.static_out = list(outs)
        weakref.finalize(self, _release, self.graph_exec, pool, stream)
        log.debug("captured a CUDA graph: %d inputs, %d outputs, %s of private memory",
                  len(self.static_in), len(self.static_out), memory.format_bytes(pool.nbytes))

    def run(self, inputs: Sequence[GpuArray]) -> list[GpuArray]:
        """Copy ``inputs`` in, launch, and return fresh copies of the outputs."""
        stream = self.stream
        for src, dst in zip(inputs, self.static_in):
            _copy(dst, src, stream)
        driver.launch_graph(self.graph_exec, stream.handle)
        results = []
        for o in self.static_out:
            o.buffer.last_write = stream
            out = empty(tuple(o.shape), o.dtype, stream)
            _copy(out, o, stream)
            results.append(out)
        return results

