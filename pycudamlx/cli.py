"""The `pycudamlx` command: info, smoke, cache and ptx (docs/cli.md describes every command).

The commands' output goes to stdout through click; diagnostics go through `logging` to stderr
(`-v` for INFO, `-vv` for DEBUG). Every error a user can cause (no GPU, a bad --arch, an
unusable --dir, NVRTC missing, a device that does not exist) ends in one clear message and a
non-zero exit status, never a traceback.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import difflib
import fnmatch
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import click

from . import __version__, _env, diagnostics, smoke
from .backend.cuda import cache as cache_mod
from .backend.cuda import compiler, driver, nvrtc, ptxstore, registry
from .backend.cuda.memory import format_bytes

log = logging.getLogger("pycudamlx.cli")

# Errors a user's machine or input can cause: one line, no traceback.
_USER_ERRORS: tuple[type[BaseException], ...] = (
    driver.CudaError, cache_mod.CacheDirError, nvrtc.NvrtcUnavailableError,
    nvrtc.KernelCompileError, compiler.KernelUnavailableError, OSError,
    ptxstore.ManifestError, ptxstore.ShippedPtxError, _env.ConfigError,
)


class _ClickEchoHandler(logging.Handler):
    """Log records to click's current stderr (which CliRunner swaps in tests)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(self.format(record), err=True)
        except Exception:
            self.handleError(record)


_handler = _ClickEchoHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    for name in ("pycudamlx", "py.warnings"):
        logger = logging.getLogger(name)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
        logger.setLevel(level)
        logger.propagate = False
    # RuntimeWarnings (an unsafe cache directory) become log records, not raw warning text.
    logging.captureWarnings(True)


class _Group(click.Group):
    """Turns the errors a user can cause into one-line click errors."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # `pycudamlx ... | head`: stop quietly, as other tools do
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise click.exceptions.Exit(1) from None
        except _USER_ERRORS as exc:
            log.debug("error detail", exc_info=True)
            raise click.ClickException(str(exc)) from None
        except Exception as exc:  # a bug: say so in one line, the traceback goes to -vv
            log.debug("internal error", exc_info=True)
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {exc} (run with -vv for the traceback, "
                "and please report it)") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (-vv: debug).")
@click.version_option(__version__, prog_name="pycudamlx")
def main(verbose: int) -> None:
    """pycudamlx: code written for Apple's MLX, run on NVIDIA GPUs in pure Python."""
    _env.refresh()
    _setup_logging(verbose)


def _echo_json(doc: Any) -> None:
    click.echo(json.dumps(doc, indent=2, sort_keys=False))


def _yes(value: bool) -> str:
    return "yes" if value else "no"


# ------------------------------------------------------------------------------------------------
# progress

#: Seconds between progress lines when stderr is not a terminal (CI logs, nohup).
PROGRESS_INTERVAL = 5.0


class _LogProgress:
    """Progress for a log: a line on stderr every PROGRESS_INTERVAL seconds (also while nothing
    completes, so a long compile still shows life), and one at the end."""

    def __init__(self, length: int, label: str) -> None:
        self.length, self.label, self.done = length, label, 0
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="pycudamlx-progress", daemon=True)

    def line(self) -> str:
        pct = 100 * self.done // self.length if self.length else 100
        return (f"{self.label}: {self.done}/{self.length} ({pct}%), "
                f"{time.monotonic() - self.start:.0f} s")

    def _run(self) -> None:
        while not self._stop.wait(PROGRESS_INTERVAL):
            with self._lock:
                click.echo(self.line(), err=True)

    def update(self, n: int) -> None:
        self.done += n

    def __enter__(self) -> "_LogProgress":
        click.echo(f"{self.label}: 0/{self.length}", err=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is None:
            click.echo(self.line(), err=True)


@contextlib.contextmanager
def _progress(length: int, label: str) -> Iterator[Any]:
    """A progress bar on a terminal; timed log lines otherwise."""
    if sys.stderr.isatty():
        with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
            yield bar
    else:
        with _LogProgress(length, label) as log_progress:
            yield log_progress


# ------------------------------------------------------------------------------------------------
# info


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (docs/cli.md).")
def info(as_json: bool) -> None:
    """Versions, driver, GPUs, kernel cache and kernels_ptx status."""
    doc = diagnostics.collect_info()
    if as_json:
        _echo_json(doc)
        _exit_if_broken(doc["cache"], doc["kernels_ptx"])
        return
    rows: list[tuple[str, str]] = [
        ("pycudamlx", doc["package"]["version"]),
        ("Python", doc["python"]),
        ("numpy", doc["numpy"]),
        ("cuda-bindings", doc["cuda_bindings"] or "missing"),
    ]
    nv = doc["nvrtc"]
    nv_text = nv["version"] or "missing"
    if nv["disabled"]:
        nv_text += " (disabled by PYCUDAMLX_DISABLE_NVRTC)"
    rows.append(("NVRTC", nv_text))
    cb = doc["cublas"]
    cb_text = cb["version"] or "missing (matmul uses the NVRTC GEMM)"
    if cb["disabled"]:
        cb_text += " (disabled by PYCUDAMLX_DISABLE_CUBLAS)"
    rows.append(("cuBLAS", cb_text))
    cf = doc["cufft"]
    cf_text = cf["version"] or "missing (mx.fft on the GPU runs on the host)"
    if cf["disabled"]:
        cf_text += " (disabled by PYCUDAMLX_DISABLE_CUFFT)"
    rows.append(("cuFFT", cf_text))
    _print_rows(rows)
    drv = doc["driver"]
    if not drv["available"]:
        click.echo(drv["reason"])
    else:
        _print_rows([("Driver", f"{drv['version'] or 'version unknown'}, "
                               f"supports CUDA {drv['cuda_version']}")])
        for d in doc["devices"]:
            label = f"GPU {d['index']}"
            if "error" in d:
                _print_rows([(label, f"cannot be read: {d['error']}")])
                continue
            _print_rows([
                (label, f"{d['name']}, compute capability {d['compute_capability']} "
                        f"({d['arch']}), {d['multiprocessors']} SMs, L2 "
                        f"{format_bytes(d['l2_cache_bytes'])}"),
                ("", f"memory {format_bytes(d['memory_total_bytes'])} total, "
                     f"{format_bytes(d['memory_free_bytes'])} free"),
                ("", f"managed memory {_yes(d['managed_memory'])}, concurrent managed access "
                     f"{_yes(d['concurrent_managed_access'])}, pageable memory access "
                     f"{_yes(d['pageable_memory_access'])}"),
            ])
    _print_rows([("Kernel cache", _cache_line(doc["cache"])),
                 ("kernels_ptx", _ptx_line(doc["kernels_ptx"]))])
    _exit_if_broken(doc["cache"], doc["kernels_ptx"])


def _exit_if_broken(cache: dict[str, Any], ptx: dict[str, Any] | None = None) -> None:
    """Exit 1 after the report when what is on disk is broken (an unusable kernel cache, a
    missing, malformed or tampered kernels_ptx): the report itself names the problem."""
    bad = cache["problem"] is not None
    if ptx is not None:
        bad = bad or not ptx["present"] or bool(ptx["problems"]["manifest"]) or not ptx[
            "verify_ok"]
    if bad:
        raise SystemExit(1)


def _print_rows(rows: Iterable[tuple[str, str]]) -> None:
    for label, value in rows:
        click.echo(f"{label:<15}{value}")


def _cache_line(c: dict[str, Any]) -> str:
    held = f"{c['entries']} entr{'y' if c['entries'] == 1 else 'ies'}"
    if c["corrupt_entries"]:
        first = c["corrupt_entries"][0]
        held += (f" ({len(c['corrupt_entries'])} corrupt, e.g. {first['path']}: "
                 f"{first['problem']}; rebuilt when next needed, or 'pycudamlx cache clear')")
    if c["problem"]:
        return f"{c['directory']}: UNUSABLE: {c['problem']}" + (
            f" It holds {held}." if c["exists"] else "")
    if not c["exists"]:
        return f"{c['directory']}: not created yet (made on first use)"
    return f"{c['directory']}: {held}, {format_bytes(c['size_bytes'])}"


def _ptx_line(p: dict[str, Any]) -> str:
    if not p["present"]:
        return f"{p['directory']}: missing (run 'pycudamlx ptx build')"
    if p["problems"]["manifest"]:
        return f"UNUSABLE: {p['problems']['manifest'][0]} (run 'pycudamlx ptx verify')"
    state = "verify ok" if p["verify_ok"] else "VERIFY FAILED: " + _problem_summary(p["problems"])
    return (f"{p['directory']}: {p['modules']} modules (NVRTC {p['nvrtc_version']}, PTX ISA "
            f"{p['ptx_isa']}, {p['arch']}), {format_bytes(p['size_bytes'])}, {state}")


def _problem_summary(problems: dict[str, list[str]]) -> str:
    parts = [f"{len(v)} {k.replace('_', ' ')}" for k, v in problems.items() if v]
    return ", ".join(parts) + " (run 'pycudamlx ptx verify')"


# ------------------------------------------------------------------------------------------------
# smoke


def _parse_sizes(ctx: click.Context, param: click.Parameter, value: str | None
                 ) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        sizes = tuple(int(s) for s in value.split(",") if s.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of element counts")
    if not sizes or any(s < 1 for s in sizes):
        raise click.BadParameter("sizes must be positive element counts, e.g. 1,1000003")
    return sizes


@main.command("smoke")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (docs/cli.md).")
@click.option("--device", "devices", type=int, multiple=True, metavar="N",
              help="Only this GPU (repeatable). Default: every GPU.")
@click.option("--require-gpu", is_flag=True,
              help="Exit 1 when no GPU is usable, instead of running the CPU check.")
@click.option("--sizes", callback=_parse_sizes, metavar="N,N,...",
              help="Element counts per op (default: 1, 1000003 and 256 MiB of float32).")
@click.option("--single-pass", type=click.Choice(["default", "kernels_ptx"]), hidden=True,
              help="Run only one GPU pass in this process (used for the kernels_ptx subprocess).")
def smoke_cmd(as_json: bool, devices: tuple[int, ...], require_gpu: bool,
              sizes: tuple[int, ...] | None, single_pass: str | None) -> None:
    """Check copy, memset, fill, add and mul on each GPU against numpy; time them.

    The ops run twice: with the normal kernel lookup, then in a fresh process with NVRTC
    disabled and an empty kernel cache, so the shipped kernels_ptx/ are checked too. Without a
    GPU, the CPU backend's check runs instead (exit 0, or 1 with --require-gpu).
    """
    reason = driver.unavailable_reason()
    if reason is not None:
        if require_gpu:
            raise click.ClickException(f"{reason} (--require-gpu)")
        if devices:
            raise click.BadParameter(
                f"GPU {devices[0]} does not exist: no GPU is usable here ({reason})",
                param_hint="'--device'")
        if not as_json:
            click.echo(reason)
            click.echo("Running the CPU backend's check (numpy) instead.")
        _finish_smoke([smoke.cpu_pass(sizes or smoke.CPU_SIZES)], reason, as_json)
        return
    count = driver.device_count()
    for i in devices:
        if not 0 <= i < count:
            raise click.BadParameter(
                f"GPU {i} does not exist: this machine has {count} CUDA device"
                f"{'s' if count != 1 else ''} (valid: 0..{count - 1})", param_hint="'--device'")
    chosen = sorted(set(devices)) if devices else list(range(count))
    gpu_sizes = sizes or smoke.GPU_SIZES
    if single_pass is not None:
        _finish_smoke(smoke.gpu_passes(chosen, single_pass, gpu_sizes), None, as_json)
        return
    passes = smoke.gpu_passes(chosen, "default", gpu_sizes)
    if not as_json:
        _print_smoke(passes)
        click.echo("\nRepeating in a fresh process with NVRTC disabled and an empty kernel cache "
                   "(the kernels_ptx path)...")
    ptx_passes = smoke.kernels_ptx_passes_in_subprocess(chosen, gpu_sizes)
    if not as_json:
        _print_smoke(ptx_passes)
    _finish_smoke(passes + ptx_passes, None, as_json, printed=True)


def _finish_smoke(passes: list[smoke.Pass], reason: str | None, as_json: bool,
                  printed: bool = False) -> None:
    """Print the JSON document or the table and verdict; exit 1 unless every pass is ok."""
    doc = smoke.report(passes, reason)
    if as_json:
        _echo_json(doc)
    else:
        if not printed:
            _print_smoke(passes)
        _smoke_verdict(passes)
    if not doc["ok"]:
        click.get_current_context().exit(1)


def _print_smoke(passes: Sequence[smoke.Pass]) -> None:
    header = f"{'device':<8}{'path':<13}{'op':<8}{'size':>11}  {'result':<8}{'time':>11}{'GB/s':>9}"
    for p in passes:
        if p.device is None:
            title = "The CPU backend's check (numpy, against float64 arithmetic)"
        else:
            sources = ", ".join(f"{k} {v}" for k, v in sorted(p.kernel_sources.items()))
            title = (f"GPU {p.device} ({p.device_name}), {p.path} kernel lookup"
                     + (f"; modules loaded from: {sources}" if sources else ""))
        click.echo(f"\n{title}")
        if p.error:
            click.echo(f"  FAIL: {p.error}")
        if not p.results:
            continue
        click.echo(header)
        for r in p.results:
            dev = "cpu" if p.device is None else str(p.device)
            t = _format_ms(r.time_ms)
            bw = f"{r.gb_per_s:.1f}" if r.gb_per_s is not None else "-"
            click.echo(f"{dev:<8}{p.path:<13}{r.op:<8}{r.size:>11}  {r.status:<8}{t:>11}{bw:>9}")
            if r.detail and r.status != "ok":
                click.echo(f"{'':<8}  {r.detail}")


def _format_ms(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def _smoke_verdict(passes: Sequence[smoke.Pass]) -> None:
    bad = [p for p in passes if not p.ok]
    if bad:
        click.echo(f"\nsmoke: FAIL ({len(bad)} of {len(passes)} passes failed)")
    else:
        click.echo(f"\nsmoke: ok ({len(passes)} pass{'es' if len(passes) != 1 else ''})")


# ------------------------------------------------------------------------------------------------
# cache


_dir_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="The cache directory (default: $PYCUDAMLX_CACHE_DIR, else $XDG_CACHE_HOME/pycudamlx, "
         "else ~/.cache/pycudamlx).")


@main.group("cache")
def cache_group() -> None:
    """The on-disk kernel cache: show, clear, or fill it ahead of time."""


@cache_group.command("info")
@_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (docs/cli.md).")
def cache_info(directory: Path | None, as_json: bool) -> None:
    """Where the cache is, whether it is usable, how many entries it holds."""
    doc = diagnostics.cache_info(directory)
    if as_json:
        _echo_json({"schema": "pycudamlx-cache-info/1", **doc})
    else:
        _print_rows([("Kernel cache", _cache_line(doc))])
    _exit_if_broken(doc)


@cache_group.command("clear")
@_dir_option
def cache_clear(directory: Path | None) -> None:
    """Delete every cached kernel (only the cache's own files)."""
    kc = cache_mod.KernelCache(directory)
    removed, failures = kc.clear_with_failures()
    if failures:
        path, why = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise click.ClickException(
            f"could not remove {len(failures)} of {len(failures) + removed} files from "
            f"{kc.directory} ({removed} removed): {path}: {why}{more}")
    click.echo(f"Removed {removed} entr{'y' if removed == 1 else 'ies'} from {kc.directory}")


def _parse_archs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
                 ) -> tuple[int, ...]:
    out = []
    for v in values:
        try:
            out.append(compiler.parse_arch(v))
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return tuple(dict.fromkeys(out))


@cache_group.command("warm")
@click.option("--arch", "archs", multiple=True, callback=_parse_archs, metavar="sm_XY",
              help="A GPU architecture to compile for (repeatable). Default: the local GPUs.")
@_dir_option
@click.option("--dtypes", "dtype_set", type=click.Choice(["all", "common", "uncommon"]),
              default="all", show_default=True,
              help="The modules for every dtype, for the common dtypes (those kernels_ptx/ "
                   "ships), or only the modules kernels_ptx/ does not ship.")
@click.option("--only", "patterns", multiple=True, metavar="GLOB",
              help="Only the modules whose name matches (repeatable), e.g. 'binary.add.*'.")
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Parallel NVRTC compiles (default: the number of CPUs).")
def cache_warm(archs: tuple[int, ...], directory: Path | None, dtype_set: str,
               patterns: tuple[str, ...], jobs: int | None) -> None:
    """Compile the built-in kernels with NVRTC into the cache (no GPU needed).

    Fill a cache on a connected machine, copy it to an offline one and point
    PYCUDAMLX_CACHE_DIR at it there.
    """
    nv = nvrtc.get_nvrtc()
    if not archs:
        reason = driver.unavailable_reason()
        if reason is not None:
            raise click.UsageError(
                f"{reason} Name the architectures to compile for, e.g. "
                "'pycudamlx cache warm --arch sm_80 --arch sm_90'.")
        archs = tuple(dict.fromkeys(
            driver.get_device(i).properties.compute_capability[0] * 10
            + driver.get_device(i).properties.compute_capability[1]
            for i in range(driver.device_count())))
    for cc in archs:
        try:
            compiler._target(nv, cc)
        except nvrtc.KernelCompileError as exc:
            raise click.BadParameter(exc.log, param_hint="'--arch'") from None
    kc = cache_mod.KernelCache(directory)
    kc.ensure_directory()
    modules = every = _warm_modules(dtype_set)
    if patterns:
        modules = [s for s in modules if any(fnmatch.fnmatchcase(s.name, g) for g in patterns)]
        if not modules:
            raise click.BadParameter(_no_match(dtype_set, patterns, every), param_hint="'--only'")
    work = [(spec, cc) for cc in archs for spec in modules]
    arch_names = ", ".join(f"sm_{cc}" for cc in archs)
    log.info("warming %s with %d modules for %s (NVRTC %s)", kc.directory, len(modules),
             arch_names, nv.version_string)
    compiled = cached = 0
    with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool, \
            _progress(len(work), f"Compiling for {arch_names}") as bar:
        futures = [pool.submit(compiler.warm, spec, cc, nv, kc) for spec, cc in work]
        try:
            for fut in concurrent.futures.as_completed(futures):
                if fut.result():
                    compiled += 1
                else:
                    cached += 1
                bar.update(1)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    click.echo(f"Warmed {kc.directory} for {arch_names} with NVRTC {nv.version_string}: "
               f"{len(modules)} modules per arch, {compiled} compiled, {cached} already cached; "
               f"the cache holds {len(kc.entries())} entries ({format_bytes(kc.size_bytes())}).")


def _no_match(dtype_set: str, patterns: Sequence[str], specs: Sequence[registry.ModuleSpec]
              ) -> str:
    """Why --only matched nothing, with the module names it may have meant."""
    names = [s.name for s in specs]
    guesses: list[str] = []
    for pattern in patterns:
        parts = pattern.split(".")
        # each dot-separated part as a prefix: binary.mul.float32 -> binary.multiply.float32
        prefixed = [n for n in names if len(n.split(".")) == len(parts) and all(
            seg == p or (i > 0 and fnmatch.fnmatchcase(seg, f"{p}*"))
            for i, (seg, p) in enumerate(zip(n.split("."), parts)))]
        guesses += prefixed or difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
    guesses = list(dict.fromkeys(guesses))[:5]
    hint = f" Did you mean {' or '.join(guesses)}?" if guesses else ""
    return (f"no {dtype_set!r} module matches {' or '.join(patterns)}. Module names are "
            "FAMILY.OP.DTYPE with the op's full MLX name, e.g. binary.multiply.float32, "
            f"unary.exp.float16, copy.float32.int32 (globs allowed: 'binary.*.float32').{hint}")


def _warm_modules(dtype_set: str) -> list[registry.ModuleSpec]:
    """The built-in modules `cache warm --dtypes` names."""
    if dtype_set == "common":
        return registry.builtin_modules(registry.COMMON_DTYPES)
    every = registry.builtin_modules(registry.ALL_DTYPES)
    if dtype_set == "all":
        return every
    shipped = {spec.name for spec in registry.shipped_modules(registry.COMMON_DTYPES)}
    return [spec for spec in every if spec.name not in shipped]


# ------------------------------------------------------------------------------------------------
# ptx


@main.group("ptx")
def ptx_group() -> None:
    """The precompiled PTX in kernels_ptx/ (used when NVRTC is missing or disabled)."""


@ptx_group.command("build")
@click.option("--nvrtc-dir", required=True,
              type=click.Path(exists=True, path_type=Path),
              help="A directory holding NVRTC 12.0's libnvrtc.so.12 (scripts/fetch-nvrtc-12.0.sh "
                   "fetches it), or the library file itself.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write (default: the kernels_ptx/ this package uses).")
@click.option("--allow-other-nvrtc", is_flag=True,
              help="Build with an NVRTC other than 12.0 (its PTX may not load on older drivers; "
                   "ptx verify will flag it).")
def ptx_build(nvrtc_dir: Path, out_dir: Path | None, allow_other_nvrtc: bool) -> None:
    """Compile every built-in kernel for the common dtypes to PTX (compute_70) with NVRTC 12.0."""
    nv = nvrtc.CtypesNvrtc(str(nvrtc_dir))
    if nv.version_string != ptxstore.EXPECTED_NVRTC and not allow_other_nvrtc:
        raise click.ClickException(
            f"{getattr(nv, 'path', nvrtc_dir)} is NVRTC {nv.version_string}, not "
            f"{ptxstore.EXPECTED_NVRTC}: its PTX (a newer ISA than {ptxstore.EXPECTED_ISA}) would "
            "not load on older CUDA 12 drivers. Point --nvrtc-dir at NVRTC 12.0 "
            "(scripts/fetch-nvrtc-12.0.sh DIR), or pass --allow-other-nvrtc.")
    out = out_dir if out_dir is not None else ptxstore.ptx_dir()
    try:  # fail now, not after minutes of compiling
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(f"cannot create {out}: {exc.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise click.ClickException(f"cannot write to {out}: permission denied")
    modules = registry.shipped_modules()
    log.info("building %d modules into %s with NVRTC %s (%s)", len(modules), out,
             nv.version_string, getattr(nv, "path", ""))
    with _progress(len(modules), "Compiling PTX") as bar:
        manifest = ptxstore.build(nv, out, modules, progress=lambda spec: bar.update(1))
    size = sum(f.stat().st_size for f in out.glob("*.ptx.gz"))
    click.echo(f"Wrote {len(manifest.modules)} modules to {out} (NVRTC {manifest.nvrtc_version}, "
               f"PTX ISA {manifest.ptx_isa}, {manifest.arch}), {format_bytes(size)}")
    if manifest.ptx_isa != ptxstore.EXPECTED_ISA:
        log.warning("the PTX is ISA %s, not %s: 'ptx verify' will fail", manifest.ptx_isa,
                    ptxstore.EXPECTED_ISA)


@ptx_group.command("verify")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="The kernels_ptx directory (default: the one this package uses).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (docs/cli.md).")
def ptx_verify(directory: Path | None, as_json: bool) -> None:
    """Check kernels_ptx/ against the kernel sources and each file against its digest; exit 1
    when anything is stale, missing, corrupt or the manifest is malformed."""
    d = directory if directory is not None else ptxstore.ptx_dir()
    report = ptxstore.verify(d)
    problems = diagnostics.verify_problems(report)
    if as_json:
        _echo_json({"schema": "pycudamlx-ptx-verify/1", "directory": str(d), "ok": report.ok,
                    "problems": problems})
    elif report.ok:
        n = len(registry.shipped_modules())
        click.echo(f"kernels_ptx is current: {n} modules in {d} match the kernel sources and "
                   "their digests.")
    elif report.manifest:
        click.echo(f"kernels_ptx is unusable: {report.manifest[0]}. {ptxstore.REPAIR}")
    else:
        click.echo(f"kernels_ptx in {d} does not match the kernel sources or its manifest:")
        for kind, names in problems.items():
            for name in names:
                click.echo(f"  {kind.replace('_', ' ')}: {name}")
        click.echo(ptxstore.REPAIR)
    if not report.ok:
        click.get_current_context().exit(1)


# ------------------------------------------------------------------------------------------------
# run


@main.command("run", context_settings={"ignore_unknown_options": True,
                                       "allow_interspersed_args": False})
@click.option("-m", "module", metavar="MODULE",
              help="Run a module as `python -m MODULE` does (e.g. mlx_lm, pytest) instead of a "
                   "script; then every argument goes to it.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run_cmd(module: str | None, args: tuple[str, ...]) -> None:
    """Run an MLX script (SCRIPT ARGS...) or module (-m MODULE ARGS...) unchanged: its `mlx`
    imports are served by pycudamlx (docs/running-mlx-scripts.md). ARGS go to it as
    sys.argv[1:]."""
    import traceback

    from . import mlx_compat

    if module is None:
        if not args:
            raise click.UsageError("give a script to run, or -m MODULE")
        script, args = args[0], args[1:]
        if not os.path.isfile(script):
            raise click.ClickException(f"No such script: {script}")
    try:
        if module is None:
            mlx_compat.run_script(script, list(args))
        else:
            mlx_compat.run_module(module, list(args))
    except mlx_compat.NoSuchModule as exc:
        raise click.ClickException(str(exc)) from None
    except Exception:  # the program's own error: a normal traceback and exit status 1
        traceback.print_exc()
        raise click.exceptions.Exit(1) from None


# ------------------------------------------------------------------------------------------------
# launch


@main.command("launch", context_settings={"ignore_unknown_options": True,
                                          "allow_interspersed_args": False})
@click.option("-n", "--ranks", "ranks", type=int, default=1, show_default=True,
              help="Ranks to start (on each host of --hostfile).")
@click.option("--backend", type=click.Choice(["any", "mpi"]), default="any", show_default=True,
              help="The communication backend of the ranks (MPI: the only one here).")
@click.option("--hostfile", type=click.Path(dir_okay=False), default=None,
              help="mlx.launch's JSON hostfile: a list of {\"ssh\": host, ...}; the MPI "
                   "launcher reaches them over ssh.")
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE",
              help="Set a variable in every rank (repeatable).")
@click.option("--mpi-arg", "mpi_args", multiple=True, metavar="ARG",
              help="Pass ARG to mpiexec (repeatable).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="The Python the ranks run (default: this one).")
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def launch_cmd(ranks: int, backend: str, hostfile: str | None, env: tuple[str, ...],
               mpi_args: tuple[str, ...], python: str | None, dry_run: bool,
               args: tuple[str, ...]) -> None:
    """Run SCRIPT ARGS... (or -m MODULE ARGS...) as N ranks of one mx.distributed job, as
    mlx.launch does: output prefixed with the rank, one GPU per rank, every rank stopped when
    one fails (docs/distributed.md)."""
    from .distributed import launch as launcher

    if not args:
        raise click.UsageError("give a script to run: pycudamlx launch -n N script.py [args]")
    if args[0] != "-m" and not os.path.isfile(args[0]):
        raise click.ClickException(f"No such script: {args[0]}")
    try:
        hosts = launcher.read_hostfile(hostfile) if hostfile else None
        if dry_run:
            p = launcher.plan(ranks, args, hosts=hosts, env=env, python=python,
                              mpi_args=mpi_args)
            click.echo(" ".join(p.command))
            return
        code = launcher.launch(ranks, args, hosts=hosts, env=env, python=python,
                               mpi_args=mpi_args)
    except launcher.LaunchError as exc:
        raise click.ClickException(str(exc)) from None
    raise click.exceptions.Exit(code)


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="pycudamlx")
