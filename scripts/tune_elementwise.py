"""Variant timings for the elementwise kernels on a GPU (one run informs the launch choices).

Compiles experimental variants next to the shipped binary kernels and times each with CUDA
events on the same inputs: the contiguous kernel with 1, 2 or 4 packs in flight per thread and
several grid sizes, a row-broadcast kernel (a + row), and tiled transposes (a.T + b). Every
variant's result is checked against numpy before its time is reported.

    python scripts/tune_elementwise.py
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from pycudamlx import dtypes as dt  # noqa: E402
from pycudamlx.backend.cuda import array as ga, compiler, driver, elementwise as ew  # noqa: E402
from pycudamlx.backend.cuda import registry, stream as st  # noqa: E402

log = logging.getLogger("tune")

EXTRA = r"""
template <typename T, typename U, int N, int UN>
__global__ void x_contig(const T* __restrict__ a, const T* __restrict__ b, U* __restrict__ out,
                         int64_t n) {
  const int64_t packs = n / N;
  const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(a);
  const Pack<T, N>* pb = reinterpret_cast<const Pack<T, N>*>(b);
  Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out);
  const int64_t step = (int64_t)gridDim.x * blockDim.x * UN;
  for (int64_t base = (int64_t)blockIdx.x * blockDim.x * UN + threadIdx.x; base < packs;
       base += step) {
    Pack<T, N> va[UN], vb[UN];
#pragma unroll
    for (int u = 0; u < UN; ++u) {
      int64_t p = base + (int64_t)u * blockDim.x;
      if (p < packs) { va[u] = pa[p]; vb[u] = pb[p]; }
    }
#pragma unroll
    for (int u = 0; u < UN; ++u) {
      int64_t p = base + (int64_t)u * blockDim.x;
      if (p < packs) {
        Pack<U, N> vo;
#pragma unroll
        for (int k = 0; k < N; ++k) vo.v[k] = apply_binary<T, U>(va[u].v[k], vb[u].v[k]);
        po[p] = vo;
      }
    }
  }
}

// out[r, :] = a[r, :] + b[:] with a row-major, b one row; blockIdx.y walks rows.
template <typename T, typename U, int N>
__global__ void x_rows(const T* __restrict__ a, const T* __restrict__ b, U* __restrict__ out,
                       int64_t rows, int64_t cols) {
  const int64_t cp = cols / N;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const Pack<T, N>* pa = reinterpret_cast<const Pack<T, N>*>(a + r * cols);
    const Pack<T, N>* pb = reinterpret_cast<const Pack<T, N>*>(b);
    Pack<U, N>* po = reinterpret_cast<Pack<U, N>*>(out + r * cols);
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < cp;
         p += (int64_t)gridDim.x * blockDim.x) {
      Pack<T, N> va = pa[p], vb = pb[p];
      Pack<U, N> vo;
#pragma unroll
      for (int k = 0; k < N; ++k) vo.v[k] = apply_binary<T, U>(va.v[k], vb.v[k]);
      po[p] = vo;
    }
  }
}

// out[i, j] = a[j, i] + b[i, j], TILE x TILE tiles through shared memory, blockDim (32, 8).
template <typename T, typename U, int TILE>
__global__ void x_transpose(const T* __restrict__ a, const T* __restrict__ b, U* __restrict__ out,
                            int64_t rows, int64_t cols) {
  __shared__ T tile[TILE][TILE + 1];
  const int64_t i0 = (int64_t)blockIdx.y * TILE, j0 = (int64_t)blockIdx.x * TILE;
  // read a[j0 + r, i0 + c] (contiguous along c) into tile[c][r]
  for (int r = threadIdx.y; r < TILE; r += 8)
    for (int c = threadIdx.x; c < TILE; c += 32) {
      int64_t j = j0 + r, i = i0 + c;
      if (j < cols && i < rows) tile[c][r] = a[j * rows + i];
    }
  __syncthreads();
  for (int r = threadIdx.y; r < TILE; r += 8)
    for (int c = threadIdx.x; c < TILE; c += 32) {
      int64_t i = i0 + r, j = j0 + c;
      if (i < rows && j < cols) out[i * cols + j] = apply_binary<T, U>(tile[r][c], b[i * cols + j]);
    }
}
"""


def main() -> int:
    import bench  # its timing method

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    dev = driver.get_device(0)
    s = st.default_stream(dev)
    sms = dev.properties.multiprocessors
    rng = np.random.default_rng(0)
    rows_out = []

    def timed(fn, reps=10) -> float:
        """ms per launch, bench.py's method (back to back, one queued ahead, median of 3)."""
        return bench._pipelined_ms(fn, lambda e: e.record(s),
                                   lambda: (st.TimingEvent(dev), st.TimingEvent(dev)), reps)

    copy_ms = None
    for dname, n_vec in (("float32", 4), ("float16", 8), ("bfloat16", 8)):
        d = dt.by_name[dname]
        base = registry.binary_module("add", dname)
        exprs = []
        for un in (1, 2, 4):
            exprs.append(f"x_contig<{d.c_type}, {d.c_type}, {n_vec}, {un}>")
        exprs += [f"x_rows<{d.c_type}, {d.c_type}, {n_vec}>",
                  f"x_transpose<{d.c_type}, {d.c_type}, 32>",
                  f"x_transpose<{d.c_type}, {d.c_type}, 64>"]
        sig = ("ptr", "ptr", "ptr", "i64")
        kernels = tuple(registry.KernelSpec(e, sig) for e in exprs[:3]) + tuple(
            registry.KernelSpec(e, sig + ("i64",)) for e in exprs[3:])
        spec = registry.ModuleSpec(f"tune.{dname}", "tune", base.source + EXTRA, kernels, (dname,))
        mod = compiler.load(spec, dev)
        n = 1 << 26
        host_a = rng.standard_normal(n, dtype=np.float32).astype(d.np_dtype)
        host_b = rng.standard_normal(n, dtype=np.float32).astype(d.np_dtype)
        a, b = ga.from_numpy(host_a, d, s), ga.from_numpy(host_b, d, s)
        out = ga.empty((n,), d, s)
        want = (host_a.astype(np.float32) + host_b.astype(np.float32)).astype(d.np_dtype)
        nbytes = 3 * n * d.size
        if copy_ms is None:
            cu = driver.init()
            copy_ms = timed(lambda: driver.call(cu.cuMemcpyDtoDAsync, out.buffer.ptr,
                                                a.buffer.ptr, n * 4, s.handle))
            rows_out.append(("copy cuMemcpyDtoD 256 MiB", 2 * n * 4 / copy_ms / 1e9))
        copy_tbs = 2 * n * 4 / copy_ms / 1e9

        def check(label: str, ms: float, expected: np.ndarray) -> None:
            expected = np.ascontiguousarray(expected)
            got = out.to_numpy(copy=True).reshape(expected.shape)
            ok = np.array_equal(got.view(np.uint8), expected.view(np.uint8))
            tbs = nbytes / ms / 1e9
            rows_out.append((f"{dname} {label}{'' if ok else ' WRONG'}", tbs, tbs / copy_tbs))
            log.info("%-52s%8.2f%8.2f", *rows_out[-1])

        ms = timed(lambda: ew.binary("add", a, b, out, s))
        check("shipped contiguous", ms, want)
        for idx, un in enumerate((1, 2, 4)):
            k = mod.kernel_list[idx]
            for waves in (8, 32, 0):
                blocks = -(-(n // n_vec) // (256 * un))
                grid = min(blocks, sms * waves) if waves else blocks
                ms = timed(lambda: k(grid, 256, s, a.buffer.ptr, b.buffer.ptr, out.buffer.ptr, n))
                check(f"contig unroll={un} grid={'all' if not waves else f'{waves}/SM'}", ms, want)
        # a + row
        r = c = 8192
        a2 = a.view(0, (r, c), (c, 1))
        row = b.view(0, (c,), (1,))
        want_rows = (host_a.reshape(r, c).astype(np.float32)
                     + host_b[:c].astype(np.float32)).astype(d.np_dtype)
        out2 = out.view(0, (r, c), (c, 1))
        ms = timed(lambda: ew.binary("add", a2, row.view(0, (r, c), (0, 1)), out2, s))
        nbytes_saved = nbytes
        nbytes = (2 * r * c + c) * d.size
        check("a + row shipped", ms, want_rows)
        k = mod.kernel_list[3]
        for gx, gy in ((c // n_vec // 256, min(r, 65535)), (1, min(r, 65535)),
                       (c // n_vec // 256, sms * 8)):
            ms = timed(lambda: k((gx, gy, 1), 256, s, a.buffer.ptr, b.buffer.ptr,
                                 out.buffer.ptr, r, c))
            check(f"a + row x_rows grid=({gx},{gy})", ms, want_rows)
        # a.T + b
        nbytes = 3 * r * c * d.size
        at = a.view(0, (r, c), (1, c))
        bb = b.view(0, (r, c), (c, 1))
        want_t = (host_a.reshape(r, c).T.astype(np.float32)
                  + host_b.reshape(r, c).astype(np.float32)).astype(d.np_dtype)
        ms = timed(lambda: ew.binary("add", at, bb, out2, s))
        check("a.T + b shipped", ms, want_t)
        for idx, tile in ((4, 32), (5, 64)):
            k = mod.kernel_list[idx]
            ms = timed(lambda: k((c // tile, r // tile, 1), (32, 8, 1), s, a.buffer.ptr,
                                 b.buffer.ptr, out.buffer.ptr, r, c))
            check(f"a.T + b tiled {tile}", ms, want_t)
        nbytes = nbytes_saved
        del a, b, out, host_a, host_b
    print(f"\n{'variant':<52}{'TB/s':>8}{'/copy':>8}")
    for row in rows_out:
        print(f"{row[0]:<52}{row[1]:>8.2f}" + (f"{row[2]:>8.2f}" if len(row) > 2 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
