"""random.cu's kernels compiled for the host (g++ with small shims for the CUDA intrinsics) and
run single-threaded: their bits equal the numpy primitives' (so the GPU's equal MLX's) for the
raw bits layout (widths 1/2/4, odd sizes, strided keys), the fused uniform (float32, float16,
bfloat16) and randint, the argmax, the bitonic argsort driven by the launcher's pass schedule, and
the inverse CDF. Runs without a GPU; skips where no C++ compiler is installed."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest

from pycudamlx import dtypes as dt
from pycudamlx.backend.cuda import registry
from pycudamlx.graph.primitives import random as rp

_PRELUDE = r"""
#include <cstring>
#include <cstdint>
#include <cmath>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __shared__ static
#define __align__(n) alignas(n)
struct Dim3 { long long x, y, z; };
static Dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};
static inline void __syncthreads() {}
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline float __uint2float_rn(unsigned u) { return (float)u; }
static inline float erfinvf(float x) { return x; }  // not checked here
static inline unsigned short f_to_h(float f) { _Float16 h = (_Float16)f; unsigned short u;
  memcpy(&u, &h, 2); return u; }
static inline float h_to_f(unsigned short u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
"""

_EXPORTS = r"""
extern "C" {
void h_bits(const uint32_t* k, int64_t s, uint8_t* o, int64_t nb) { random_bits(k, s, o, nb); }
#define UNI(N, T) void h_uni_##N(const uint32_t* k, int64_t s, T* o, int64_t n, float lo, \
    float r, float up, int a) { random_uniform<T>(k, s, o, n, lo, r, up, a); }
UNI(float32, float) UNI(float16, __half) UNI(bfloat16, __nv_bfloat16)
#define RINT(N, T) void h_rint_##N(const uint32_t* k, int64_t s, T* o, int64_t n, float lo, \
    float r, float up, int a, int64_t h1, int64_t l) { \
    random_randint<T>(k, s, o, n, lo, r, up, a, h1, l); }
RINT(int8, int8_t) RINT(int32, int32_t) RINT(int64, int64_t) RINT(uint8, uint8_t)
RINT(uint16, uint16_t) RINT(uint64, uint64_t)
void h_argmax(const float* x, uint32_t* o, int64_t a, int64_t k, int64_t i) {
  argmax_axis<float>(x, o, a, k, i); }
void h_binit(const uint32_t* b, uint64_t* k, int64_t n, int64_t p) { bitonic_init(b, k, n, p); }
void h_bstep(uint64_t* k, int64_t p, int64_t j, int64_t kk) { bitonic_step(k, p, j, kk); }
void h_blocal(uint64_t* k, int64_t p, int64_t kk, int64_t jmax, int64_t blocks) {
  for (long long b = 0; b < blocks; ++b) { blockIdx.x = b; bitonic_local(k, p, kk, jmax); }
  blockIdx.x = 0; }
void h_bextract(const uint64_t* k, uint32_t* o, int64_t n) { bitonic_extract(k, o, n); }
void h_bern(const uint32_t* k, int64_t s, bool* o, int64_t n, double t, int d) {
  random_bernoulli(k, s, o, n, t, d); }
#define NORM(N, T) void h_norm_##N(const uint32_t* k, int64_t s, T* o, int64_t n, float lo, \
    float r, float up, double ap, double loc, int hl) { \
    random_normal<T>(k, s, o, n, lo, r, up, ap, loc, hl); }
NORM(float32, float) NORM(float16, __half) NORM(bfloat16, __nv_bfloat16) NORM(float64, double)
void h_ccdf(const float* v, float* c, int64_t n) { categorical_cdf(v, c, n); }
void h_csearch(const float* c, const float* u, uint32_t* o, int64_t n, int64_t m) {
  categorical_search(c, u, o, n, m); }
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler for the host build of random.cu")
    common = registry.read_source("common.cuh")
    for t in ("int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
              "uint64_t"):
        common = re.sub(rf"typedef [a-z ]+ {t};", "", common)
    common = re.sub(r"PCM_DEVICE float half_to_float\(__half h\) \{.*?\n\}",
                    "PCM_DEVICE float half_to_float(__half h) { return h_to_f(h.bits); }",
                    common, flags=re.S)
    common = re.sub(r"PCM_DEVICE __half float_to_half\(float f\) \{.*?\n\}",
                    "PCM_DEVICE __half float_to_half(float f) { __half h; h.bits = f_to_h(f); "
                    "return h; }", common, flags=re.S)
    kernels = registry.read_source("random.cu").replace(
        "extern __shared__ uint64_t tile[];", "static uint64_t tile[1 << 12];")
    d = tmp_path_factory.mktemp("random_host")
    src, so = d / "random_host.cpp", d / "random_host.so"
    src.write_text(_PRELUDE + common + kernels + _EXPORTS)
    res = subprocess.run([cxx, "-O1", "-std=c++17", "-ffp-contract=off", "-fPIC", "-shared",
                          str(src), "-o", str(so)], capture_output=True, text=True, timeout=120)
    if res.returncode:
        if "_Float16" in res.stderr:
            pytest.skip("the host compiler has no _Float16")
        raise AssertionError(res.stderr[-4000:])
    return ctypes.CDLL(str(so))


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


I64, F32, I32 = ctypes.c_int64, ctypes.c_float, ctypes.c_int
KEYS = [(0, 0), (0, 7), (123456789, 987654321), (0xFFFFFFFF, 1)]


def _key(k0: int, k1: int, stride: int) -> np.ndarray:
    a = np.zeros(2 * stride, np.uint32)
    a[0], a[stride] = k0, k1
    return a


@pytest.mark.parametrize("k0,k1", KEYS)
@pytest.mark.parametrize("stride", [1, 3])
def test_bits_layout(lib, k0, k1, stride):
    ka = _key(k0, k1, stride)
    for width in (1, 2, 4):
        for n in (0, 1, 2, 3, 4, 5, 7, 9, 33, 1001):
            nb = n * width
            out = np.zeros(nb + 8, np.uint8)
            lib.h_bits(_p(ka), I64(stride), _p(out), I64(nb))
            ref = rp.bits_numpy(np.array([k0, k1], np.uint32), (n,), width).view(np.uint8)
            np.testing.assert_array_equal(out[:nb], ref)
            assert not out[nb:].any(), "wrote past the end"


@pytest.mark.parametrize("name,npd", [("float32", np.float32), ("float16", np.float16),
                                      ("bfloat16", ml_dtypes.bfloat16)])
def test_fused_uniform(lib, name, npd):
    fn = getattr(lib, f"h_uni_{name}")
    view = np.uint32 if name == "float32" else np.uint16
    for k0, k1 in KEYS:
        ka = _key(k0, k1, 2)
        for n in (0, 1, 2, 3, 5, 1001):
            for lo, r in ((0.0, 1.0), (-3.0, 8.5), (0.25, 0.5)):
                lo_d = float(np.array(lo, np.float32).astype(npd))
                r_d = float(np.array(r, np.float32).astype(npd))
                out = np.zeros(max(n, 1), npd)
                fn(_p(ka), I64(2), _p(out), I64(n), F32(lo_d), F32(r_d),
                   F32(float(rp.UPPER[name])), I32(0 if (lo_d, r_d) == (0.0, 1.0) else 1))
                ref = rp.RandomUniform(lo_d, r_d).eval_cpu(
                    [np.array([k0, k1], np.uint32)], [((n,), dt.by_name[name])])[0]
                np.testing.assert_array_equal(out[:n].view(view), ref.view(view))


@pytest.mark.parametrize("name", ["int8", "int32", "int64", "uint8", "uint16", "uint64"])
def test_fused_randint(lib, name):
    fn = getattr(lib, f"h_rint_{name}")
    npd = dt.by_name[name].np_dtype
    m, sign = (1 << 64) - 1, 1 << 63
    for k0, k1 in KEYS:
        ka = _key(k0, k1, 1)
        for lo_f, r_f, hi1, lo in ((0.0, 10.0, 9, 0), (-5.0, 8.0, 2, -5), (0.0, 300.0, 299, 0),
                                   (5.0, -3.0, 1, 5), (3.0, 0.0, 2, 3), (0.0, 1.0, 0, 0)):
            hi1v = int(np.array(hi1).astype(npd))
            lov = int(np.array(lo).astype(npd))
            out = np.zeros(257, npd)
            fn(_p(ka), I64(1), _p(out), I64(257), F32(lo_f), F32(r_f),
               F32(float(rp.UPPER["float32"])), I32(0 if (lo_f, r_f) == (0.0, 1.0) else 1),
               I64(((hi1v & m) ^ sign) - sign), I64(((lov & m) ^ sign) - sign))
            ref = rp.RandomRandint(lo_f, r_f, hi1v, lov).eval_cpu(
                [np.array([k0, k1], np.uint32)], [((257,), dt.by_name[name])])[0]
            np.testing.assert_array_equal(out, ref)


def test_argmax(lib):
    rng = np.random.default_rng(0)
    for shape, axis in (((3, 4, 5), 1), ((7,), 0), ((2, 9), 0), ((2, 9), 1), ((4, 1, 3), 1)):
        x = rng.standard_normal(shape).astype(np.float32)
        outer, k = int(np.prod(shape[:axis])), shape[axis]
        inner = int(np.prod(shape[axis + 1:]))
        out = np.zeros(outer * inner, np.uint32)
        lib.h_argmax(_p(x), _p(out), I64(outer), I64(k), I64(inner))
        np.testing.assert_array_equal(out, np.argmax(x, axis).ravel())
    x = np.array([1, np.nan, 3, np.nan], np.float32)
    out = np.zeros(1, np.uint32)
    lib.h_argmax(_p(x), _p(out), I64(1), I64(4), I64(1))
    assert out[0] == np.argmax(x) == 1


def test_bitonic_argsort_schedule(lib):
    """The launcher's pass schedule (global passes for long strides, tile passes for the rest)
    with one-thread tiles, so both kinds of pass run: a stable argsort."""
    rng = np.random.default_rng(1)
    span = 2
    for n in (1, 2, 3, 5, 8, 33, 100, 257, 1000):
        bits = rng.integers(0, 50, n).astype(np.uint32)
        p = max(span, 1 << max(0, (n - 1).bit_length()))
        keys = np.zeros(p, np.uint64)
        lib.h_binit(_p(bits), _p(keys), I64(n), I64(p))
        k = 2
        while k <= p:
            j = k // 2
            while j >= span:
                lib.h_bstep(_p(keys), I64(p), I64(j), I64(k))
                j //= 2
            lib.h_blocal(_p(keys), I64(p), I64(k), I64(j), I64(p // span))
            k *= 2
        out = np.zeros(n, np.uint32)
        lib.h_bextract(_p(keys), _p(out), I64(n))
        np.testing.assert_array_equal(out, np.argsort(bits, kind="stable"))


def test_inverse_cdf(lib):
    rng = np.random.default_rng(2)
    for n in (1, 2, 25, 1000):
        v = (rng.standard_normal(n) * 3).astype(np.float32)
        u = rng.random(500).astype(np.float32)
        cdf = np.zeros(n, np.float32)
        lib.h_ccdf(_p(v), _p(cdf), I64(n))
        out = np.zeros(500, np.uint32)
        lib.h_csearch(_p(cdf), _p(u), _p(out), I64(n), I64(500))
        ref = rp.CategoricalIcdf().eval_cpu([v, u], [((500,), dt.uint32)])[0]
        assert (out == ref).mean() > 0.99  # host expf vs numpy's exp: last-bit boundaries


def test_fused_bernoulli(lib):
    for k0, k1 in KEYS:
        ka = _key(k0, k1, 1)
        for n in (0, 1, 2, 3, 1001):
            for thr, in_double in ((0.5 * 4294967808.0, False), (0.3 * 4294967808.0, True),
                                   (0.0, False), (4294967808.0, False)):
                out = np.zeros(max(n, 1), np.bool_)
                lib.h_bern(_p(ka), I64(1), _p(out), I64(n), ctypes.c_double(thr),
                           I32(int(in_double)))
                ref = rp.RandomBernoulli(thr, in_double).eval_cpu(
                    [np.array([k0, k1], np.uint32)], [((n,), dt.bool_)])[0]
                np.testing.assert_array_equal(out[:n], ref)


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_fused_normal_chain(lib, name, monkeypatch):
    """The normal kernel's chain around erfinv (the host build's erfinvf is the identity, and so
    is the reference's here): cast to the dtype, times sqrt(2) * scale, plus loc, each rounded."""
    import dataclasses

    from pycudamlx.backend import optable

    monkeypatch.setitem(optable.OPS, "erfinv",
                        dataclasses.replace(optable.OPS["erfinv"], numpy=lambda a: a))
    fn = getattr(lib, f"h_norm_{name}")
    d = dt.by_name[name]
    lo = float(np.nextafter(np.float32(-1), np.float32(0)))
    for applied, loc in ((np.sqrt(2.0), None), (np.sqrt(2.0) * 3, 0.5), (0.7, -2.25)):
        applied = float(np.array(applied).astype(d.np_dtype))
        for k0, k1 in KEYS:
            ka = _key(k0, k1, 1)
            out = np.zeros(1001, d.np_dtype)
            fn(_p(ka), I64(1), _p(out), I64(1001), F32(lo), F32(2.0),
               F32(float(rp.UPPER["float32"])), ctypes.c_double(applied),
               ctypes.c_double(0.0 if loc is None else loc), I32(0 if loc is None else 1))
            ref = rp.RandomNormal(lo, 2.0, applied, loc).eval_cpu(
                [np.array([k0, k1], np.uint32)], [((1001,), d)])[0]
            np.testing.assert_array_equal(out.view(np.uint8), ref.view(np.uint8))
