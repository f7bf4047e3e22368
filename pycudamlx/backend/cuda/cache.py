"""The on-disk kernel cache: compiled images keyed by everything that could change them.

Entries are written atomically (a temp file in the same directory, then ``os.replace``) and carry a
SHA-256 of their payload, so a reader never sees a partial file and a corrupt or truncated entry is
a miss that gets rebuilt. The directory is created 0700; one that other users can write is refused,
because code from it runs on the GPU.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

from ... import _env

log = logging.getLogger(__name__)

_MAGIC = b"PYCUDAMLX-KERNEL-1\n"
#: Entries live in subdirectories named by the first two hex digits of their key.
_SUBDIR_GLOB = "[0-9a-f][0-9a-f]"


class CacheDirError(RuntimeError):
    """The cache directory cannot be used (not creatable, not writable, or unsafe)."""


@dataclass(frozen=True)
class CacheEntry:
    image: bytes
    kind: str                 # "cubin" or "ptx"
    lowered: dict[str, str]   # name expression -> mangled symbol


def default_cache_dir() -> Path:
    """$PYCUDAMLX_CACHE_DIR, else $XDG_CACHE_HOME/pycudamlx, else ~/.cache/pycudamlx."""
    if _env.CACHE_DIR:
        return Path(_env.CACHE_DIR).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pycudamlx"


def cache_key(*parts: str) -> str:
    """A hex SHA-256 over the parts (source, options, NVRTC version, arch, package version)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class KernelCache:
    """A directory of compiled kernel images. Thread- and process-safe; never raises on a miss."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self._checked = False
        self._usable = False
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- directory safety ----------------------------------------------------------------------

    def ensure_directory(self) -> None:
        """Create the directory (0700) or check an existing one; CacheDirError when unusable."""
        d = self.directory
        try:
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"cannot create the kernel cache directory {d}: {exc.strerror}. "
                                "Set PYCUDAMLX_CACHE_DIR to a writable directory.") from None
        try:
            st = d.stat()
        except OSError as exc:
            raise CacheDirError(f"cannot read the kernel cache directory {d}: {exc}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise CacheDirError(f"the kernel cache path {d} is not a directory")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise CacheDirError(
                f"refusing the kernel cache directory {d}: other users can write to it "
                f"(mode {stat.S_IMODE(st.st_mode):o}), and code from it would run on the GPU. "
                f"Run 'chmod 700 {d}' or set PYCUDAMLX_CACHE_DIR to a private directory.")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise CacheDirError(
                f"refusing the kernel cache directory {d}: it belongs to another user "
                f"(uid {st.st_uid}); set PYCUDAMLX_CACHE_DIR to a directory of your own.")
        if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
            raise CacheDirError(f"the kernel cache directory {d} is not readable and writable; "
                                "set PYCUDAMLX_CACHE_DIR to a writable directory.")

    def usable(self) -> bool:
        """Whether the cache can be used; warns once (then runs without it) when it cannot."""
        if not self._checked:
            with self._lock:
                if not self._checked:
                    try:
                        self.ensure_directory()
                        self._usable = True
                    except CacheDirError as exc:
                        warnings.warn(f"{exc} Compiled kernels will not be cached.",
                                      RuntimeWarning, stacklevel=3)
                        self._usable = False
                    self._checked = True
        return self._usable

    # -- entries -------------------------------------------------------------------------------

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.bin"

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Keys of the stored entries that start with ``prefix`` (at least two characters)."""
        if not self.usable():
            return []
        return sorted(p.stem for p in (self.directory / prefix[:2]).glob(f"{prefix}*.bin"))

    def get(self, key: str) -> CacheEntry | None:
        if not self.usable():
            return None
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        entry, problem = decode_entry(data)
        if entry is None:
            log.warning("kernel cache entry %s is corrupt (%s); it will be rebuilt", path, problem)
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: CacheEntry) -> bool:
        """Store an entry atomically; returns False (and logs) when the disk refuses."""
        if not self.usable():
            return False
        path = self.path_for(key)
        data = _encode(entry)
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            log.warning("could not write kernel cache entry %s: %s", path, exc)
            return False
        return True

    # -- maintenance ---------------------------------------------------------------------------

    def entries(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob(f"{_SUBDIR_GLOB}/*.bin"))

    def size_bytes(self) -> int:
        total = 0
        for p in self.entries():
            try:
                total += p.stat().st_size
            except OSError:
                pass
        return total

    def clear(self) -> int:
        """Delete every entry (and stale temp files); returns how many entries were removed."""
        return self.clear_with_failures()[0]

    def clear_with_failures(self) -> tuple[int, list[tuple[Path, str]]]:
        """Delete every entry (and stale temp files): (entries removed, [(path, why) not removed])."""
        removed = 0
        failures: list[tuple[Path, str]] = []
        if not self.directory.is_dir():
            return 0, failures
        # Only what put() writes (*.bin and .tmp-* files in hex-named subdirectories), so a --dir
        # pointed at the wrong directory by mistake does not lose the files that live there.
        subdirs = [s for s in self.directory.glob(_SUBDIR_GLOB) if s.is_dir()]
        for sub in subdirs:
            for p in list(sub.glob("*.bin")) + list(sub.glob(".tmp-*")):
                try:
                    p.unlink()
                    if p.suffix == ".bin":
                        removed += 1
                except FileNotFoundError:  # removed meanwhile by another process
                    pass
                except OSError as exc:
                    log.debug("could not remove %s: %s", p, exc)
                    failures.append((p, exc.strerror or str(exc)))
        for sub in subdirs:
            try:
                sub.rmdir()
            except OSError:
                pass
        return removed, failures

    def scan(self) -> tuple[int, list[tuple[Path, str]]]:
        """(entries, [(corrupt entry, problem)]): every ``*.bin`` counted whatever its state; a
        corrupt, truncated, foreign or unreadable one is listed (the runtime rebuilds it on next
        use)."""
        paths = self.entries()
        corrupt = []
        for p in paths:
            try:
                data = p.read_bytes()
            except OSError as exc:
                corrupt.append((p, f"unreadable: {exc.strerror or exc}"))
                continue
            problem = decode_entry(data)[1]
            if problem is not None:
                corrupt.append((p, problem))
        return len(paths), corrupt

    def probe_writable(self) -> str | None:
        """Why the directory cannot be created or written, found by trying (a temporary file or
        directory, removed at once; nothing is left behind), or None when it can."""
        d = self.directory
        if d.exists():
            if not d.is_dir():
                return f"the kernel cache path {d} is not a directory"
            try:
                fd, tmp = tempfile.mkstemp(prefix=".tmp-probe-", dir=d)
            except OSError as exc:
                return (f"the kernel cache directory {d} is not writable ({exc.strerror}); set "
                        "PYCUDAMLX_CACHE_DIR to a writable directory.")
            os.close(fd)
            os.unlink(tmp)
            return None
        ancestor = d.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        why = None
        if not ancestor.is_dir():
            why = f"{ancestor} is not a directory"
        else:
            try:
                os.rmdir(tempfile.mkdtemp(prefix=".pycudamlx-probe-", dir=ancestor))
            except OSError as exc:
                why = f"nothing can be made in {ancestor} ({exc.strerror})"
        if why is None:
            return None
        return (f"the kernel cache directory {d} cannot be created: {why}. Set "
                "PYCUDAMLX_CACHE_DIR to a writable directory.")


def _encode(entry: CacheEntry) -> bytes:
    meta = json.dumps({"kind": entry.kind, "lowered": entry.lowered}, sort_keys=True).encode()
    payload = len(meta).to_bytes(4, "little") + meta + entry.image
    digest = hashlib.sha256(payload).hexdigest().encode()
    return _MAGIC + digest + b"\n" + len(payload).to_bytes(8, "little") + payload


def _decode(data: bytes) -> CacheEntry | None:
    """Parse an entry; None for anything truncated, corrupt or of another format."""
    return decode_entry(data)[0]


def decode_entry(data: bytes) -> tuple[CacheEntry | None, str | None]:
    """(entry, None), or (None, what is wrong with it) for a truncated, corrupt or foreign file."""
    if not data.startswith(_MAGIC):
        return None, "not a pycudamlx kernel cache entry (no magic line)"
    pos = len(_MAGIC)
    digest = data[pos:pos + 64]
    pos += 65
    if len(data) < pos + 8:
        return None, f"truncated ({len(data)} bytes, shorter than the header)"
    size = int.from_bytes(data[pos:pos + 8], "little")
    payload = data[pos + 8:]
    if len(payload) != size:
        return None, (f"truncated ({len(payload)} of {size} payload bytes)" if len(payload) < size
                      else f"{len(payload) - size} bytes of trailing garbage")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None, "checksum mismatch"
    try:
        meta_len = int.from_bytes(payload[:4], "little")
        meta = json.loads(payload[4:4 + meta_len])
        return CacheEntry(payload[4 + meta_len:], meta["kind"], dict(meta["lowered"])), None
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"metadata unreadable ({type(exc).__name__})"
