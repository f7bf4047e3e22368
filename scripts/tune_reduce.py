"""Variant timings for the sum and softmax kernels on a GPU (one run informs the launch choices).

Compiles experimental variants next to the shipped reduction kernels and times each, with the
shipped path and torch/CuPy, over back-to-back launches between CUDA events (bench.py's method):
  - sum of 2^28 float32: packs in flight per thread, block size, grid size, and whether a block
    reads one contiguous chunk or block-wide windows spread over the array;
  - softmax over rows of 8,192 and 1,024 float32: elements kept in registers per thread (so the
    block size), one block per row or one warp per row, one row per block or a resident grid.
Every variant's result is checked against numpy before its time is reported.

    python scripts/tune_reduce.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycudamlx.backend.cuda import array as ga, compiler, driver  # noqa: E402
from pycudamlx.backend.cuda import registry, stream as st  # noqa: E402

log = logging.getLogger("tune")

EXTRA = r"""
// Partial sums of n float32 (n a multiple of 4), one per block. CHUNK: block b reads the b-th
// contiguous chunk; else block-wide windows of UN * blockDim packs, grid-strided.
template <int UN, bool CHUNK>
__global__ void x_sum(const float* __restrict__ x, float* __restrict__ part, int64_t n) {
  const float4* p = reinterpret_cast<const float4*>(x);
  const int64_t np = n / 4, nt = blockDim.x;
  float acc[UN];
#pragma unroll
  for (int u = 0; u < UN; ++u) acc[u] = 0.0f;
  int64_t begin, end, step;
  if (CHUNK) {
    int64_t chunk = (np + gridDim.x - 1) / gridDim.x;
    begin = (int64_t)blockIdx.x * chunk;
    end = begin + chunk < np ? begin + chunk : np;
    begin += threadIdx.x;
    step = UN * nt;
  } else {
    begin = (int64_t)blockIdx.x * nt * UN + threadIdx.x;
    end = np;
    step = (int64_t)gridDim.x * nt * UN;
  }
  int64_t i = begin;
  for (; i + (UN - 1) * nt < end; i += step) {
    float4 v[UN];
#pragma unroll
    for (int u = 0; u < UN; ++u) v[u] = p[i + u * nt];
#pragma unroll
    for (int u = 0; u < UN; ++u) acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (int u = 0; u < UN; ++u) {  // the remainder of the last window
    int64_t j = i + u * nt;
    if (j < end) acc[0] += (p[j].x + p[j].y) + (p[j].z + p[j].w);
  }
  float s = 0.0f;
#pragma unroll
  for (int u = 0; u < UN; ++u) s += acc[u];
  s = block_allreduce<RED_SUM>(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// Softmax of rows of len = blockDim.x * PK * 4 float32, PK packs per thread in registers;
// blocks walk rows grid-strided.
template <int PK>
__global__ void x_softmax_block(const float* __restrict__ x, float* __restrict__ out,
                                int64_t rows, int64_t len) {
  const int nt = blockDim.x, tid = threadIdx.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* p = reinterpret_cast<const float4*>(x + row * len);
    float4* q = reinterpret_cast<float4*>(out + row * len);
    float4 v[PK];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      v[k] = p[k * nt + tid];
      m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = block_allreduce<RED_MAX>(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      v[k].x = pcm_exp(v[k].x - m); v[k].y = pcm_exp(v[k].y - m);
      v[k].z = pcm_exp(v[k].z - m); v[k].w = pcm_exp(v[k].w - m);
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    s = block_allreduce<RED_SUM>(s);
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      float4 o;
      o.x = v[k].x / s; o.y = v[k].y / s; o.z = v[k].z / s; o.w = v[k].w / s;
      q[k * nt + tid] = o;
    }
  }
}

// One warp per row of len = 32 * PK * 4 float32; warps walk rows grid-strided.
template <int PK>
__global__ void x_softmax_warp(const float* __restrict__ x, float* __restrict__ out,
                               int64_t rows, int64_t len) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows;
       row += warps) {
    const float4* p = reinterpret_cast<const float4*>(x + row * len);
    float4* q = reinterpret_cast<float4*>(out + row * len);
    float4 v[PK];
    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      v[k] = p[k * 32 + lane];
      m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
    m = warp_reduce<RED_MAX>(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      v[k].x = pcm_exp(v[k].x - m); v[k].y = pcm_exp(v[k].y - m);
      v[k].z = pcm_exp(v[k].z - m); v[k].w = pcm_exp(v[k].w - m);
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    s = warp_reduce<RED_SUM>(s);
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      float4 o;
      o.x = v[k].x / s; o.y = v[k].y / s; o.z = v[k].z / s; o.w = v[k].w / s;
      q[k * 32 + lane] = o;
    }
  }
}
"""

SUM_VARIANTS = [(un, chunk) for un in (4, 8) for chunk in (True, False)]
SOFTMAX_BLOCK_PK = (2, 4, 8)
SOFTMAX_WARP_PK = (2, 4, 8)


def main() -> int:
    import bench  # its timing method, and the peers' timers (torch and CuPy own streams)

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = driver.get_device(0)
    s = st.default_stream(dev)
    sms = dev.properties.multiprocessors
    rng = np.random.default_rng(0)
    rows_out: list[tuple[str, float]] = []

    def timed(fn, reps: int = 20) -> float:
        """ms per launch, bench.py's method (back to back, one queued ahead, median of 3)."""
        return bench._pipelined_ms(fn, lambda e: e.record(s),
                                   lambda: (st.TimingEvent(dev), st.TimingEvent(dev)), reps)

    def report(label: str, tbs: float, ok: bool = True) -> None:
        rows_out.append((label + ("" if ok else " WRONG"), tbs))
        log.info("%-60s%8.2f", *rows_out[-1])

    exprs = [f"x_sum<{un}, {'true' if c else 'false'}>" for un, c in SUM_VARIANTS]
    exprs += [f"x_softmax_block<{pk}>" for pk in SOFTMAX_BLOCK_PK]
    exprs += [f"x_softmax_warp<{pk}>" for pk in SOFTMAX_WARP_PK]
    kernels = tuple(registry.KernelSpec(e, ("ptr", "ptr", "i64")) for e in exprs[:4]) + tuple(
        registry.KernelSpec(e, ("ptr", "ptr", "i64", "i64")) for e in exprs[4:])
    base = registry.scan_module("float32")
    spec = registry.ModuleSpec("tune.reduce", "tune", base.source + EXTRA, kernels, ("float32",))
    mod = compiler.load(spec, dev)

    import pycudamlx.core as mx

    peers = bench.load_impls(["torch", "cupy"])
    torch = peers["torch"].torch if "torch" in peers else None
    cupy = peers["cupy"].cp if "cupy" in peers else None

    # ---- sum of 2^28 float32 -----------------------------------------------------------------
    n = 1 << 28
    host = rng.standard_normal(n, dtype=np.float32)
    want = float(host.astype(np.float64).sum())
    x = ga.from_numpy(host, mx.float32, s)
    nbytes = n * 4
    xm = mx.array(host)
    mx.eval(xm)
    ms = timed(lambda: mx.eval(mx.sum(xm)))
    got = float(mx.sum(xm).item())
    report("sum shipped (mx.sum)", nbytes / ms / 1e9, abs(got - want) <= 1e-4 * np.abs(host).sum())
    if torch is not None:
        t = torch.from_numpy(host).cuda()
        ms = peers["torch"].time_gpu(lambda: t.sum(), 20)
        report("sum torch", nbytes / ms / 1e9)
        del t
    if cupy is not None:
        c = cupy.asarray(host)
        ms = peers["cupy"].time_gpu(lambda: c.sum(), 20)
        report("sum cupy", nbytes / ms / 1e9)
        del c
    part = ga.empty((sms * 64,), mx.float32, s)
    for idx, (un, chunk) in enumerate(SUM_VARIANTS):
        k = mod.kernel_list[idx]
        for block in (256, 512, 1024):
            for per_sm in (2048 // block, 2 * 2048 // block, 8 * 2048 // block):
                grid = min(sms * per_sm, sms * 64)
                ms = timed(lambda: k(grid, block, s, x.buffer.ptr, part.buffer.ptr, n))
                got = float(part.to_numpy(copy=True)[:grid].astype(np.float64).sum())
                ok = abs(got - want) <= 1e-4 * np.abs(host).sum()
                report(f"sum x un={un} {'chunk' if chunk else 'windows'} block={block} "
                       f"grid={per_sm}/SM", nbytes / ms / 1e9, ok)
    del x, xm, host

    # ---- softmax rows --------------------------------------------------------------------------
    for rows, length in ((8192, 8192), (65536, 1024)):
        host = rng.standard_normal((rows, length), dtype=np.float32)
        e = np.exp(host.astype(np.float64) - host.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        nbytes = 2 * host.nbytes
        xm = mx.array(host)
        mx.eval(xm)
        tag = f"softmax {rows}x{length}"
        ms = timed(lambda: mx.eval(mx.softmax(xm, -1)))
        got = np.array(mx.softmax(xm, -1))
        report(f"{tag} shipped", nbytes / ms / 1e9, np.allclose(got, want, rtol=1e-5, atol=1e-7))
        if torch is not None:
            t = torch.from_numpy(host).cuda()
            ms = peers["torch"].time_gpu(lambda: torch.softmax(t, -1), 20)
            report(f"{tag} torch", nbytes / ms / 1e9)
            del t
        x = ga.from_numpy(host, mx.float32, s)
        out = ga.empty((rows, length), mx.float32, s)

        def check() -> bool:
            got = out.to_numpy(copy=True)
            return bool(np.allclose(got, want, rtol=1e-5, atol=1e-7))

        for j, pk in enumerate(SOFTMAX_BLOCK_PK):
            block = length // (pk * 4)
            if block < 32 or block > 1024 or block % 32:
                continue
            k = mod.kernel_list[4 + j]
            for label, grid in (("grid=rows", rows), ("grid=4 waves", sms * 4 * (2048 // block))):
                grid = min(grid, rows)
                ms = timed(lambda: k(grid, block, s, x.buffer.ptr, out.buffer.ptr, rows, length))
                report(f"{tag} block/row pk={pk} block={block} {label}", nbytes / ms / 1e9,
                       check())
        for j, pk in enumerate(SOFTMAX_WARP_PK):
            if 32 * pk * 4 != length:
                continue
            k = mod.kernel_list[4 + len(SOFTMAX_BLOCK_PK) + j]
            for block in (128, 256):
                for label, grid in (("all rows", -(-rows // (block // 32))),
                                    ("4 waves", sms * 4 * (2048 // block))):
                    ms = timed(lambda: k(grid, block, s, x.buffer.ptr, out.buffer.ptr, rows,
                                         length))
                    report(f"{tag} warp/row pk={pk} block={block} {label}", nbytes / ms / 1e9,
                           check())
        del x, out, xm, host

    print(f"\n{'variant':<60}{'GB/s':>8}")
    for label, gbs in rows_out:
        print(f"{label:<60}{gbs:>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
