"""Elementwise fusion without a GPU: the planner (graph/fusion.py) on CPU nodes, whose Fused
body runs the members' numpy bodies (so results must equal the unfused ones exactly), and the
fused kernels' CUDA source (backend/cuda/fused.py) compiled by NVRTC for sm_90 and sm_80.
tests/test_gpu_fusion.py runs the kernels against the unfused ones on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import pycudamlx.core as pm
from pycudamlx.graph import fusion


@pytest.fixture
def cpu_fusion(monkeypatch):
    monkeypatch.setattr(fusion, "on_cpu_for_tests", True)
    folded: list[int] = []
    original = fusion.plan

    def spy(order):
        n = original(order)
        folded.append(n)
        return n

    monkeypatch.setattr(fusion, "plan", spy)
    with pm.stream(pm.cpu):
        yield folded


def _both(build):
    fusion.enabled = False
    try:
        ref = build()
        pm.eval(ref)
    finally:
        fusion.enabled = True
    out = build()
    pm.eval(out)
    return np.array(ref), np.array(out)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def test_a_chain_becomes_one_node(cpu_fusion):
    rng = np.random.default_rng(0)
    a = pm.array(rng.standard_normal(37).astype(np.float32))
    b = pm.array(rng.standard_normal(37).astype(np.float16))

    def build():
        x = a
        for _ in range(10):
            x = x + b  # float16 b is promoted: an astype node per step, fused too
        return x

    ref, out = _both(build)
    _same(ref, out)
    assert cpu_fusion[-1] == 19  # 20 nodes, one left


def test_a_dag_with_shared_nodes_and_dtype_changes(cpu_fusion):
    rng = np.random.default_rng(1)
    a = pm.array(rng.standard_normal((3, 5)).astype(np.float16))
    b = pm.array(rng.standard_normal(5).astype(np.float32))

    def build():
        y = pm.exp(a) * 2.0 + b
        z = pm.where(y > 0, y, pm.sin(y)).astype(pm.bfloat16)
        return z * z - 1

    ref, out = _both(build)
    _same(ref, out)
    assert cpu_fusion[-1] == 6  # exp and sin are not fused (math libraries differ)


def test_held_intermediates_stay_nodes(cpu_fusion):
    a = pm.array(np.linspace(-2, 2, 11, dtype=np.float32))
    held = pm.exp(a)
    out = (held + 1.0) * 2.0
    pm.eval(out)
    assert cpu_fusion[-1] == 1  # (held + 1) folds into * 2; exp(a) is materialised
    assert held._data is not None or held._prim is not None
    np.testing.assert_allclose(np.array(held), np.exp(np.linspace(-2, 2, 11, dtype=np.float32)),
                               rtol=1e-6)  # MLX's own float32 exp, not numpy's


def test_pending_consumers_outside_the_eval_keep_their_input(cpu_fusion):
    a = pm.array(np.arange(8, dtype=np.float32))
    mid = pm.sqrt(a)
    later = mid * 3.0  # built on mid, not evaluated now
    out = mid + 1.0
    del mid
    pm.eval(out)
    assert cpu_fusion[-1] == 0
    np.testing.assert_allclose(np.array(later), np.sqrt(np.arange(8)) * 3, rtol=1e-6)


def test_in_place_update_after_fusion_keeps_values(cpu_fusion):
    a = pm.array(np.ones(6, np.float32))
    b = pm.array(np.full(6, 2.0, np.float32))
    y = (a + b) * b
    pm.eval(y)
    b += 10  # y already holds its value
    np.testing.assert_array_equal(np.array(y), np.full(6, 6.0, np.float32))


def test_fusion_is_off_under_a_gradient_trace(cpu_fusion):
    def f(x):
        y = pm.exp(x) * 2.0 + 1.0
        pm.eval(y)  # an eval inside the trace: the tape needs every node
        return pm.sum(y * y)

    x = pm.array(np.linspace(0, 1, 5, dtype=np.float32))
    g = pm.grad(f)(x)
    xv = np.linspace(0, 1, 5, dtype=np.float32)
    expected = 2 * (np.exp(xv) * 2 + 1) * np.exp(xv) * 2
    np.testing.assert_allclose(np.array(g), expected, rtol=1e-5)


def test_the_switch_turns_fusion_off(cpu_fusion, monkeypatch):
    monkeypatch.setattr(fusion, "enabled", False)
    a = pm.array(np.ones(4, np.float32))
    pm.eval(pm.exp(a) + 1.0)
    assert cpu_fusion[-1] == 0


_PROGRAMS = [
    ((("float16", False), ("float32", True)),
     (("unary", "exp", 0, "float16"), ("astype", "", 2, "float32"),
      ("binary", "multiply", 3, 1, "float32"), ("binary", "greater", 4, 1, "bool"),
      ("unary", "sin", 4, "float32"), ("where", "", 5, 4, 6, "float32"),
      ("astype", "", 7, "bfloat16"), ("binary", "multiply", 8, 8, "bfloat16"))),
    ((("complex64", False), ("int32", False), ("uint8", True)),
     (("astype", "", 1, "complex64"), ("binary", "add", 0, 3, "complex64"),
      ("unary", "abs", 4, "float32"), ("astype", "", 2, "int32"),
      ("binary", "left_shift", 1, 6, "int32"), ("astype", "", 7, "float32"),
      ("binary", "maximum", 5, 8, "float32"))),
    ((("bool", False), ("int64", False)),
     (("unary", "logical_not", 0, "bool"), ("astype", "", 1, "bool"),
      ("binary", "logical_and", 2, 3, "bool"))),
]


@pytest.mark.parametrize("arch", [90, 80])
@pytest.mark.parametrize("index", range(len(_PROGRAMS)))
def test_fused_sources_compile(nvrtc_lib, arch, index):
    from pycudamlx.backend.cuda import compiler, fused

    spec = fused.spec_of(_PROGRAMS[index])
    entry = compiler.compile_for_arch(spec, arch, nvrtc_lib)
    assert entry.image and set(entry.lowered) == set(spec.expressions)
    assert fused.spec_of(_PROGRAMS[index]) is spec  # cached structurally
    other = (_PROGRAMS[index][0], _PROGRAMS[index][1][:-1])
    assert fused.spec_of(other).name != spec.name


def test_integer_steps_are_opaque_to_the_next_step(nvrtc_lib):
    """Signed overflow is undefined in C++: without a barrier between fused steps NVVM folds
    ``(a + b) > a`` to ``b > 0``, which disagrees with the unfused kernels (they store the
    wrapped sum) at INT_MAX. The PTX must compare the sum, never a loaded input against 0."""
    import re

    from pycudamlx.backend.cuda import fused, registry

    prog = ((("int32", False), ("int32", False)),
            (("binary", "add", 0, 1, "int32"), ("binary", "greater", 2, 0, "bool")))
    spec = fused.spec_of(prog)
    options = list(registry.BUILTIN_OPTIONS) + ["-arch=compute_80"]
    ptx = nvrtc_lib.compile(spec.name, spec.source, spec.expressions, options,
                            want_cubin=False).image.decode()
    defined_by = {}
    for line in ptx.splitlines():
        m = re.match(r"\s*(\S+)\s+(%r\d+),", line)
        if m:
            defined_by[m.group(2)] = m.group(1)
    compares = re.findall(r"setp\.gt\.s32\s+%p\d+,\s*(%r\d+),\s*([^;]+);", ptx)
    from_sums = [r for r, _ in compares if defined_by.get(r) == "add.s32"]
    folded = [r for r, rhs in compares
              if rhs.strip() == "0" and defined_by.get(r, "").startswith("ld.global")]
    assert from_sums, "no comparison reads the fused sum"
    assert not folded, f"(a + b) > a was folded to b > 0: {folded}"
