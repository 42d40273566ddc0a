"""The disk half of the compile cache: checked entries, a size cap, LRU eviction.

Why checked: a cache entry is executable code plus the ABI the runtime trusts (arena size,
shapes, argument order). A corrupted or edited entry used to segfault or abort the next
run, and a `.ll` symlinked to /dev/zero exhausted memory. Now:

* an entry is `<key>.json` (the manifest, written last) plus `<key>.ll` and, when the
  backend can, `<key>.o`; the manifest records each file's size and one `checksum` (sha256)
  over the manifest's other fields and the bytes of every file of the entry;
* files are opened without following symlinks and without blocking (`O_NOFOLLOW |
  O_NONBLOCK`), must be regular files of the recorded size (checked before reading), and
  the checksum is verified before anything is parsed or loaded. Any failure discards the
  whole entry (`CorruptEntry`); the caller rebuilds it.

The checksum detects corruption and edits; it is not a signature (whoever can write the
cache directory can run code as its owner anyway).

Size cap: `RLX_CACHE_MAX_MB` (default `DEFAULT_MAX_MB`); entries are evicted least
recently used first (a hit refreshes the manifest's mtime) until the directory fits. The
directory is scanned only when this process's running estimate of its size (the last scan
plus what it wrote since) nears the cap or the last scan is older than `RESCAN_SECONDS`
(`after_write`): a scan per write made every compile O(entries). Temporary files of interrupted writes are removed when their writer is
gone or they are older than `STALE_TMP_SECONDS`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

FORMAT = 3
DEFAULT_MAX_MB = 2048
"""Default size cap of the disk cache, in MiB (`RLX_CACHE_MAX_MB`)."""
STALE_TMP_SECONDS = 3600.0
SUFFIXES = (".json", ".ll", ".o")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class CorruptEntry(ValueError):
    """A disk entry that must not be used (and is deleted)."""


def max_bytes() -> int:
    """The cap from `RLX_CACHE_MAX_MB` (MiB, a positive number), in bytes."""
    raw = os.environ.get("RLX_CACHE_MAX_MB", "").strip()
    if not raw:
        return DEFAULT_MAX_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = float("nan")
    if not (mb > 0 and mb < 2**43):
        raise ValueError(
            f"RLX_CACHE_MAX_MB must be a positive number of MiB (default {DEFAULT_MAX_MB}), "
            f"got {raw!r}"
        )
    return int(mb * (1 << 20))


def read_regular(path: Path, size: int | None = None) -> bytes:
    """The bytes of `path`, which must be a regular file (no symlink, FIFO, device) and,
    if `size` is given, exactly `size` bytes long (checked before reading)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        raise CorruptEntry(f"{path.name}: cannot open ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorruptEntry(f"{path.name}: not a regular file")
        if size is not None and st.st_size != size:
            raise CorruptEntry(f"{path.name}: {st.st_size} bytes, the manifest says {size}")
        chunks = []
        remaining = st.st_size
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 24))):
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if size is not None and len(data) != size:
            raise CorruptEntry(f"{path.name}: changed while being read")
        return data
    finally:
        os.close(fd)


def checksum(manifest: dict[str, Any], files: dict[str, bytes]) -> str:
    """sha256 over the manifest (without `checksum`) and every file's bytes, by suffix."""
    h = hashlib.sha256()
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    h.update(json.dumps(body, sort_keys=True).encode())
    for suffix in sorted(files):
        h.update(f"\0{suffix}\0{len(files[suffix])}\0".encode())
        h.update(files[suffix])
    return h.hexdigest()


def paths(root: Path, key: str) -> dict[str, Path]:
    d = root / key[:2]
    return {s: d / f"{key}{s}" for s in SUFFIXES}


def write_entry(root: Path, key: str, meta: dict[str, Any], files: dict[str, bytes]) -> None:
    """Write the files of `files` (suffix -> bytes, `.ll` and maybe `.o`), then the manifest."""
    where = paths(root, key)
    where[".json"].parent.mkdir(parents=True, exist_ok=True)
    for suffix, data in files.items():
        _atomic_write(where[suffix], data)
    for suffix in set(SUFFIXES) - set(files) - {".json"}:
        with contextlib.suppress(OSError):
            where[suffix].unlink()  # a stale file of an older entry
    doc = {
        "format": FORMAT,
        "key": key,
        **meta,
        "files": {s: len(b) for s, b in files.items()},
    }
    doc["checksum"] = checksum(doc, files)
    _atomic_write(where[".json"], json.dumps(doc).encode())


def read_entry(root: Path, key: str) -> tuple[dict[str, Any], dict[str, bytes]] | None:
    """(manifest, files) of a verified entry; None if there is none; else `CorruptEntry`."""
    where = paths(root, key)
    if not os.path.lexists(where[".json"]):
        return None
    try:
        doc = json.loads(read_regular(where[".json"]))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise CorruptEntry(f"manifest is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
        raise CorruptEntry("stale or foreign cache entry")
    sizes = doc.get("files")
    if (
        not isinstance(sizes, dict)
        or ".ll" not in sizes
        or not set(sizes) <= set(SUFFIXES) - {".json"}
        or not all(type(n) is int and n >= 0 for n in sizes.values())
    ):
        raise CorruptEntry("manifest lists no valid files")
    files = {s: read_regular(where[s], n) for s, n in sizes.items()}
    if doc.get("checksum") != checksum(doc, files):
        raise CorruptEntry("checksum mismatch")
    with contextlib.suppress(OSError):
        os.utime(where[".json"])  # LRU: last use
    return doc, files


def discard(root: Path, key: str) -> None:
    """Delete every file of the entry (symlinks themselves, never their targets)."""
    for p in paths(root, key).values():
        with contextlib.suppress(OSError):
            p.unlink()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _writer_gone(name: str) -> bool:
    """Whether the process that wrote temp file `name` (`.<file>.<pid>.<tid>.tmp`) is gone."""
    parts = name.split(".")
    try:
        pid = int(parts[-3])
    except (IndexError, ValueError):
        return True
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


RESCAN_SECONDS = 60.0
"""After this long the directory is scanned again (other processes write to it too)."""

_estimates: dict[Path, tuple[int, float]] = {}  # root -> (bytes at the last scan + since, time)


def after_write(root: Path, limit: int, written: int) -> bool:
    """Account `written` new bytes; run `enforce_limit` when the estimate reaches 90 % of
    `limit` or is stale. Returns whether the directory was scanned."""
    now = time.monotonic()
    total, when = _estimates.get(root, (0, -RESCAN_SECONDS))
    total += written
    if total < 0.9 * limit and now - when < RESCAN_SECONDS:
        _estimates[root] = (total, when)
        return False
    _estimates[root] = (enforce_limit(root, limit), now)
    return True


def enforce_limit(root: Path, limit: int) -> int:
    """Remove stale temp files, then evict least recently used entries until the cache
    holds at most `limit` bytes; returns the bytes it then holds. Best effort: concurrent
    writers and readers are fine."""
    now = time.time()
    entries: dict[str, tuple[float, int]] = {}  # key -> (last use, bytes)
    try:
        subdirs = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink()]
    except OSError:
        return 0
    for d in subdirs:
        try:
            listing = list(os.scandir(d))
        except OSError:
            continue
        for e in listing:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if e.name.endswith(".tmp"):
                if now - st.st_mtime > STALE_TMP_SECONDS or _writer_gone(e.name):
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)
                continue
            key, dot, suffix = e.name.partition(".")
            if not dot or f".{suffix}" not in SUFFIXES:
                continue
            used, size = entries.get(key, (0.0, 0))
            if suffix == "json":
                used = st.st_mtime
            entries[key] = (used, size + st.st_size)
    total = sum(size for _, size in entries.values())
    for key, (_, size) in sorted(entries.items(), key=lambda kv: kv[1][0]):
        if total <= limit:
            break
        discard(root, key)
        total -= size
    return total
