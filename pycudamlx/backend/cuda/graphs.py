"""CUDA graphs: record a stream's work once, replay it with one ``cuGraphLaunch``.

``mx.compile`` replays a traced function as a graph (graph/primitives/compiled_graph.py decides
when). A graph bakes in every address its kernels touch, so it owns them:

* **A private pool** (``GraphPool``): while a capture runs, every allocation comes from it
  (memory.capture_pool), in device memory. Blocks freed during the capture are reused inside it
  (the graph runs its nodes in stream order), and no block returns to the shared pool while the
  graph lives, so nothing else is ever given an address a replay writes. The pool counts as
  active memory until the graph is released.
* **Static inputs and outputs** (``Replay``): each call copies its inputs into the graph's input
  blocks and the outputs into fresh blocks of the shared pool. A caller's arrays therefore
  never alias the graph's memory, and an output a caller still holds is never overwritten by
  the next replay. By default each copy is one device-to-device driver call per array. With
  ``COPY_KERNELS`` (PYCUDAMLX_GRAPH_COPY_KERNELS=1) they are the graph's own first and last
  kernels (kernels/copy_many.cu) reading a table of (destination, source, bytes) in the
  graph's memory: a call writes this call's addresses into the table (one upload through the
  pinned ring) and launches the graph, two driver calls however many arrays pass through (a
  decode step carrying 32 KV arrays: 68 copies). An input of another layout (transposed,
  broadcast) is copied in by a kernel of its own before the launch.
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

import numpy as np

from ... import _env
from .. import memstats
from . import compiler, driver, memory, registry
from .array import GpuArray, contiguous_strides, empty
from .stream import CudaStream

log = logging.getLogger(__name__)

#: Graph I/O through copy_many kernels (see the module docstring); off until a GPU run has
#: passed with it (its first run found the table-block reuse fixed below, and no run since).
COPY_KERNELS = _env.flag_or_default("PYCUDAMLX_GRAPH_COPY_KERNELS")

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

    def allocate(self, nbytes: int, device: driver.CudaDevice, fresh: bool = False
                 ) -> GraphBuffer:
        """A block of the pool; ``fresh``: never one freed during the capture (a block the
        captured kernels write at some point of the replay, which the host cannot own)."""
        if device is not self.device:
            raise CaptureUnsupported("an allocation on another device")
        size = memory._block_size(nbytes)
        free = None if fresh else self.free.get(size)
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


#: Bytes one copy_many block moves per pass of its grid-stride loop, in 16-byte vectors: the
#: grid's x extent is the largest array over this, at most _COPY_MAX_BLOCKS blocks an entry.
_COPY_BYTES_PER_BLOCK = 256 * 16 * 4
_COPY_MAX_BLOCKS = 1024
#: Bytes of one table entry (destination, source, bytes: three uint64).
_ENTRY = 24


class _CopyTable:
    """copy_many's table for one direction: the block in the graph's memory the captured kernel
    reads, the host copy a call fills, and the launch geometry fixed at capture."""

    __slots__ = ("block", "host", "grid")

    def __init__(self, pool: GraphPool, device: driver.CudaDevice, sizes: Sequence[int]) -> None:
        # fresh: a block an earlier captured kernel wrote would be overwritten by the replay
        # after the host uploaded this call's table into it
        self.block = pool.allocate(max(1, len(sizes)) * _ENTRY, device, fresh=True)
        self.host = np.zeros((len(sizes), 3), np.uint64)
        self.host[:, 2] = sizes
        largest = max(sizes, default=0)
        self.grid = (max(1, min(_COPY_MAX_BLOCKS, -(-largest // _COPY_BYTES_PER_BLOCK))),
                     len(sizes), 1)

    def launch(self, kernel: Any, stream: CudaStream) -> None:
        if self.grid[1]:
            kernel(self.grid, 256, stream, self.block.ptr)

    def upload(self, stream: CudaStream) -> None:
        """The host table into the block, in ``stream``'s order (ring slots of at most
        SMALL_UPLOAD_MAX bytes: thousands of arrays take several)."""
        raw = self.host.reshape(-1).view(np.uint8)
        step = memory.SMALL_UPLOAD_MAX
        for at in range(0, raw.shape[0], step):
            memory._upload_ring.copy(self.block.ptr + at, raw[at:at + step], stream)


def _address(g: GpuArray) -> int:
    return g.buffer.ptr + g.offset * g.dtype.size


class Replay:
    """One captured graph with its static input and output blocks; ``run`` replays it.

    ``build(inputs)`` enqueues the work on ``stream`` for GpuArray inputs and returns the output
    GpuArrays; it runs once, under capture, on the static inputs (with COPY_KERNELS between the
    copy_many kernels that bring the inputs in and take the outputs out). ``prepare()`` runs
    first, outside the capture (it puts the trace's constants on the GPU)."""

    __slots__ = ("stream", "pool", "static_in", "static_out", "graph_exec", "tables",
                 "out_by_kernel", "__weakref__")

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
            if not COPY_KERNELS:
                self.tables = None
                self.graph_exec, outs = capture(stream, pool,
                                                lambda: build(list(self.static_in)))
                self._captured(outs, stream)
                return
            kernel = compiler.module_for(registry.copy_many_module, (), device).kernel_list[0]
            table_in = _CopyTable(pool, device, [g.size * g.dtype.size for g in self.static_in])
            table_in.host[:, 0] = [g.buffer.ptr for g in self.static_in]
            self.tables = [table_in]

            def body() -> list[GpuArray]:
                table_in.launch(kernel, stream)
                outs = build(list(self.static_in))
                # outputs of another layout (a transposed view) are copied out after the launch
                self.out_by_kernel = [o.is_contiguous() for o in outs]
                sizes = [o.size * o.dtype.size if k else 0
                         for o, k in zip(outs, self.out_by_kernel)]
                table_out = _CopyTable(pool, device, sizes)
                table_out.host[:, 1] = [_address(o) for o in outs]
                table_out.launch(kernel, stream)
                self.tables.append(table_out)
                return outs

            self.graph_exec, outs = capture(stream, pool, body)
        except BaseException:
            self.static_in = []
            pool.release(stream)
            raise
        self._captured(outs, stream)

    def _captured(self, outs: Sequence[GpuArray], stream: CudaStream) -> None:
        self.static_out = list(outs)
        weakref.finalize(self, _release, self.graph_exec, self.pool, stream)
        log.debug("captured a CUDA graph: %d inputs, %d outputs, %s of private memory",
                  len(self.static_in), len(self.static_out),
                  memory.format_bytes(self.pool.nbytes))

    def run(self, inputs: Sequence[GpuArray]) -> list[GpuArray]:
        """Copy ``inputs`` in, launch, return fresh copies of the outputs (through the copy
        tables with COPY_KERNELS, else one driver copy per array)."""
        stream = self.stream
        if self.tables is None:
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
        table_in, table_out = self.tables
        rows = table_in.host
        for i, (src, dst) in enumerate(zip(inputs, self.static_in)):
            if src.is_contiguous():
                rows[i, 1] = _address(src)
                rows[i, 2] = dst.size * dst.dtype.size
            else:
                rows[i, 2] = 0
                _copy(dst, src, stream)
        results = []
        rows = table_out.host
        index = stream.device.index
        for j, o in enumerate(self.static_out):
            out = empty(tuple(o.shape), o.dtype, stream)
            rows[j, 0] = out.buffer.ptr
            results.append(out)
        table_in.upload(stream)
        table_out.upload(stream)
        driver.launch_graph(self.graph_exec, stream.handle)
        for o, out, by_kernel in zip(self.static_out, results, self.out_by_kernel):
            o.buffer.last_write = stream
            if not by_kernel:
                _copy(out, o, stream)
            buf = out.buffer
            buf.last_write = stream
            if buf.location != index:
                buf.set_location(index)
        return results
