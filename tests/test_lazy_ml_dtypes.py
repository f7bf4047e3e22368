"""ml_dtypes (numpy's bfloat16) is imported only when something needs numpy's bfloat16.

Its C extension's init (it registers many numpy ufunc loops) was ~0.5 s of the ~0.7 s that
``import pycudamlx.core`` took; pycudamlx/dtypes.py imports it in ``_load_bfloat16`` on the first
read of ``mx.bfloat16``'s numpy dtype, or when a caller hands us a numpy dtype we do not know
while ml_dtypes is imported. Every check runs in a fresh interpreter: any earlier test in this
process may have imported ml_dtypes already. The bfloat16 results are compared with real MLX,
run in a fresh interpreter too, where it is importable.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO, subprocess_env


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("module", ["pycudamlx", "pycudamlx.core", "pycudamlx.nn",
                                    "pycudamlx.optimizers", "pycudamlx.cli",
                                    "pycudamlx.mlx_compat"])
def test_import_does_not_import_ml_dtypes(module):
    out = _run(f"import sys, {module}; print('ml_dtypes' in sys.modules)")
    assert out.strip() == "False", f"import {module} imported ml_dtypes (~0.5 s)"


def test_cli_info_does_not_import_ml_dtypes():
    """``pycudamlx info`` (cli.py at the repository root) reports versions, GPUs and caches:
    nothing there needs numpy's bfloat16."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('ML_DTYPES', 'ml_dtypes' in sys.modules))\n"
            "sys.argv = ['cli.py', 'info']\n"
            "import runpy\n"
            "runpy.run_path('cli.py', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)
    assert "ML_DTYPES False" in proc.stdout, proc.stdout + proc.stderr


def test_finfo_and_graph_building_do_not_import_ml_dtypes():
    """mx.finfo(mx.bfloat16) is written out in dtypes.py; naming mx.bfloat16, comparing and
    promoting dtypes, and building (not evaluating) a graph of bfloat16 arrays need no numpy
    dtype either."""
    out = _run("import sys\n"
               "import pycudamlx.core as mx\n"
               "mx.set_default_device(mx.cpu)\n"
               "f = mx.finfo(mx.bfloat16)\n"
               "assert mx.bfloat16 != mx.float16 and mx.bfloat16.size == 2\n"
               "assert mx.result_type(mx.bfloat16, mx.float16) == mx.float32\n"
               "assert mx.issubdtype(mx.bfloat16, mx.floating)\n"
               "a = mx.zeros((2,), mx.bfloat16)\n"
               "assert (a * mx.ones((2,), mx.float16)).dtype == mx.float32\n"
               "print('ml_dtypes' in sys.modules)")
    assert out.strip() == "False"


# Each entry: a name and a statement that sets ``out`` to something JSON can print. ``mx`` is
# pycudamlx.core or mlx.core, with the CPU as default device; ``np`` is numpy. ``ml_dtypes`` is
# imported inside the statement where it needs it, after ``mx`` (the lazy order).
_BF16_CHECKS = {
    "add_scalar": "x = mx.array([1.5], mx.bfloat16) + 1; out = [str(x.dtype), x.tolist()]",
    "finfo": "f = mx.finfo(mx.bfloat16); "
             "out = [f.bits, f.eps, f.max, f.min, f.smallest_normal, str(f.dtype), repr(f)]",
    "from_numpy": "import ml_dtypes; x = mx.array(np.ones(3, ml_dtypes.bfloat16) * 1.5); "
                  "out = [str(x.dtype), x.tolist()]",
    "from_numpy_to_float32": "import ml_dtypes; "
                             "x = mx.array(np.array([1.5, -2.25], ml_dtypes.bfloat16), mx.float32); "
                             "out = [str(x.dtype), x.tolist()]",
    "bfloat16_scalar_operand": "import ml_dtypes; x = mx.array([1, 2]) + ml_dtypes.bfloat16(1.5); "
                               "out = [str(x.dtype), [[v.real, v.imag] for v in x.tolist()]]",
    "array_of_scalar": "import ml_dtypes; x = mx.array(ml_dtypes.bfloat16(2.5)); "
                       "out = [str(x.dtype), x.item()]",
    "mean": "import ml_dtypes; x = mx.mean(mx.array(np.array([1, 2, 4], ml_dtypes.bfloat16))); "
            "out = [str(x.dtype), x.item()]",
    "sum_of_astype": "x = mx.sum(mx.array([1.25, 2.5, 3.0]).astype(mx.bfloat16)); "
                     "out = [str(x.dtype), x.item()]",
    # reductions of bfloat16 accumulate in float32 (reduce.py's _HALF learns numpy's bfloat16
    # when ml_dtypes is imported): summed in bfloat16 this would be 1.0
    "sum_accumulates_in_float32": "x = mx.sum(mx.array([1.0] + [2**-9] * 64, mx.bfloat16)); "
                                  "out = [str(x.dtype), x.item()]",
    "var": "x = mx.var(mx.array([0.1 * i for i in range(1, 40)], mx.bfloat16)); "
           "out = [str(x.dtype), x.item()]",
    "logsumexp": "x = mx.logsumexp(mx.array([0.1 * i for i in range(1, 40)], mx.bfloat16)); "
                 "out = [str(x.dtype), x.item()]",
    "cumsum": "x = mx.cumsum(mx.array([0.1] * 8, mx.bfloat16)); out = [str(x.dtype), x.tolist()]",
    # half-dtype rules of the op table (optable.py tells bfloat16 by numpy's kind 'V'): MLX
    # rounds exp(|x|) to bfloat16 inside sigmoid, the square root inside rsqrt
    "sigmoid": "x = mx.sigmoid(mx.arange(-12, 12, 0.0625).astype(mx.bfloat16)); "
               "out = [str(x.dtype), x.tolist()]",
    "rsqrt": "x = mx.rsqrt(mx.arange(0.01, 40, 0.0625).astype(mx.bfloat16)); "
             "out = [str(x.dtype), x.tolist()]",
    "to_int8": "x = mx.array([2.7, -3.5, 300.0], mx.bfloat16).astype(mx.int8); "
               "out = [str(x.dtype), x.tolist()]",
    "isnan": "x = mx.isnan(mx.array([float('nan'), 1.0], mx.bfloat16)); "
             "out = [str(x.dtype), x.tolist()]",
    "sort": "x = mx.sort(mx.array([3.0, -1.0, 2.0], mx.bfloat16)); out = [str(x.dtype), x.tolist()]",
    "view_bits": "x = mx.array([1.0, -2.0], mx.bfloat16).view(mx.uint16); "
                 "out = [str(x.dtype), x.tolist()]",
}

_BF16_SCRIPT = """
import json, sys
import {module} as mx
import numpy as np
mx.set_default_device(mx.cpu)
results = {{}}
for name, statement in {checks!r}.items():
    scope = {{"mx": mx, "np": np}}
    try:
        exec(statement, scope)
        results[name] = scope["out"]
    except Exception as e:
        results[name] = ["error", type(e).__name__, str(e)]
print(json.dumps(results))
"""


def _bf16_results(module: str, prelude: str = "") -> dict:
    code = prelude + _BF16_SCRIPT.format(module=module, checks=_BF16_CHECKS)
    return json.loads(_run(code).splitlines()[-1])


@pytest.fixture(scope="module")
def mlx_results():
    pytest.importorskip("mlx.core")
    return _bf16_results("mlx.core")


@pytest.mark.parametrize("prelude", ["", "import ml_dtypes\n"], ids=["lazy", "ml_dtypes_first"])
def test_bfloat16_after_lazy_import_matches_mlx(prelude, mlx_results):
    """bfloat16 on the CPU, after the lazy import, gives MLX's results: whether our first
    bfloat16 use imports ml_dtypes ("lazy") or the caller imported it before us and hands us its
    arrays and scalars ("ml_dtypes_first": the numpy-to-Dtype tables learn bfloat16 then)."""
    ours = _bf16_results("pycudamlx.core", prelude)
    mismatched = {name: (ours.get(name), want) for name, want in mlx_results.items()
                  if ours.get(name) != want}
    assert not mismatched, mismatched


def test_bfloat16_numpy_round_trip_after_lazy_import():
    """np.array of a bfloat16 array is an ml_dtypes bfloat16 array (MLX refuses: no PEP 3118
    format), and an ml_dtypes array comes back unchanged; np.asarray of a lazily loaded
    bfloat16 array too; finfo agrees with ml_dtypes'."""
    out = _run("import sys\n"
               "import numpy as np\n"
               "import pycudamlx.core as mx\n"
               "mx.set_default_device(mx.cpu)\n"
               "x = mx.array([1.5], mx.bfloat16) + 1\n"
               "host = np.array(x)\n"
               "assert host.dtype.name == 'bfloat16' and host.tolist() == [2.5], host\n"
               "assert np.asarray(mx.array([3.0], mx.bfloat16)).dtype.name == 'bfloat16'\n"
               "import ml_dtypes\n"
               "src = np.array([1.0, -0.5, 3.25], ml_dtypes.bfloat16)\n"
               "back = np.array(mx.array(src))\n"
               "assert back.dtype == src.dtype and (back == src).all(), back\n"
               "f, g = mx.finfo(mx.bfloat16), ml_dtypes.finfo(ml_dtypes.bfloat16)\n"
               "assert (f.bits, f.eps, f.max, f.smallest_normal) == "
               "(g.bits, float(g.eps), float(g.max), float(g.smallest_normal))\n"
               "print('ok')")
    assert out.strip() == "ok"
