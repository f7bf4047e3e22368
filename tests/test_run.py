"""`pycudamlx run script.py`: MLX scripts run unchanged through the import hook; a plain
`import pycudamlx` installs nothing; pycudamlx.utils matches mlx.utils."""

from __future__ import annotations

import collections
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, subprocess_env
from pycudamlx import mlx_compat, utils

SCRIPT = textwrap.dedent("""
    import sys
    import mlx.core as mx
    import mlx
    from mlx.utils import tree_flatten, tree_map

    a = mx.array([1.0, 2.0, 3.0])
    b = a * 2 + 1
    mx.eval(b)
    params = {"w": a, "layers": [{"b": b}]}
    flat = [(k, v.tolist()) for k, v in tree_flatten(tree_map(lambda x: x + 0, params))]
    print("module", type(mx).__name__, mx.__name__, mlx.core is mx)
    print("argv", sys.argv[1:])
    print("flat", flat)
    print("value", b)
    print("name", __name__)
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_run_script_in_process(script, capsys):
    mlx_compat.run_script(str(script), ["--epochs", "3"])
    out = capsys.readouterr().out
    assert "module module pycudamlx.core True" in out
    assert "argv ['--epochs', '3']" in out
    assert "flat [('w', [1.0, 2.0, 3.0]), ('layers.0.b', [3.0, 5.0, 7.0])]" in out
    assert "value array([3, 5, 7], dtype=float32)" in out
    assert "name __main__" in out
    assert mlx_compat.installed() is None  # removed again
    assert not any(n == "mlx" or n.startswith("mlx.") for n in sys.modules if
                   getattr(sys.modules[n], "__name__", "").startswith("pycudamlx"))


def test_run_restores_a_real_mlx(script, capsys):
    real = pytest.importorskip("mlx.core")
    mlx_compat.run_script(str(script), [])
    import mlx.core

    assert mlx.core is real  # the real package is left alone after the run
    assert "module module pycudamlx.core True" in capsys.readouterr().out


def test_script_errors_propagate(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import mlx.core as mx\nraise SystemExit(3)\n")
    with pytest.raises(SystemExit) as exc:
        mlx_compat.run_script(str(bad), [])
    assert exc.value.code == 3
    with pytest.raises(FileNotFoundError):
        mlx_compat.run_script(str(tmp_path / "missing.py"), [])


def test_unimplemented_packages_are_a_clear_import_error(tmp_path):
    import importlib.util

    for name in ("nn", "optimizers"):
        if importlib.util.find_spec(f"pycudamlx.{name}") is not None:
            continue
        s = tmp_path / f"uses_{name}.py"
        s.write_text(f"import mlx.{name}\n")
        with pytest.raises(ImportError, match=f"mlx.{name} is not implemented in pycudamlx"):
            mlx_compat.run_script(str(s), [])


def test_deeper_names_and_from_imports(tmp_path, capsys):
    s = tmp_path / "deep.py"
    s.write_text(textwrap.dedent("""
        from mlx.core import array, float16
        from mlx import core
        import mlx.core.cuda
        try:
            import mlx.core.array  # not a module in MLX; must not clobber mx.array either
        except ModuleNotFoundError as exc:
            print("refused", exc.name)
        print(array([1], float16).dtype, core.__name__, mlx.core.cuda.is_available() in
              (True, False), isinstance(core.array, type))
    """))
    mlx_compat.run_script(str(s), [])
    out = capsys.readouterr().out
    assert "refused mlx.core.array" in out
    assert "mlx.core.float16 pycudamlx.core True True" in out
    import pycudamlx.core as mx

    assert isinstance(mx.array, type)


def test_plain_import_installs_no_hook():
    code = ("import sys, pycudamlx, pycudamlx.core, pycudamlx.utils, pycudamlx.mlx_compat\n"
            "from pycudamlx.mlx_compat import MlxFinder\n"
            "assert not any(isinstance(f, MlxFinder) for f in sys.meta_path)\n"
            "try:\n"
            "    import mlx.core as m\n"
            "    print('real', m.__name__, 'pycudamlx' in repr(m))\n"
            "except ImportError:\n"
            "    print('none')\n")
    out = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("none", "real mlx.core False"))


def test_cli_run_command(script):
    out = subprocess.run([sys.executable, "-m", "pycudamlx", "run", str(script), "--lr", "0.1",
                          "-x"], env=subprocess_env(), cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0 and "No such command" in out.stderr:
        pytest.skip("the CLI has no run command yet")
    assert out.returncode == 0, out.stderr
    assert "argv ['--lr', '0.1', '-x']" in out.stdout
    assert "value array([3, 5, 7], dtype=float32)" in out.stdout


def test_cli_run_exit_code(tmp_path):
    s = tmp_path / "fail.py"
    s.write_text("import mlx.core\nimport sys\nsys.exit(5)\n")
    out = subprocess.run([sys.executable, "-m", "pycudamlx", "run", str(s)],
                         env=subprocess_env(), cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    if "No such command" in out.stderr:
        pytest.skip("the CLI has no run command yet")
    assert out.returncode == 5


def test_run_module_in_process(tmp_path, monkeypatch, capsys):
    (tmp_path / "mlxprog.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)  # `python -m` finds modules in the current directory
    mlx_compat.run_module("mlxprog", ["--steps", "2"])
    out = capsys.readouterr().out
    assert "module module pycudamlx.core True" in out
    assert "argv ['--steps', '2']" in out
    assert "value array([3, 5, 7], dtype=float32)" in out
    assert "name __main__" in out
    assert mlx_compat.installed() is None
    with pytest.raises(mlx_compat.NoSuchModule, match="No module named 'no_such_mod'"):
        mlx_compat.run_module("no_such_mod")
    assert mlx_compat.installed() is None


def test_cli_run_module(tmp_path):
    (tmp_path / "mlxprog.py").write_text(SCRIPT + "\nimport sys\nsys.exit(3)\n")
    out = subprocess.run([sys.executable, "-m", "pycudamlx", "run", "-m", "mlxprog", "-x", "y"],
                         env=subprocess_env(), cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 3, out.stderr
    assert "argv ['-x', 'y']" in out.stdout
    missing = subprocess.run([sys.executable, "-m", "pycudamlx", "run", "-m", "no_such_mod"],
                             env=subprocess_env(), cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode == 1 and "No module named 'no_such_mod'" in missing.stderr
    assert "Traceback" not in missing.stderr
    bare = subprocess.run([sys.executable, "-m", "pycudamlx", "run"], env=subprocess_env(),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and "give a script to run, or -m MODULE" in bare.stderr


def test_mlx_alias_for_test_suites(tmp_path):
    """`pytest -p pycudamlx.mlx_alias` runs a test suite written for MLX on pycudamlx, in the
    pytest-xdist workers too (they load the same -p plugins)."""
    (tmp_path / "test_uses_mlx.py").write_text(textwrap.dedent("""
        import mlx.core as mx
        import mlx.nn as nn

        def test_it():
            assert mx.__name__ == "pycudamlx.core"
            assert type(nn.Linear(2, 3)).__module__.startswith("pycudamlx.nn")
            assert (mx.array([1, 2]) + 1).tolist() == [2, 3]
    """))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "pycudamlx.mlx_alias",
                          "-p", "no:cacheprovider", str(tmp_path)], env=subprocess_env(),
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "1 passed" in out.stdout
    code = ("import pycudamlx.mlx_alias, mlx.core as mx, pycudamlx.core as pm; "
            "print(mx is pm)")
    alias = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert alias.stdout.strip() == "True", alias.stderr


# ------------------------------------------------------------------------------------------------
# pycudamlx.utils against mlx.utils

Point = collections.namedtuple("Point", "x y")
TREES = [
    {"a": 1, "b": [2, 3, {"c": 4}], "d": (5, 6)},
    [[[0]]],
    {"model": [{"w": 0, "b": 1}, {"w": 2, "b": 3}]},
    Point(1, [2, 3]),
    [],
    {},
    7,
    {"x": [], "y": {"z": ()}},
]


@pytest.fixture(scope="module")
def mlx_utils():
    pytest.importorskip("mlx.core")
    import mlx.utils

    return mlx.utils


@pytest.mark.parametrize("tree", TREES)
def test_utils_match_mlx(mlx_utils, tree):
    assert utils.tree_flatten(tree) == mlx_utils.tree_flatten(tree)
    assert utils.tree_flatten(tree, prefix=".p") == mlx_utils.tree_flatten(tree, prefix=".p")
    assert utils.tree_flatten(tree, destination={}) == mlx_utils.tree_flatten(tree,
                                                                              destination={})
    leaf = lambda x: isinstance(x, list)  # noqa: E731
    assert utils.tree_flatten(tree, is_leaf=leaf) == mlx_utils.tree_flatten(tree, is_leaf=leaf)
    f = lambda x: (x, "!")  # noqa: E731
    assert utils.tree_map(f, tree) == mlx_utils.tree_map(f, tree)
    g = lambda p, x: (p, x)  # noqa: E731
    assert utils.tree_map_with_path(g, tree) == mlx_utils.tree_map_with_path(g, tree)
    add = lambda acc, x: acc + x  # noqa: E731
    assert utils.tree_reduce(add, tree, 0) == mlx_utils.tree_reduce(add, tree, 0)
    flat = mlx_utils.tree_flatten(tree)
    if flat:
        assert utils.tree_unflatten(flat) == mlx_utils.tree_unflatten(flat)
        assert utils.tree_unflatten(dict(flat)) == mlx_utils.tree_unflatten(dict(flat))
    assert type(utils.tree_map(f, tree)) is type(mlx_utils.tree_map(f, tree))


def test_utils_multi_tree_and_merge(mlx_utils):
    a = {"w": [1, 2], "b": 3}
    b = {"w": [10, 20], "b": 30, "extra": 0}
    f = lambda x, y: x + y  # noqa: E731
    assert utils.tree_map(f, a, b) == mlx_utils.tree_map(f, a, b)
    assert utils.tree_unflatten([("0", 1), ("2", 3)]) == mlx_utils.tree_unflatten(
        [("0", 1), ("2", 3)])
    assert utils.tree_unflatten([("01", 1), ("1", 3)]) == mlx_utils.tree_unflatten(
        [("01", 1), ("1", 3)])
    for x, y in [({"a": 1}, {"b": 2}), ([1, None], [None, 2]), ({}, {}), ([], {"a": 1})]:
        assert utils.tree_merge(x, y) == mlx_utils.tree_merge(x, y)
    # two Nones at one place are two leaves: merge_fn's, or MLX's error without one
    for x, y in [({"a": 1}, {"a": 2}), ([], {}), (None, None), ([1, None], [None, None])]:
        with pytest.raises(ValueError):
            utils.tree_merge(x, y)
        with pytest.raises(ValueError):
            mlx_utils.tree_merge(x, y)
    assert utils.tree_merge({"a": 1}, {"a": 2}, f) == mlx_utils.tree_merge({"a": 1}, {"a": 2}, f)
    g = lambda x, y: (x, y)  # noqa: E731
    assert utils.tree_merge([None], [None], g) == mlx_utils.tree_merge([None], [None], g)
    with pytest.raises(ValueError, match="Destination"):
        utils.tree_flatten([1], destination=set())


def test_versions_through_the_mlx_alias(tmp_path, capsys):
    """mlx.core.__version__ is the MLX API version pycudamlx implements; pycudamlx's own stays."""
    import pycudamlx
    import pycudamlx.core as pcore

    s = tmp_path / "v.py"
    s.write_text("import mlx, mlx.core as mx\n"
                 "print('api', mx.__version__, hasattr(mlx, '__version__'))\n")
    mlx_compat.run_script(str(s), [])
    assert "api 0.32.4 False" in capsys.readouterr().out
    assert pcore.__version__ == "0.32.4" == pycudamlx.MLX_API_VERSION
    assert pycudamlx.__version__ != pcore.__version__
    mlx_core = pytest.importorskip("mlx.core")  # the real one, restored after the run
    assert mlx_core.__version__ == pcore.__version__
