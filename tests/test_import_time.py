"""``import pycudamlx.core`` stays quick: measured in a fresh interpreter (docs/install.md
records the figure). The bound is generous (shared CI machines); a regression to many seconds,
an import of a GPU library or a driver call at import time, fails it."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, subprocess_env

BOUND_S = 5.0


def test_import_pycudamlx_core_is_quick():
    code = ("import time; t = time.perf_counter(); import pycudamlx.core; "
            "print(time.perf_counter() - t)")
    best = min(float(subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(),
                                    capture_output=True, text=True, check=True).stdout)
               for _ in range(2))
    assert best < BOUND_S, f"import pycudamlx.core took {best:.2f} s (bound {BOUND_S} s)"
