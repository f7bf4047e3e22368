"""Run scripts written for MLX unchanged: ``pycudamlx run script.py [args]`` (or ``-m module``).

``run_script`` installs an import hook (a ``sys.meta_path`` finder) that resolves ``mlx`` and
every ``mlx.<name>`` to ``pycudamlx`` / ``pycudamlx.<name>`` (``mlx.core`` is ``pycudamlx.core``
itself, ``mlx.utils`` is ``pycudamlx.utils``, ``mlx.nn`` and ``mlx.optimizers`` are
``pycudamlx.nn`` / ``pycudamlx.optimizers`` where those exist, else a clear ImportError), runs
the script with ``runpy`` as ``__main__`` with ``sys.argv`` set, then removes the hook and the
``mlx`` modules it made. Nothing is installed on a plain ``import pycudamlx``: an installed MLX
package keeps working in every other process. Child processes a script starts do not inherit the
hook (run them through ``pycudamlx run`` too).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
from typing import Any, Iterator, Sequence

__all__ = ["MlxFinder", "install", "uninstall", "installed", "run_script", "run_module",
           "forget_mlx_modules"]

#: What ``mlx.<name>`` resolves to when it is not simply ``pycudamlx.<name>``.
_EXPLICIT = {
    "mlx.core": "pycudamlx.core",
    "mlx.utils": "pycudamlx.utils",
    "mlx.nn": "pycudamlx.nn",
    "mlx.optimizers": "pycudamlx.optimizers",
}


def _target(fullname: str) -> str:
    return _EXPLICIT.get(fullname) or "pycudamlx" + fullname[len("mlx"):]


class _AliasLoader(importlib.abc.Loader):
    """Loads ``mlx.X`` as the existing module ``pycudamlx.X`` (the same object)."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module
        self._own_spec = getattr(module, "__spec__", None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamped our alias spec on the module: give it its own back.
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class _PackageLoader(importlib.abc.Loader):
    """The top-level ``mlx`` package: empty, its submodules come through the finder."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType("mlx", "MLX's top-level package, served by pycudamlx.")
        module.__path__ = []  # a package: `import mlx.core` asks the finder

        def __getattr__(name: str) -> Any:  # `import mlx; mlx.core` works too
            if name.startswith("__"):
                raise AttributeError(name)
            try:
                return importlib.import_module(f"mlx.{name}")
            except ImportError as exc:
                raise AttributeError(f"module 'mlx' has no attribute {name!r} ({exc})") from None

        module.__getattr__ = __getattr__  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class MlxFinder(importlib.abc.MetaPathFinder):
    """Resolves ``mlx`` and ``mlx.*`` imports to pycudamlx (see the module docstring)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "mlx":
            return importlib.machinery.ModuleSpec("mlx", _PackageLoader(), is_package=True)
        if not fullname.startswith("mlx."):
            return None
        name = _target(fullname)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                raise ModuleNotFoundError(
                    f"{fullname} is not implemented in pycudamlx yet ({name} does not exist); "
                    "`pycudamlx run` can only run scripts that use the parts of MLX pycudamlx "
                    "provides.", name=fullname) from None
            raise
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is not None and fullname.count(".") >= 2:
            attr = getattr(parent, child, module)
            if attr is not module:
                # e.g. mlx.core.array: pycudamlx.core.array is a module *and* the name of the
                # array class on pycudamlx.core. Importing it as mlx.core.array would make the
                # import system overwrite mx.array with the module; MLX has no such module
                # either (mlx.core is not a package), so refuse it as MLX does.
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=is_package)


def installed() -> MlxFinder | None:
    """The hook, when it is installed."""
    for finder in sys.meta_path:
        if isinstance(finder, MlxFinder):
            return finder
    return None


def install() -> MlxFinder:
    """Install the hook (first on ``sys.meta_path``, ahead of an installed MLX)."""
    finder = installed()
    if finder is None:
        finder = MlxFinder()
        sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    """Remove the hook and forget the ``mlx`` modules it served."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, MlxFinder)]
    forget_mlx_modules()


def forget_mlx_modules() -> dict[str, types.ModuleType]:
    """Drop ``mlx`` and ``mlx.*`` from ``sys.modules`` (the next import resolves them again);
    returns what was there."""
    gone = {n: m for n, m in sys.modules.items() if n == "mlx" or n.startswith("mlx.")}
    for name in gone:
        del sys.modules[name]
    return gone


def run_module(name: str, argv: Sequence[str] = ()) -> None:
    """Run module ``name`` as ``__main__`` (``python -m name``) with ``sys.argv = [name, *argv]``,
    its ``mlx`` imports served by pycudamlx: ``pycudamlx run -m mlx_lm generate ...`` or
    ``pycudamlx run -m pytest tests/`` for a test suite written for MLX. The current directory
    goes first on ``sys.path``, as for ``python -m``; what the caller had is restored after."""
    with _served(name, argv, os.getcwd()):
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise NoSuchModule(f"No module named {name!r}")
        runpy.run_module(name, run_name="__main__", alter_sys=True)


class NoSuchModule(ImportError):
    """``run_module`` was given a module that cannot be found."""


def run_script(path: str, argv: Sequence[str] = ()) -> None:
    """Run the MLX script at ``path`` as ``__main__`` with ``sys.argv = [path, *argv]``, its
    ``mlx`` imports served by pycudamlx. Exceptions (SystemExit too) propagate; the caller's
    ``sys.argv``, ``sys.path`` and any real ``mlx`` modules it had imported are restored."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such script: {path}")
    # the script's directory goes first, as for `python script.py`
    with _served(path, argv, os.path.dirname(os.path.abspath(path))):
        runpy.run_path(path, run_name="__main__")


@contextlib.contextmanager
def _served(argv0: str, argv: Sequence[str], first_on_path: str) -> Iterator[None]:
    """The hook installed, ``sys.argv`` and ``sys.path`` set for a program; afterwards the
    caller's ``sys.argv``, ``sys.path``, ``__main__`` and real ``mlx`` modules come back."""
    saved_argv = sys.argv
    saved_path = list(sys.path)
    saved_main = sys.modules.get("__main__")
    saved_mlx = forget_mlx_modules()
    had_hook = installed() is not None
    install()
    sys.argv = [argv0, *argv]
    sys.path.insert(0, first_on_path)
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        if not had_hook:
            uninstall()
        sys.modules.update(saved_mlx)
