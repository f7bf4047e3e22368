"""The on-disk kernel cache: corruption, concurrency, unusable and unsafe directories, keys."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from pycudamlx.backend.cuda import cache as cache_mod
from pycudamlx.backend.cuda import compiler, registry
from pycudamlx.backend.cuda.cache import CacheDirError, CacheEntry, KernelCache, cache_key

from conftest import require_nvrtc


def _entry(n: int = 4096, seed: int = 0) -> CacheEntry:
    """An entry whose image is ``n`` deterministic, non-repeating bytes."""
    image = b"".join(hashlib.sha256(f"{seed}:{i}".encode()).digest() for i in range(n // 32 + 1))
    return CacheEntry(image[:n], "cubin", {f"k<{seed}>": f"_Z1kILi{seed}EEvv"})


def _key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest() + "-nvrtc13.0"


# --------------------------------------------------------------------------------------------------
# Entries


def test_round_trip(tmp_path):
    kc = KernelCache(tmp_path / "c")
    assert kc.get(_key(1)) is None
    assert kc.put(_key(1), _entry(seed=1))
    assert kc.get(_key(1)) == _entry(seed=1)
    assert (kc.hits, kc.misses) == (1, 1)
    assert kc.entries() == [kc.path_for(_key(1))]
    assert kc.size_bytes() == kc.path_for(_key(1)).stat().st_size


@pytest.mark.parametrize("where", ["magic", "digest", "length", "meta", "image", "last"])
def test_corrupt_entry_is_a_miss_and_gets_rebuilt(tmp_path, where, caplog):
    kc = KernelCache(tmp_path)
    kc.put(_key(1), _entry(seed=1))
    path = kc.path_for(_key(1))
    data = bytearray(path.read_bytes())
    magic = len(cache_mod._MAGIC)
    offset = {"magic": 0, "digest": magic + 3, "length": magic + 66, "meta": magic + 65 + 8 + 6,
              "image": len(data) // 2, "last": len(data) - 1}[where]
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))
    assert kc.get(_key(1)) is None
    assert f"kernel cache entry {path} is corrupt (" in caplog.text  # the file and the problem
    problem = cache_mod.decode_entry(bytes(data))[1]
    expected = {"magic": "not a pycudamlx kernel cache entry (no magic line)",
                "length": "truncated ("}.get(where, "checksum mismatch")
    assert problem is not None and problem.startswith(expected) and problem in caplog.text
    assert kc.put(_key(1), _entry(seed=1))  # what the compiler does after a miss
    assert kc.get(_key(1)) == _entry(seed=1)


def test_truncated_entries_are_misses(tmp_path):
    kc = KernelCache(tmp_path)
    kc.put(_key(1), _entry(seed=1))
    path = kc.path_for(_key(1))
    full = path.read_bytes()
    magic = len(cache_mod._MAGIC)
    for cut in sorted({0, 1, magic - 1, magic, magic + 40, magic + 65, magic + 70, magic + 73,
                       len(full) // 2, len(full) - 1}):
        path.write_bytes(full[:cut])
        assert kc.get(_key(1)) is None, f"truncated at {cut} of {len(full)} bytes"
    path.write_bytes(full + b"x")  # trailing garbage is corruption too
    assert kc.get(_key(1)) is None
    path.write_bytes(full)
    assert kc.get(_key(1)) == _entry(seed=1)


def test_a_foreign_file_is_a_miss(tmp_path):
    kc = KernelCache(tmp_path)
    path = kc.path_for(_key(2))
    path.parent.mkdir(mode=0o700)
    path.write_bytes(b"\x7fELF not ours")
    assert kc.get(_key(2)) is None


def test_corrupt_entry_is_rebuilt_by_the_compiler(tmp_path):
    nv = require_nvrtc()
    kc = KernelCache(tmp_path)
    spec = registry.copy_module("float32", "float32")
    cc = 80
    assert compiler.warm(spec, cc, nv, kc) is True
    key = compiler._full_key(compiler._base_key(spec, cc), nv.version_string)
    path = kc.path_for(key)
    good = kc.get(key)
    assert good is not None and good.kind == "cubin"
    path.write_bytes(path.read_bytes()[:-100])  # truncated, as after a crash without atomic writes
    assert kc.get(key) is None
    assert compiler.warm(spec, cc, nv, kc) is True  # a miss: compiled again
    assert kc.get(key) == good
    assert compiler.warm(spec, cc, nv, kc) is False  # now a hit


# --------------------------------------------------------------------------------------------------
# Several processes at once


def _hammer(directory: str, worker: int, seconds: float) -> tuple[int, int, int]:
    """Write and read the same keys as the other workers; count reads of a partial file."""
    kc = KernelCache(directory)
    expected = [_entry(512 * 1024 + j * 4099, seed=j) for j in range(6)]
    reads = partial = writes = 0
    deadline = time.monotonic() + seconds
    i = worker
    while time.monotonic() < deadline:
        kc.put(_key(i % 6), expected[i % 6])
        writes += 1
        for j in range(6):
            try:
                data = kc.path_for(_key(j)).read_bytes()
            except FileNotFoundError:
                continue
            reads += 1
            if cache_mod._decode(data) != expected[j]:
                partial += 1
        i += 1
    return reads, partial, writes


def test_concurrent_processes_never_read_a_partial_file(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(_hammer, [(str(tmp_path), w, 2.0) for w in range(4)])
    reads = sum(r for r, _, _ in results)
    partial = sum(p for _, p, _ in results)
    writes = sum(w for _, _, w in results)
    assert writes > 20 and reads > 100, results
    assert partial == 0, f"{partial} of {reads} reads saw a partial or corrupt file"
    # No temp file is left behind, and every entry is whole.
    assert not list(tmp_path.glob("*/.tmp-*"))
    kc = KernelCache(tmp_path)
    for j in range(6):
        assert kc.get(_key(j)) == _entry(512 * 1024 + j * 4099, seed=j)


# --------------------------------------------------------------------------------------------------
# Unusable and unsafe directories


@contextlib.contextmanager
def _read_only(directory: Path):
    """Make ``directory`` unwritable, also for root (who ignores mode bits): chattr +i."""
    directory.chmod(0o500)
    immutable = False
    try:
        if os.access(directory, os.W_OK):  # root
            chattr = shutil.which("chattr")
            if chattr is None or subprocess.run([chattr, "+i", str(directory)],
                                                capture_output=True).returncode != 0:
                pytest.skip("running as root, and chattr +i is unavailable here: root can "
                            "write to any directory, so there is no read-only one to test")
            immutable = True
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=False)
        directory.chmod(0o700)


def test_read_only_directory_is_refused_with_a_warning_and_never_raises(tmp_path):
    d = tmp_path / "ro"
    d.mkdir(mode=0o700)
    with _read_only(d):
        with pytest.raises(CacheDirError, match="not readable and writable"):
            KernelCache(d).ensure_directory()
        kc = KernelCache(d)
        with pytest.warns(RuntimeWarning, match="PYCUDAMLX_CACHE_DIR"):
            assert kc.usable() is False
        assert kc.get(_key(1)) is None
        assert kc.put(_key(1), _entry()) is False
        assert list(d.iterdir()) == []


def test_uncreatable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheDirError, match="cannot create the kernel cache directory"):
        KernelCache(blocker / "cache").ensure_directory()
    with pytest.raises(CacheDirError):
        KernelCache(blocker).ensure_directory()


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o720, 0o702])
def test_group_or_world_writable_directory_is_refused_with_a_warning(tmp_path, mode):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    with pytest.raises(CacheDirError, match="other users can write"):
        KernelCache(d).ensure_directory()
    kc = KernelCache(d)
    with pytest.warns(RuntimeWarning, match=f"chmod 700 {d}"):
        assert kc.usable() is False
    assert kc.put(_key(1), _entry()) is False
    assert kc.get(_key(1)) is None
    assert list(d.iterdir()) == []


def test_a_directory_of_another_user_is_refused(tmp_path):
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    with pytest.raises(CacheDirError, match="belongs to another user"):
        KernelCache(d).ensure_directory()


def test_a_new_directory_and_its_subdirectories_are_private(tmp_path):
    d = tmp_path / "a" / "b" / "cache"
    kc = KernelCache(d)
    kc.ensure_directory()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    kc.put(_key(1), _entry())
    assert stat.S_IMODE(kc.path_for(_key(1)).parent.stat().st_mode) == 0o700


def test_clear_removes_only_the_caches_own_files(tmp_path):
    kc = KernelCache(tmp_path)
    for i in range(3):
        kc.put(_key(i), _entry(seed=i))
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "zz").mkdir()
    (tmp_path / "zz" / "x.bin").write_text("not hex-named: not the cache's")
    sub = kc.path_for(_key(0)).parent
    (sub / "keep.txt").write_text("mine too")
    assert kc.clear() == 3
    assert kc.entries() == []
    assert (tmp_path / "notes.txt").exists() and (tmp_path / "zz" / "x.bin").exists()
    assert (sub / "keep.txt").exists()


def test_default_directory_follows_the_environment(monkeypatch, tmp_path):
    from pycudamlx import _env

    monkeypatch.setattr(_env, "CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_mod.default_cache_dir() == tmp_path / "explicit"
    monkeypatch.setattr(_env, "CACHE_DIR", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_mod.default_cache_dir() == tmp_path / "xdg" / "pycudamlx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_mod.default_cache_dir() == tmp_path / "home" / ".cache" / "pycudamlx"


# --------------------------------------------------------------------------------------------------
# Keys


def test_cache_key_depends_on_every_part_and_their_boundaries():
    parts = ["source", "-std=c++17", "13.0", "sm_90", "0.1.0"]
    base = cache_key(*parts)
    for i in range(len(parts)):
        changed = list(parts)
        changed[i] += "x"
        assert cache_key(*changed) != base, f"part {i} does not change the key"
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("a") == cache_key("a")


def test_compiler_key_changes_with_source_options_arch_nvrtc_and_package(monkeypatch):
    spec = registry.copy_module("float32", "float32")
    other = registry.copy_module("float32", "int32")
    base = compiler._base_key(spec, 90)
    key = compiler._full_key(base, "13.0")
    assert compiler._base_key(spec, 90) == base  # stable
    variants = {
        "source": compiler._full_key(compiler._base_key(other, 90), "13.0"),
        "arch": compiler._full_key(compiler._base_key(spec, 80), "13.0"),
        "nvrtc": compiler._full_key(base, "12.9"),
    }
    monkeypatch.setattr(registry, "BUILTIN_OPTIONS", ("-std=c++17", "-lineinfo"))
    variants["options"] = compiler._full_key(compiler._base_key(spec, 90), "13.0")
    monkeypatch.undo()
    monkeypatch.setattr(compiler, "PACKAGE_VERSION", "99.0")
    variants["package"] = compiler._full_key(compiler._base_key(spec, 90), "13.0")
    for part, changed in variants.items():
        assert changed != key, f"the key ignores the {part}"
    assert len(set(variants.values())) == len(variants)
