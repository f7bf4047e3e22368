"""mx.distributed with several processes: the MPI backend and `pycudamlx launch`, on the CPU.

Each job runs tests/distributed_cases.py (every collective and dtype against numpy, send/recv,
split, derivatives, vmap, compile, nn.average_gradients, data-parallel training against one
process, the sharded linear layers) in 2 and 4 ranks; the launcher's failure handling (a rank
that raises ends the job, a peer that never arrives is a timeout error naming the operation);
the launch plan for both MPI flavours and hostfiles; and init's choices from the environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pycudamlx.core as mx
from pycudamlx.core import distributed as dist_api
from pycudamlx.distributed import launch as launcher
from pycudamlx.distributed import mpi

HERE = Path(__file__).parent
needs_mpi = pytest.mark.skipif(not mpi.available() or launcher.find_mpiexec() is None,
                               reason="mpi4py, an MPI library or mpiexec is missing "
                                      "(pip install 'pycudamlx[mpi]')")
LAUNCH_ENV = ("MLX_RANK", "MLX_HOSTFILE", "MLX_WORLD_SIZE", "MLX_JACCL_COORDINATOR",
              "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_ENV}
    env.update(extra)
    return env


def _launch(n: int, *argv: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pycudamlx", "launch", "-n", str(n), *argv],
                          capture_output=True, text=True, timeout=timeout, env=_clean_env(**env))


def _passed(out: str, n: int) -> None:
    for r in range(n):
        assert f"[{r}] rank {r} of {n}: " in out and "checks passed" in out, out[-3000:]


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_every_collective_and_pattern_across_ranks(n):
    done = _launch(n, str(HERE / "distributed_cases.py"), "all")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _passed(done.stdout, n)


@needs_mpi
def test_three_ranks_split_unevenly_and_odd_shapes():
    done = _launch(3, str(HERE / "distributed_cases.py"), "collectives")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _passed(done.stdout, 3)


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


@needs_mpi
def test_a_rank_that_raises_ends_the_job(tmp_path):
    script = _script(tmp_path, """
        import time
        import mlx.core as mx  # served by pycudamlx, as with `pycudamlx run`
        world = mx.distributed.init()
        if world.rank() == 1:
            raise ValueError("rank one broke")
        mx.eval(mx.distributed.all_sum(mx.ones(3)))  # would wait for rank 1 forever
        time.sleep(60)
    """)
    start = time.monotonic()
    done = _launch(2, script, timeout=120)
    assert done.returncode != 0
    assert time.monotonic() - start < 60  # ended by the abort, not by a timeout
    assert "[1] ValueError: rank one broke" in done.stderr, done.stderr[-2000:]


@needs_mpi
def test_a_peer_that_never_arrives_is_a_timeout_error(tmp_path):
    script = _script(tmp_path, """
        import time
        import pycudamlx.core as mx
        world = mx.distributed.init()
        if world.rank() == 0:
            mx.eval(mx.distributed.all_sum(mx.ones(3)))
        else:
            time.sleep(30)  # never joins the all_sum
    """)
    start = time.monotonic()
    done = _launch(2, script, timeout=120, PYCUDAMLX_DISTRIBUTED_TIMEOUT="2")
    assert done.returncode != 0
    assert time.monotonic() - start < 25
    assert "DistributedError: [all_sum] rank 0 of a group of 2 waited 2 s" in done.stderr, \
        done.stderr[-2000:]


@needs_mpi
def test_recv_of_the_wrong_size_names_both_sizes(tmp_path):
    script = _script(tmp_path, """
        import pycudamlx.core as mx
        world = mx.distributed.init()
        if world.rank() == 0:
            mx.eval(mx.distributed.send(mx.ones(3), 1))
        else:
            try:
                mx.eval(mx.distributed.recv((5,), mx.float32, 0))
            except Exception as e:
                print(type(e).__name__ + ":", e)
    """)
    done = _launch(2, script, timeout=120)
    assert "[1] DistributedError: [recv] rank 1 expected 20 bytes" in done.stdout + done.stderr, \
        done.stdout + done.stderr


@needs_mpi
def test_launch_runs_a_module_and_passes_arguments(tmp_path):
    (tmp_path / "jobmod.py").write_text(textwrap.dedent("""
        import sys
        import mlx.core as mx
        g = mx.distributed.init()
        print("args", sys.argv[1:], "sum", mx.distributed.all_sum(g.rank() + 1).item())
    """))
    done = subprocess.run([sys.executable, "-m", "pycudamlx", "launch", "-n", "2", "--env",
                           "FOO=bar", "-m", "jobmod", "x", "--flag"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=_clean_env())
    assert done.returncode == 0, done.stderr
    for r in range(2):
        assert f"[{r}] args ['x', '--flag'] sum 3" in done.stdout


def test_launch_plan_hydra_and_openmpi(tmp_path):
    p = launcher.plan(2, ["train.py", "--lr", "1"], env=["A=1"], mpiexec="/x/mpiexec",
                      flavour="hydra", python="/py")
    assert p.command[:1] == ["/x/mpiexec"]
    assert ["-genv", "NCCL_NVLS_ENABLE", "0"] == p.command[1:4]
    assert ["-genv", "A", "1"] == p.command[p.command.index("A") - 1:p.command.index("A") + 2]
    assert p.command[-8:] == ["-n", "2", "/py", "-m", "pycudamlx.distributed.launch",
                              "--rank-entry", "train.py", "--lr", "1"][-8:]
    p = launcher.plan(3, ["t.py"], hosts=["a", "b"], mpiexec="/x/mpirun", flavour="openmpi",
                      python="/py")
    assert "--oversubscribe" in p.command and "-x" in p.command
    assert "NCCL_NVLS_ENABLE=0" in p.command
    assert p.command[p.command.index("-n") + 1] == "6"
    assert p.hostfile_text == "a slots=3\nb slots=3\n"
    p = launcher.plan(1, ["t.py"], hosts=["a", "b"], mpiexec="/m", flavour="hydra", python="/p")
    assert p.hostfile_text == "a:1\nb:1\n" and "-f" in p.command
    with pytest.raises(launcher.LaunchError, match="at least 1"):
        launcher.plan(0, ["t.py"], mpiexec="/m", flavour="hydra")
    with pytest.raises(launcher.LaunchError, match="no script"):
        launcher.plan(2, [], mpiexec="/m", flavour="hydra")
    with pytest.raises(launcher.LaunchError, match="NAME=VALUE"):
        launcher.plan(2, ["t.py"], env=["novalue"], mpiexec="/m", flavour="hydra")


def test_read_hostfile(tmp_path):
    good = tmp_path / "hosts.json"
    good.write_text(json.dumps([{"ssh": "node1", "ips": ["10.0.0.1"]}, {"ssh": "node2"}]))
    assert launcher.read_hostfile(str(good)) == ["node1", "node2"]
    for text, error in (("{", "not JSON"), ("[]", "non-empty"), ('[{"ips": []}]', "no \"ssh\"")):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(launcher.LaunchError, match=error):
            launcher.read_hostfile(str(bad))
    with pytest.raises(launcher.LaunchError, match="cannot read"):
        launcher.read_hostfile(str(tmp_path / "missing.json"))


def test_cli_launch_errors(tmp_path):
    from click.testing import CliRunner

    from pycudamlx.cli import main

    r = CliRunner().invoke(main, ["launch", "-n", "2"])
    assert r.exit_code == 2 and "give a script" in r.output
    r = CliRunner().invoke(main, ["launch", "-n", "2", str(tmp_path / "nope.py")])
    assert r.exit_code == 1 and "No such script" in r.output


@needs_mpi
def test_cli_launch_dry_run(tmp_path):
    from click.testing import CliRunner

    from pycudamlx.cli import main

    script = _script(tmp_path, "print(1)\n")
    r = CliRunner().invoke(main, ["launch", "-n", "3", "--dry-run", script])
    assert r.exit_code == 0 and "-n 3" in r.output and "--rank-entry" in r.output


def test_rank_output_is_prefixed_line_by_line():
    import io

    sink = io.StringIO()
    out = launcher._RankPrefixed(sink, "[3] ")
    out.write("a")
    out.write("b\nc\n")
    out.write("d")
    out.flush()
    assert sink.getvalue() == "[3] ab\n[3] c\n[3] d"


def test_one_gpu_per_rank():
    assert launcher.pin_gpu({"MPI_LOCALRANKID": "3"}, gpu_count=2) == "1"
    assert launcher.pin_gpu({"OMPI_COMM_WORLD_LOCAL_RANK": "2"}, gpu_count=8) == "2"
    assert launcher.pin_gpu({"MPI_LOCALRANKID": "1", "CUDA_VISIBLE_DEVICES": "4,6"}) == "6"
    assert launcher.pin_gpu({"MPI_LOCALRANKID": "1"}, gpu_count=1) is None
    assert launcher.pin_gpu({}, gpu_count=4) is None


# ---- init's choices in this process (monkeypatched launch environments) ------------------------


@pytest.fixture
def fresh_init(monkeypatch):
    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(dist_api, "_FORMED", {})


def test_init_refuses_a_launch_it_cannot_join(fresh_init, monkeypatch):
    monkeypatch.setenv("MLX_WORLD_SIZE", "2")
    for strict in (False, True):
        with pytest.raises(RuntimeError, match="ring, NCCL or JACCL launch.*pycudamlx launch"):
            mx.distributed.init(strict)


def test_init_under_mpi_without_mpi_names_what_to_install(fresh_init, monkeypatch):
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setattr(mpi, "available", lambda: False)
    monkeypatch.setattr(mpi, "unavailable_reason", lambda: "ModuleNotFoundError: mpi4py")
    with pytest.raises(RuntimeError, match=r"launched as one of several ranks \(PMI_SIZE=\"2\"\)"
                                           r".*pip install 'pycudamlx\[mpi\]'"):
        mx.distributed.init()
    with pytest.raises(RuntimeError, match="backend='ring' is not available"):
        mx.distributed.init(backend="ring")
    assert mx.distributed.is_available() is False


def test_init_strict_mpi_without_mpi_is_mlxs_error(fresh_init, monkeypatch):
    monkeypatch.setattr(mpi, "available", lambda: False)
    with pytest.raises(RuntimeError, match="^Cannot initialize MPI$"):
        mx.distributed.init(True, "mpi")
    with pytest.raises(RuntimeError, match=r"^\[distributed\] Couldn't initialize any backend$"):
        mx.distributed.init(True)
    assert mx.distributed.init(False, "mpi").size() == 1


@needs_mpi
def test_one_process_mpi_world_behaves_as_a_group_of_one(tmp_path):
    # In a child process: MPI_Init here would stay for the rest of the test session.
    script = _script(tmp_path, """
        import pycudamlx.core as mx
        g = mx.distributed.init(True, "mpi")
        assert (g.rank(), g.size()) == (0, 1)
        x = mx.array([1.0, 2.0])
        assert mx.distributed.all_sum(x).tolist() == [1.0, 2.0]
        assert mx.distributed.all_gather(x).shape == (2,)
        try:
            mx.distributed.send(x, 0)
        except ValueError as e:
            assert str(e) == "Cannot send to a singleton group", e
        s = g.split(0)
        assert s.size() == 1
        print("ok", mx.distributed.is_available("mpi"), mx.distributed.is_available("ring"))
    """)
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120,
                          env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok True False"
