"""The sum of 2^28 float32 on a GPU, against CuPy and torch: which launch shape is fastest.

mx.sum (graph node, allocations, reduce_row split over blocks) is timed over the split block
size and waves of blocks (reduce._SPLIT_BLOCK, reduce._SPLIT_WAVES), with the row's last block
combining the partials (shipped) and with a second launch (reduce_partials) instead. Last, a
one-launch candidate kernel (x_sum_fused: UN 16-byte loads and accumulators per thread, the
last block adds the partials) over the same shapes. bench.py's timing method; every variant's
result is checked against numpy.

    python scripts/tune_sum.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycudamlx import dtypes as dt  # noqa: E402
from pycudamlx.backend.cuda import array as ga, compiler, driver, elementwise, reduce  # noqa: E402
from pycudamlx.backend.cuda import registry, stream as st  # noqa: E402

log = logging.getLogger("tune")

EXTRA = r"""
// One launch: block b sums its contiguous chunk of n float32 (n a multiple of 4, x 16-byte
// aligned) with UN float4 loads and accumulators per thread, writes part[b]; the last block
// to finish (a counter, left at 0 again) adds the partials in block order into *out.
template <int UN>
__global__ void __launch_bounds__(1024) x_sum_fused(const float* __restrict__ x, float* part,
                                                    float* __restrict__ out,
                                                    unsigned int* counter, int64_t n) {
  __shared__ float warp_sums[32];
  __shared__ bool last;
  const float4* p = reinterpret_cast<const float4*>(x);
  const int64_t np = n / 4, nt = blockDim.x;
  const int64_t chunk = (np + gridDim.x - 1) / gridDim.x;
  const int64_t begin = (int64_t)blockIdx.x * chunk;
  const int64_t end = begin + chunk < np ? begin + chunk : np;
  float acc[UN];
#pragma unroll
  for (int u = 0; u < UN; ++u) acc[u] = 0.0f;
  int64_t i = begin + threadIdx.x;
  for (; i + (UN - 1) * nt < end; i += UN * nt) {
    float4 v[UN];
#pragma unroll
    for (int u = 0; u < UN; ++u) v[u] = p[i + u * nt];
#pragma unroll
    for (int u = 0; u < UN; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < end; i += nt) {
    const float4 v = p[i];
    acc[0] += (v.x + v.y) + (v.z + v.w);
  }
  float a = 0.0f;
#pragma unroll
  for (int u = 0; u < UN; ++u) a += acc[u];
  for (int o = 16; o > 0; o >>= 1) a += __shfl_down_sync(0xffffffffu, a, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = a;
  __syncthreads();
  if (threadIdx.x < 32) {
    a = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) a += __shfl_down_sync(0xffffffffu, a, o);
    if (threadIdx.x == 0) {
      part[blockIdx.x] = a;
      __threadfence();
      last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  float s = 0.0f;
  for (int64_t b = threadIdx.x; b < gridDim.x; b += nt) s += ((volatile float*)part)[b];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += warp_sums[w];
    *out = t;
    *counter = 0u;
  }
}
"""
FUSED_UN = (2, 4, 8)


def main() -> int:
    import bench

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = driver.get_device(0)
    s = st.default_stream(dev)
    sms = dev.properties.multiprocessors
    n = 1 << 28
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    want = float(host.astype(np.float64).sum())
    tol = 1e-4 * float(np.abs(host).sum())
    nbytes = n * 4

    def timed(fn, reps: int = 20) -> float:
        return bench._pipelined_ms(fn, lambda e: e.record(s),
                                   lambda: (st.TimingEvent(dev), st.TimingEvent(dev)), reps)

    def report(label: str, ms: float, ok: bool = True) -> None:
        log.info("%-55s %6.3f TB/s%s", label, nbytes / ms / 1e9, "" if ok else " WRONG")

    import pycudamlx.core as mx
    xm = mx.array(host)
    mx.eval(xm)
    report("mx.sum (shipped pipeline)", timed(lambda: mx.eval(mx.sum(xm))),
           abs(mx.sum(xm).item() - want) <= tol)
    peers = bench.load_impls(["torch", "cupy"])
    if "cupy" in peers:
        cp = peers["cupy"].cp
        c = cp.asarray(host)
        report("cupy", peers["cupy"].time_gpu(lambda: c.sum(), 20))
        del c
    if "torch" in peers:
        torch = peers["torch"].torch
        t = torch.from_numpy(host).cuda()
        report("torch", peers["torch"].time_gpu(lambda: t.sum(), 20))
        del t

    for last_block in (True, False):
        for block in (256, 512):
            for waves in (1, 2, 4, 8):
                reduce._LAST_BLOCK_FINISHES, reduce._SPLIT_BLOCK = last_block, block
                reduce._SPLIT_WAVES = waves
                reduce._plans.clear()
                ok = abs(mx.sum(xm).item() - want) <= tol
                how = "last block" if last_block else "2 launches"
                report(f"mx.sum {how} block={block} waves={waves}",
                       timed(lambda: mx.eval(mx.sum(xm))), ok)
    reduce._plans.clear()

    x = ga.from_numpy(host, dt.float32, s)
    out = ga.empty((1,), dt.float32, s)
    mod = compiler.module_for(registry.reduce_module, ("float32",), dev)
    xp, op = x.buffer.ptr + x.offset, out.buffer.ptr + out.offset
    exprs = [f"x_sum_fused<{un}>" for un in FUSED_UN]
    spec = registry.ModuleSpec("tune.sum", "tune", mod.spec.source + EXTRA, tuple(
        registry.KernelSpec(e, ("ptr", "ptr", "ptr", "ptr", "i64")) for e in exprs),
        ("float32",))
    fused = compiler.load(spec, dev)
    counter = ga.empty((1,), dt.uint32, s)
    elementwise.fill(counter, b"\0\0\0\0", s)
    cp_ = counter.buffer.ptr + counter.offset
    for un, expr in zip(FUSED_UN, exprs):
        k = fused[expr]
        for block in (256, 512, 1024):
            resident = reduce._resident_blocks(k, block)
            for waves in (1, 4):
                grid = sms * resident * waves
                part = ga.empty((grid,), dt.float32, s)
                pp = part.buffer.ptr + part.offset

                def one() -> None:
                    k(grid, block, s, xp, pp, op, cp_, n)

                one()
                ok = abs(float(out.to_numpy(copy=True)[0]) - want) <= tol
                report(f"fused un={un} block={block} waves={waves} ({resident}/SM)", timed(one),
                       ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
