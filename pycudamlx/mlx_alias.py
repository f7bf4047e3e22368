"""Importing this module makes ``import mlx`` (and ``mlx.core``, ``mlx.nn``, ...) resolve to
pycudamlx for the rest of the process: the import alias for programs and test suites written
for MLX.

    import pycudamlx.mlx_alias          # in a program, before its first `import mlx`
    python -m pytest -p pycudamlx.mlx_alias tests/   # a test suite (pytest-xdist workers too)

It installs ``mlx_compat``'s import hook ahead of any installed MLX and drops ``mlx`` modules
already imported, so later imports get pycudamlx's. ``mlx_compat.uninstall()`` undoes it.
"""

from __future__ import annotations

from . import mlx_compat

if mlx_compat.installed() is None:
    mlx_compat.forget_mlx_modules()
    mlx_compat.install()
