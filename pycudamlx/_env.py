"""Every environment variable pycudamlx honours, parsed and validated here and nowhere else.

docs/configuration.md lists them (a test keeps the two in step). Values are parsed once: the
switches below are module globals read at import (hot paths test a global, not os.environ), and
the few that the code reads again at run time (``flag``/``choice``/``integer``: cuBLAS/cuFFT
switches and TF32, which tests and scripts flip while a process runs) memoise the parse per raw
value, so a read costs an ``os.environ`` lookup and a dict hit.

A bad value is a ``ConfigError`` (a ValueError) naming the variable, the value and what it
accepts. At import nothing raises (the CLI must be able to start to say it in one line):
``check()`` raises the first problem; ``import pycudamlx.core`` and the CLI call it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


class ConfigError(ValueError):
    """An environment variable has a value pycudamlx does not accept."""


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
BOOLEAN_VALUES = "1/0, true/false (also yes/no, on/off; case-insensitive; empty = unset)"


@dataclass(frozen=True)
class Variable:
    name: str
    kind: str                 # "bool", "choice", "int", "path", "text"
    default: object
    doc: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    owner: str = "pycudamlx"  # or "mlx": a variable of MLX's own that pycudamlx honours
    testing: bool = False     # read by the test suite, not the library


_VARS = [
    Variable("PYCUDAMLX_CACHE_DIR", "path", None,
             "The kernel cache directory (default: $XDG_CACHE_HOME/pycudamlx, else "
             "~/.cache/pycudamlx). It must be private to the user (docs/kernel-cache.md)."),
    Variable("PYCUDAMLX_DISABLE_NVRTC", "bool", False,
             "Never call NVRTC: only the kernel cache and kernels_ptx/ are used."),
    Variable("PYCUDAMLX_DEBUG_SYNC", "bool", False,
             "Synchronise and check after every kernel launch, so an asynchronous GPU error "
             "names the kernel that caused it."),
    Variable("PYCUDAMLX_STRICT_GPU", "bool", False,
             "An op on a GPU stream that would fall back to the host raises instead (the GPU "
             "tests set it)."),
    Variable("PYCUDAMLX_MEMORY", "choice", "",
             "Force managed or device memory for arrays (default: managed where the GPU has "
             "concurrent managed access, device memory otherwise).",
             choices=("managed", "device")),
    Variable("PYCUDAMLX_AUTO_PREFETCH", "bool", True,
             "Prefetch managed memory to the device that reads it, and back to the host "
             "(0: never prefetch automatically)."),
    Variable("PYCUDAMLX_FUSION", "bool", True,
             "Fuse chains of elementwise GPU ops into one kernel (0: one kernel per op)."),
    Variable("PYCUDAMLX_COMPILE_GRAPHS", "bool", True,
             "mx.compile replays a trace on a GPU stream as one CUDA graph from its third call "
             "(0: every op of the trace is its own launch)."),
    Variable("PYCUDAMLX_GRAPH_COPY_KERNELS", "bool", False,
             "A CUDA-graph replay moves its inputs in and outputs out with the graph's own copy "
             "kernels and one table upload per call (1), or one device-to-device copy per "
             "array (0, the default until the kernel path has passed a GPU run)."),
    Variable("PYCUDAMLX_DISABLE_CUBLAS", "bool", False,
             "Do not use cuBLAS(Lt): matmul takes the NVRTC GEMM. Read at each use."),
    Variable("PYCUDAMLX_DISABLE_CUFFT", "bool", False,
             "Do not use cuFFT: mx.fft on a GPU stream runs on the host. Read at each use."),
    Variable("PYCUDAMLX_ENABLE_TF32", "bool", True,
             "TF32 tensor cores for float32 GEMMs, as MLX does by default (0: full float32). "
             "Read at each use."),
    Variable("MLX_ENABLE_TF32", "bool", True,
             "MLX's own switch for the same: 0 turns TF32 off too. Read at each use.",
             owner="mlx"),
    Variable("PYCUDAMLX_CUFFT_PLAN_CACHE", "int", 32,
             "How many cuFFT plans to keep (least recently used are destroyed).", minimum=1),
    Variable("PYCUDAMLX_DISTRIBUTED_TIMEOUT", "int", 300,
             "Seconds an mx.distributed operation waits for its peers before it raises, naming "
             "the operation and the ranks (a peer that never arrives is an error, not a hang). "
             "Read when the group is formed.", minimum=1),
    Variable("PYCUDAMLX_NULL_DRIVER", "bool", False,
             "Run the GPU code path against a null CUDA driver on the host (no kernel runs): for "
             "tests and profiling of the host cost."),
    Variable("PYCUDAMLX_REQUIRE_NVRTC", "bool", False,
             "Tests that need NVRTC (or CUDA 12's ptxas) fail instead of skipping (CI sets it).",
             testing=True),
    Variable("PYCUDAMLX_FUSE_CPU_FOR_TESTS", "bool", False,
             "Tests of the fusion planner fuse CPU nodes too; never on in normal use.",
             testing=True),
    Variable("PYCUDAMLX_FUZZ_RANDOM", "bool", False,
             "tests/test_fuzz.py draws fresh random examples instead of the fixed ones.",
             testing=True),
    Variable("PYCUDAMLX_FUZZ_EXAMPLES", "int", 0,
             "tests/test_fuzz.py: examples per property (0: its default).", minimum=0,
             testing=True),
]
#: name -> Variable, in documentation order.
VARIABLES: dict[str, Variable] = {v.name: v for v in _VARS}

#: The launch variables of mlx.launch, pycudamlx launch and the MPI launchers (read by
#: mx.distributed.init to pick the backend or to refuse a launch it cannot join); MLX_WORLD_SIZE,
#: OMPI_COMM_WORLD_SIZE and PMI_SIZE count when they are an integer above 1, the others when set.
LAUNCH_VARIABLES = ("MLX_RANK", "MLX_HOSTFILE", "MLX_WORLD_SIZE", "MLX_JACCL_COORDINATOR",
                    "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def launch_environment() -> dict[str, str]:
    """MLX's (and MPI's) launch variables as set now ("" when unset), for mx.distributed.init,
    which interprets them as MLX does."""
    return {name: os.environ.get(name, "") for name in LAUNCH_VARIABLES}


def _accepts(var: Variable) -> str:
    if var.kind == "bool":
        return BOOLEAN_VALUES
    if var.kind == "choice":
        return " or ".join(var.choices) + " (empty = automatic)"
    if var.kind == "int":
        return f"an integer >= {var.minimum}" if var.minimum is not None else "an integer"
    return "a path"


def _parse(var: Variable, raw: str | None) -> object:
    if raw is None or raw.strip() == "":
        return var.default
    text = raw.strip()
    if var.kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    elif var.kind == "choice":
        if text.lower() in var.choices:
            return text.lower()
    elif var.kind == "int":
        try:
            n = int(text)
        except ValueError:
            pass
        else:
            if var.minimum is None or n >= var.minimum:
                return n
    else:
        return raw
    raise ConfigError(f"{var.name}={raw!r} is not valid: it accepts {_accepts(var)}")


_memo: dict[tuple[str, str | None], object] = {}


def get(name: str) -> object:
    """The parsed value of a variable now (memoised per raw value); ConfigError if it is bad."""
    raw = os.environ.get(name)
    key = (name, raw)
    try:
        return _memo[key]
    except KeyError:
        pass
    value = _parse(VARIABLES[name], raw)
    _memo[key] = value
    return value


def flag(name: str) -> bool:
    return bool(get(name))


def flag_or_default(name: str) -> bool:
    """A boolean for a module-level switch read at import: a bad value gives the default here
    and is raised once, naming the variable, by ``check()`` (``import pycudamlx.core``)."""
    try:
        return flag(name)
    except ConfigError:
        return bool(VARIABLES[name].default)


def _load() -> tuple[dict[str, object], list[ConfigError]]:
    values: dict[str, object] = {}
    errors: list[ConfigError] = []
    for var in _VARS:
        try:
            values[var.name] = get(var.name)
        except ConfigError as exc:
            errors.append(exc)
            values[var.name] = var.default
    return values, errors


_errors: list[ConfigError] = []

#: Synchronise and check after every kernel launch, so an asynchronous error names its op.
DEBUG_SYNC: bool = False
#: Never call NVRTC: only the disk cache and the shipped PTX in kernels_ptx/ are used.
DISABLE_NVRTC: bool = False
#: Tests that need NVRTC fail instead of skipping (set by CI).
REQUIRE_NVRTC: bool = False
#: An op on a GPU stream that would run on the host raises instead (used by the GPU tests).
STRICT_GPU: bool = False
#: Where compiled kernels are cached; None means the XDG default.
CACHE_DIR: str | None = None


def _apply(values: dict[str, object]) -> None:
    global DEBUG_SYNC, DISABLE_NVRTC, REQUIRE_NVRTC, STRICT_GPU, CACHE_DIR
    DEBUG_SYNC = bool(values["PYCUDAMLX_DEBUG_SYNC"])
    DISABLE_NVRTC = bool(values["PYCUDAMLX_DISABLE_NVRTC"])
    REQUIRE_NVRTC = bool(values["PYCUDAMLX_REQUIRE_NVRTC"])
    STRICT_GPU = bool(values["PYCUDAMLX_STRICT_GPU"])
    CACHE_DIR = values["PYCUDAMLX_CACHE_DIR"] or None  # type: ignore[assignment]


def check() -> None:
    """Raise the first bad value found when the environment was read (import or refresh)."""
    if _errors:
        raise _errors[0]


def refresh() -> None:
    """Re-read the environment (for tests and the CLI, which may set variables after import);
    ConfigError for a bad value."""
    global _errors
    values, _errors = _load()
    _apply(values)
    check()


_values, _errors = _load()
_apply(_values)
del _values
