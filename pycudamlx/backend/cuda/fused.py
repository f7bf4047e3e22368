"""Fused elementwise kernels: a small DAG of op-table steps as one NVRTC kernel.

A ``Program`` is structural and hashable: the external inputs (dtype, and whether each is a
single element broadcast over the output: a scalar), then steps in order, each one of
``("unary", op, src)``, ``("binary", op, a, b)``, ``("astype", -, src)``, ``("where", -, c, a, b)``
with its result dtype; sources index inputs then earlier steps; the last step is the output.

Every step keeps its value in its own storage dtype, converted exactly as the unfused kernels
do (unary.cu ``cast<U>(Op()(to_compute(a)))``, binary.cu likewise, copy.cu ``cast<U>(v)``,
where.cu ``c ? a : b``), from the same op-table functors (registry._functor), so a fused result
is bit-identical to the unfused chain: float16/bfloat16 intermediates are rounded where the
unfused kernels would store them.

Compilation never blocks an evaluation: ``ready`` says whether a program's module is loaded;
the first time it is not, NVRTC builds it on a background thread into the disk cache, and the
evaluator runs the unfused kernels meanwhile (graph/fusion.py). Without NVRTC nothing is fused.
"""

from __future__ import annotations

import hashlib
import logging
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Sequence

from ... import dtypes as dt
from .. import optable
from . import compiler, registry
from .driver import CudaDevice
from .launch import grid_for
from .stream import CudaStream

log = logging.getLogger(__name__)

Step = tuple  # (kind, op name or "", sources..., result dtype name)
Program = tuple  # (inputs: tuple[(dtype name, is scalar)], steps: tuple[Step, ...])

BLOCK = 256
_INT32_MAX = 2**31 - 1
#: Largest program fused (steps) and most external inputs (kernel parameter space is 4 KiB;
#: the layout of 16 inputs is 1.1 KiB).
MAX_STEPS = 64
MAX_INPUTS = 16


def _cname(dtype_name: str) -> str:
    return dt.by_name[dtype_name].c_type


def _width(prog: Program) -> int:
    names = [d for d, _ in prog[0]] + [prog[1][-1][-1]]
    return 16 // max(dt.by_name[n].size for n in names)


#: Ops a fused kernel computes, each exactly rounded (IEEE) in every compiler, so the result
#: is the unfused kernels' bit for bit whichever NVRTC built those (kernels_ptx/ holds NVRTC
#: 12.0's PTX, the fused ones come from the installed NVRTC): transcendental functions
#: (exp, sin, erf, ...) differ between CUDA's math library versions and are not fused, and
#: neither is complex arithmetic (its products contract differently).
EXACT_OPS = frozenset((
    "add", "subtract", "multiply", "divide", "square", "maximum", "minimum", "negative", "abs",
    "sqrt", "floor", "ceil", "equal", "not_equal", "greater", "greater_equal", "less",
    "less_equal", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "left_shift", "right_shift", "isnan", "isinf", "isfinite"))
#: Float arithmetic steps, written as round-to-nearest intrinsics (never contracted to FMA).
_RN = {"add": "pcm_rn_add", "subtract": "pcm_rn_sub", "multiply": "pcm_rn_mul",
       "square": "pcm_rn_mul", "divide": "pcm_rn_div"}

#: Each step's value goes through an empty asm, so the compiler knows nothing of it in the
#: next step, as the unfused kernels' loads know nothing of their input. Integers need it
#: most: signed overflow is undefined in C++, so without a barrier ``(a + b) > a`` folds to
#: ``b > 0`` and a wrapped int32 sum compares as if it had not wrapped (the unfused kernels
#: store the wrapped sum). Float arithmetic steps are round-to-nearest intrinsics instead
#: (ptxas may still contract an FMA across an empty asm). 8- and 16-bit values pass through
#: a 32-bit register: converting back gives the same value, as the asm does not change it.
_OPAQUE = r"""
PCM_DEVICE float pcm_opaque(float v) { asm volatile("" : "+f"(v)); return v; }
PCM_DEVICE double pcm_opaque(double v) { asm volatile("" : "+d"(v)); return v; }
PCM_DEVICE complex64_t pcm_opaque(complex64_t v) {
  asm volatile("" : "+f"(v.re), "+f"(v.im));
  return v;
}
PCM_DEVICE int32_t pcm_opaque(int32_t v) { asm volatile("" : "+r"(v)); return v; }
PCM_DEVICE uint32_t pcm_opaque(uint32_t v) { asm volatile("" : "+r"(v)); return v; }
PCM_DEVICE int64_t pcm_opaque(int64_t v) { asm volatile("" : "+l"(v)); return v; }
PCM_DEVICE uint64_t pcm_opaque(uint64_t v) { asm volatile("" : "+l"(v)); return v; }
PCM_DEVICE int8_t pcm_opaque(int8_t v) { int32_t t = v; asm volatile("" : "+r"(t)); return (int8_t)t; }
PCM_DEVICE uint8_t pcm_opaque(uint8_t v) { uint32_t t = v; asm volatile("" : "+r"(t)); return (uint8_t)t; }
PCM_DEVICE int16_t pcm_opaque(int16_t v) { int32_t t = v; asm volatile("" : "+r"(t)); return (int16_t)t; }
PCM_DEVICE uint16_t pcm_opaque(uint16_t v) { uint32_t t = v; asm volatile("" : "+r"(t)); return (uint16_t)t; }
PCM_DEVICE bool pcm_opaque(bool v) { uint32_t t = v; asm volatile("" : "+r"(t)); return t != 0; }
template <typename T> PCM_DEVICE T pcm_opaque(T v) { return v; }
PCM_DEVICE float pcm_rn_add(float a, float b) { return __fadd_rn(a, b); }
PCM_DEVICE float pcm_rn_sub(float a, float b) { return __fsub_rn(a, b); }
PCM_DEVICE float pcm_rn_mul(float a, float b) { return __fmul_rn(a, b); }
PCM_DEVICE float pcm_rn_div(float a, float b) { return __fdiv_rn(a, b); }
PCM_DEVICE double pcm_rn_add(double a, double b) { return __dadd_rn(a, b); }
PCM_DEVICE double pcm_rn_sub(double a, double b) { return __dsub_rn(a, b); }
PCM_DEVICE double pcm_rn_mul(double a, double b) { return __dmul_rn(a, b); }
PCM_DEVICE double pcm_rn_div(double a, double b) { return __ddiv_rn(a, b); }
"""


def source_of(prog: Program) -> tuple[str, list[registry.KernelSpec]]:
    """CUDA source and kernel specs of a program (common.cuh, math.cuh, one functor a step)."""
    inputs, steps = prog
    nin = len(inputs)
    functors: list[str] = []
    body: list[str] = []
    types = [d for d, _ in inputs]

    def v(i: int) -> str:
        return f"v{i}"

    for k, step in enumerate(steps):
        kind, name, *srcs, out = step
        j = nin + k
        u = _cname(out)
        if kind in ("unary", "binary") and name in _RN and dt.by_name[types[srcs[0]]].kind == "f":
            # float arithmetic as explicit round-to-nearest intrinsics: never contracted
            a = f"to_compute({v(srcs[0])})"
            b = f"to_compute({v(srcs[-1])})"
            body.append(f"    const {u} {v(j)} = cast<{u}>({_RN[name]}({a}, {b}));")
        elif kind in ("unary", "binary"):
            op = optable.OPS[name]
            t = types[srcs[0]]
            functor = registry._functor(op, dt.by_name[t].kind, _cname(t))
            functors.append(functor.replace("struct Op {", f"struct Op{k} {{", 1))
            args = ", ".join(f"to_compute({v(s)})" for s in srcs)
            body.append(f"    const {u} {v(j)} = pcm_opaque(cast<{u}>(Op{k}()({args})));")
        elif kind == "astype":
            body.append(f"    const {u} {v(j)} = pcm_opaque(cast<{u}>({v(srcs[0])}));")
        elif kind == "where":
            c, a, b = srcs
            body.append(f"    const {u} {v(j)} = {v(c)} ? {v(a)} : {v(b)};")
        else:
            raise ValueError(f"unknown fused step {kind!r}")
        types.append(out)
    last = v(nin + len(steps) - 1)
    u_out = _cname(steps[-1][-1])
    params = ", ".join(f"const {_cname(d)}* __restrict__ in{i}" for i, (d, _) in
                       enumerate(inputs))
    compute = "\n".join(body)
    n = _width(prog)
    loads_strided = "\n".join(
        f"    const {_cname(d)} v{i} = in{i}[off[{i}]];" for i, (d, _) in enumerate(inputs))
    scalars = "\n".join(f"  const {_cname(d)} s{i} = in{i}[0];" for i, (d, sc) in
                        enumerate(inputs) if sc)
    loads_elem = "\n".join(
        f"    const {_cname(d)} v{i} = {'s%d' % i if sc else 'in%d[i]' % i};"
        for i, (d, sc) in enumerate(inputs))
    loads_pack = "\n".join(
        (f"    const {_cname(d)} v{i} = s{i};" if sc else
         f"    const {_cname(d)} v{i} = p{i}.v[k];") for i, (d, sc) in enumerate(inputs))
    pack_reads = "\n".join(
        f"    const Pack<{_cname(d)}, N> p{i} = "
        f"reinterpret_cast<const Pack<{_cname(d)}, N>*>(in{i})[p];"
        for i, (d, sc) in enumerate(inputs) if not sc)
    src = f"""
// ---- fused elementwise program ({len(steps)} steps, {nin} inputs) ----
{_OPAQUE}
{''.join(functors)}
template <int N>
__global__ void fused_contig({params}, {u_out}* __restrict__ out, int64_t n) {{
{scalars}
  const int64_t packs = n / N;
  Pack<{u_out}, N>* po = reinterpret_cast<Pack<{u_out}, N>*>(out);
  PCM_GRID_STRIDE(p, packs) {{
{pack_reads}
    Pack<{u_out}, N> vo;
#pragma unroll
    for (int k = 0; k < N; ++k) {{
{loads_pack}
{compute}
      vo.v[k] = {last};
    }}
    po[p] = vo;
  }}
  PCM_GRID_STRIDE(j, n - packs * N) {{
    const int64_t i = packs * N + j;
{loads_elem}
{compute}
    out[i] = {last};
  }}
}}

template <typename I>
__global__ void fused_strided({params}, {u_out}* __restrict__ out, int64_t n,
                              Layout<{nin}> L) {{
  PCM_GRID_STRIDE(i, n) {{
    I off[{nin}];
    layout_offsets<I, {nin}>(L, (I)i, off);
{loads_strided}
{compute}
    out[i] = {last};
  }}
}}
"""
    ptrs = ("ptr",) * (nin + 1)
    lay = f"bytes:{registry.layout_bytes(nin)}"
    kernels = [
        registry.KernelSpec(f"fused_contig<{n}>", ptrs + ("i64",)),
        registry.KernelSpec("fused_contig<1>", ptrs + ("i64",)),
        registry.KernelSpec("fused_strided<int32_t>", ptrs + ("i64", lay)),
        registry.KernelSpec("fused_strided<int64_t>", ptrs + ("i64", lay)),
    ]
    return src, kernels


_specs: dict[Program, registry.ModuleSpec] = {}


def spec_of(prog: Program) -> registry.ModuleSpec:
    """The ModuleSpec of a program (cached; never shipped in kernels_ptx/)."""
    spec = _specs.get(prog)
    if spec is None:
        src, kernels = source_of(prog)
        source = registry._program("copy.cu", src, math=True)
        digest = hashlib.sha256(repr(prog).encode()).hexdigest()[:20]
        dtypes = tuple(sorted({d for d, _ in prog[0]} | {s[-1] for s in prog[1]}))
        # not in the registry, so never in kernels_ptx/: the disk cache or NVRTC builds it
        spec = registry.ModuleSpec(f"fused.{digest}", "fused", source, tuple(kernels), dtypes)
        if len(_specs) > 4096:
            _specs.clear()
        _specs[prog] = spec
    return spec


# ------------------------------------------------------------------------------------------------
# Background compilation

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_pending: dict[tuple[int, str], Future] = {}
_failed: set[str] = set()
_modules: dict[tuple[int, Program], compiler.LoadedModule] = {}


def _build(spec: registry.ModuleSpec, cc: int) -> None:
    from .nvrtc import get_nvrtc

    compiler.warm(spec, cc, get_nvrtc(), compiler.kernel_cache())


def available() -> bool:
    """Whether fused kernels can be built here (NVRTC present and enabled)."""
    from .nvrtc import NvrtcUnavailableError, get_nvrtc

    try:
        get_nvrtc()
    except NvrtcUnavailableError:
        return False
    return True


def module(prog: Program, device: CudaDevice) -> compiler.LoadedModule | None:
    """The loaded module of ``prog``, or None while it is being built (the first sight of a
    program starts the build on a background thread and returns None at once)."""
    mod = _modules.get((device.index, prog))
    if mod is not None:
        return mod
    spec = spec_of(prog)
    if spec.name in _failed:
        return None
    key = (device.index, spec.name)
    fut = _pending.get(key)
    if fut is None:
        global _pool
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(2, thread_name_prefix="pycudamlx-fuse")
        major, minor = device.properties.compute_capability
        _pending[key] = _pool.submit(_build, spec, major * 10 + minor)
        return None
    if not fut.done():
        return None
    try:
        fut.result()
        mod = compiler.load(spec, device)  # from the disk cache now: ~0.1 ms
    except Exception as exc:  # a program NVRTC rejects stays unfused, with one log line
        log.warning("fused kernel %s could not be built (%s); running it unfused", spec.name,
                    exc)
        _failed.add(spec.name)
        return None
    _modules[(device.index, prog)] = mod
    return mod


def wait() -> None:
    """Block until every background build has finished (tests and benchmarks)."""
    for fut in list(_pending.values()):
        try:
            fut.result()
        except Exception:
            pass


# ------------------------------------------------------------------------------------------------
# Launch

_layouts: dict[int, struct.Struct] = {}
_plans: dict[tuple, tuple] = {}


def _layout(nin: int) -> struct.Struct:
    s = _layouts.get(nin)
    if s is None:
        m = registry.MAX_DIMS
        s = _layouts[nin] = struct.Struct(f"<{m}q{nin * m}qi4x")
    return s


def launch(mod: compiler.LoadedModule, prog: Program, inputs: Sequence[Any], out: Any,
           stream: CudaStream) -> None:
    """out = prog(inputs); inputs are views broadcast (stride 0) to out's contiguous shape."""
    from .elementwise import collapse, contiguous_strides

    ptrs = [v.buffer.ptr + v.offset * v.dtype.size for v in inputs]
    optr = out.buffer.ptr + out.offset * out.dtype.size
    aligned = True
    for p in ptrs:
        if p & 15:
            aligned = False
    aligned = aligned and not optr & 15
    # the module stands for the program (one per program and device): hashing the program's
    # nested tuples again on every launch would cost more than the launch
    key = (mod, out.shape, tuple([v.strides for v in inputs]), aligned)
    plan = _plans.get(key)
    if plan is None:
        plan = _plan(mod, prog, inputs, out, aligned, stream.device)
        if len(_plans) > 8192:
            _plans.clear()
        _plans[key] = plan
    if plan:
        kernel, grid, trailing = plan
        kernel(grid, BLOCK, stream, *ptrs, optr, *trailing)
    buf = out.buffer
    buf.last_write = stream
    if buf.location != stream.device.index:
        buf.set_location(stream.device.index)


def _plan(mod: compiler.LoadedModule, prog: Program, inputs: Sequence[Any], out: Any,
          aligned: bool, device: CudaDevice) -> tuple:
    from .elementwise import collapse

    n = 1
    for e in out.shape:
        n *= e
    if n == 0:
        return ()
    flags = prog[0]
    dense = True
    for (_, scalar), v in zip(flags, inputs):
        if scalar:
            continue
        shape, (st,) = collapse(out.shape, (v.strides,))
        if len(shape) > 1 or (shape and st[0] != 1):
            dense = False
            break
    if dense:
        width = _width(prog)
        kernel = mod.kernel_list[0 if aligned else 1]
        packs = n // (width if aligned else 1)
        return (kernel, max(1, min(-(-packs // BLOCK), _INT32_MAX)), (n,))
    shape, strides = collapse(out.shape, [v.strides for v in inputs])
    if not shape:
        shape, strides = [1], [[0] for _ in inputs]
    if len(shape) > registry.MAX_DIMS:
        raise ValueError("fused launch beyond MAX_DIMS")  # planned out by graph/fusion.py
    fits = n <= _INT32_MAX and all(
        sum(abs(s) * (e - 1) for s, e in zip(st, shape)) <= _INT32_MAX for st in strides)
    pad = registry.MAX_DIMS - len(shape)
    values = list(shape) + [1] * pad
    for st in strides:
        values += list(st) + [0] * pad
    layout = _layout(len(inputs)).pack(*values, len(shape))
    kernel = mod.kernel_list[2 if fits else 3]
    return (kernel, grid_for(n, BLOCK, device), (n, layout))
