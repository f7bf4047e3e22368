"""Temporary: measure transfer options for issue 5 on the H200 (deleted after)."""
import ctypes
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import array as ga
from pycudamlx.backend.cuda import driver, elementwise, memory
from pycudamlx.backend.cuda import stream as st

GiB = 1 << 30
MiB = 1 << 20
dev = driver.get_device(0)
s = st.CudaStream(dev)
cu = driver.init()
print("bindings", driver.bindings_version(), "cma", dev.properties.concurrent_managed_access,
      "free", dev.memory_info())
N = int(float(sys.argv[1]) * GiB) if len(sys.argv) > 1 else 4 * GiB
n = N // 4
f32 = dt.float32


def t(label, fn, nbytes=N):
    t0 = time.perf_counter()
    fn()
    s.synchronize()
    dtm = time.perf_counter() - t0
    print(f"{label:<60} {dtm * 1e3:9.1f} ms {nbytes / dtm / 1e9:7.1f} GB/s", flush=True)
    return dtm


def gview(buf):
    return ga.GpuArray(buf, 0, (n,), (1,), f32)


# alignment of managed allocations
for size in (512, 4096, 1 * MiB, 2 * MiB, 4 * MiB, 6 * MiB, 64 * MiB):
    ptrs = [int(driver.call(cu.cuMemAllocManaged, size, 1)) for _ in range(4)]
    print("align", size, [p % (2 * MiB) for p in ptrs])
    for p in ptrs:
        cu.cuMemFree(p)

src = np.ones(n, np.float32)
src[::1000] = 3
A = memory.allocate(N, dev, memory.MANAGED)
B = memory.allocate(N, dev, memory.MANAGED)
B.prefetch(dev.index, s)
s.synchronize()
va = A.host_view(np.float32, (n,))
t("host write into fresh managed (first touch)", lambda: np.copyto(va, src))
t("kernel read A (fault path) -> B", lambda: elementwise.copy(gview(A), gview(B), s))
t("host write into device-resident managed (D->H faults)", lambda: np.copyto(va, src))
t("prefetch A to device", lambda: A.prefetch(dev.index, s))
t("kernel A->B resident", lambda: elementwise.copy(gview(A), gview(B), s))
np.copyto(va, src)
s.synchronize()


def auto():
    A.prefetch(dev.index, s)
    elementwise.copy(gview(A), gview(B), s)


t("prefetch + kernel (auto path)", auto)
t("prefetch of resident data", lambda: A.prefetch(dev.index, s))

# pinned HtoD
t0 = time.perf_counter()
hp = driver.call(cu.cuMemHostAlloc, N, 0)
print("cuMemHostAlloc 4 GiB ms", (time.perf_counter() - t0) * 1e3)
pinned = np.ctypeslib.as_array((ctypes.c_float * n).from_address(int(hp)))
np.copyto(pinned, src)
D = memory.allocate(N, dev, memory.DEVICE, s)
t("pinned cuMemcpyHtoD", lambda: driver.call(cu.cuMemcpyHtoDAsync, D.ptr, int(hp), N, s.handle))
t("pageable cuMemcpyHtoD to device mem", lambda: driver.call(cu.cuMemcpyHtoDAsync, D.ptr,
                                                            src.ctypes.data, N, s.handle))
t("pageable cuMemcpyHtoD to resident managed", lambda: driver.call(
    cu.cuMemcpyHtoDAsync, B.ptr, src.ctypes.data, N, s.handle))
t0 = time.perf_counter()
hp2 = driver.call(cu.cuMemHostAlloc, 64 * MiB, 0)
print("cuMemHostAlloc 64 MiB ms", (time.perf_counter() - t0) * 1e3)
cu.cuMemFreeHost(hp2)

# staged pipelines
CH = 64 * MiB
stage = [driver.call(cu.cuMemHostAlloc, CH, 0) for _ in range(4)]
stage_np = [np.ctypeslib.as_array((ctypes.c_uint8 * CH).from_address(int(p))) for p in stage]
pool = ThreadPoolExecutor(8)


def par_copy(dst, srcv, threads):
    if threads == 1:
        np.copyto(dst, srcv)
        return
    k = len(dst)
    step = -(-k // threads)
    list(pool.map(lambda i: np.copyto(dst[i:i + step], srcv[i:i + step]), range(0, k, step)))


def staged_h2d(dst_ptr, threads, nbuf=2):
    srcb = src.view(np.uint8)
    events = [None] * nbuf
    for i, off in enumerate(range(0, N, CH)):
        k = i % nbuf
        if events[k] is not None:
            events[k].synchronize()
        m = min(CH, N - off)
        par_copy(stage_np[k][:m], srcb[off:off + m], threads)
        driver.call(cu.cuMemcpyHtoDAsync, dst_ptr + off, int(stage[k]), m, s.handle)
        events[k] = s.record()


def staged_d2h(out, src_ptr, threads, nbuf=2):
    outb = out.view(np.uint8)
    events = [None] * nbuf
    chunks = list(range(0, N, CH))
    # issue first nbuf copies
    for i, off in enumerate(chunks):
        k = i % nbuf
        m = min(CH, N - off)
        if i >= nbuf:
            pass
        driver.call(cu.cuMemcpyDtoHAsync, int(stage[k]), src_ptr + off, m, s.handle)
        events[k] = s.record()
        if i >= nbuf - 1:
            j = i - (nbuf - 1)
            kj = j % nbuf
            events[kj].synchronize()
            offj = chunks[j]
            mj = min(CH, N - offj)
            par_copy(outb[offj:offj + mj], stage_np[kj][:mj], threads)
    for j in range(max(0, len(chunks) - nbuf + 1), len(chunks)):
        kj = j % nbuf
        events[kj].synchronize()
        offj = chunks[j]
        mj = min(CH, N - offj)
        par_copy(outb[offj:offj + mj], stage_np[kj][:mj], threads)


for th in (1, 4, 8):
    t(f"staged pinned H2D to device, {th} threads", lambda: staged_h2d(D.ptr, th))
t("staged pinned H2D 4 bufs 8 thr", lambda: staged_h2d(D.ptr, 8, 4))

# fresh managed uploads
C = memory.allocate(N, dev, memory.MANAGED)


def up_prefetch_then_copy():
    C.prefetch(dev.index, s)
    driver.call(cu.cuMemcpyHtoDAsync, C.ptr, src.ctypes.data, N, s.handle)


t("fresh managed: prefetch + pageable HtoD", up_prefetch_then_copy)
C.free()
memory.clear_cache()
C = memory.allocate(N, dev, memory.MANAGED)


def up_prefetch_staged():
    C.prefetch(dev.index, s)
    staged_h2d(C.ptr, 8)


t("fresh managed: prefetch + staged 8 thr", up_prefetch_staged)
C.free()
memory.clear_cache()
C = memory.allocate(N, dev, memory.MANAGED)
vc = C.host_view(np.float32, (n,))


def up_host_write():
    par_copy(vc, src, 8)
    C.prefetch(dev.index, s)


t("fresh managed: host write 8 thr + prefetch", up_host_write)
del vc
C.free()
memory.clear_cache()

# D2H. B is on the device (kernel wrote it)
def reset_B():
    B.prefetch(dev.index, s)
    elementwise.copy(gview(A), gview(B), s)
    s.synchronize()


reset_B()
vb = B.host_view(np.float32, (n,))
r = {}
t("D2H fault path: np.array(view)", lambda: r.setdefault("a", np.array(vb)))
assert np.array_equal(r.pop("a"), src)
reset_B()


def pf_copy():
    B.prefetch(memory.HOST, s)
    s.synchronize()
    r["a"] = np.array(vb)


t("D2H prefetch to cpu + np.array", pf_copy)
r.clear()
reset_B()


def pf_only():
    B.prefetch(memory.HOST, s)


t("D2H prefetch to cpu only", pf_only)
reset_B()


def dtoh():
    out = np.empty(n, np.float32)
    driver.call(cu.cuMemcpyDtoHAsync, out.ctypes.data, B.ptr, N, s.handle)
    s.synchronize()
    r["a"] = out


t("D2H cuMemcpyDtoH pageable into np.empty", dtoh)
assert np.array_equal(r.pop("a"), src)
reset_B()
t("D2H cuMemcpyDtoH pageable again (pages resident? )", dtoh)
r.clear()
for th in (1, 4, 8):
    reset_B()

    def st_d2h():
        out = np.empty(n, np.float32)
        staged_d2h(out, B.ptr, th)
        r["a"] = out

    t(f"D2H staged pinned into np.empty, {th} threads", st_d2h)
    assert np.array_equal(r.pop("a"), src)
reset_B()


def st_d2h4():
    out = np.empty(n, np.float32)
    staged_d2h(out, B.ptr, 8, 4)
    r["a"] = out


t("D2H staged 4 bufs 8 thr", st_d2h4)
r.clear()
reset_B()


def prefault_dtoh():
    out = np.empty(n, np.float32)
    par_copy(out, src, 8)  # touch pages in parallel (cost counted)
    driver.call(cu.cuMemcpyDtoHAsync, out.ctypes.data, B.ptr, N, s.handle)
    s.synchronize()


t("D2H parallel touch + DtoH pageable", prefault_dtoh)
reset_B()
t("fault path 2: np.array(view)", lambda: r.setdefault("a", np.array(vb)))
print("done", memory.stats)
