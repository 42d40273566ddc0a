"""The `*.rlx` artifact: write (atomically), read (memory-mapped) and verify.

Layout (all integers little-endian; see docs/artifact.md)::

    0   8   magic b"RLXBAKE1"
    8   4   u32 format version (FORMAT_VERSION)
    12  4   u32 flags (0)
    16  8   u64 header length H (bytes of UTF-8 JSON)
    24  8   u64 data start D (64-byte aligned, >= 64 + H)
    32  32  SHA-256 of the header bytes
    64  H   header JSON
    D   ..  sections (the MLIR module text, the object-code sections, then each weight
            blob), each 64-byte aligned; header offsets are absolute file offsets.

Reading parses nothing but JSON and raw bytes (no pickle) and refuses non-regular files
before opening them; the magic, version, every header field (`rlx.bake.header`), bounds
and the SHA-256 of the module and code sections (and, with `verify`, of every weight) are
checked before a section is used. Object code is executable: see docs/artifact.md, "Trust".
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlx.bake import header as hdr

MAGIC = b"RLXBAKE1"
FORMAT_VERSION = 1
ALIGN = 64
PREAMBLE = struct.Struct("<8sIIQQ32s")
PREAMBLE_SIZE = 64
MAX_HEADER = 64 << 20
PLACEHOLDER_PREFIX = "__rlx_weight."
"""Compact mode: a weight constant becomes `rlx.param "__rlx_weight.<name>"`."""


class ArtifactError(ValueError):
    """The file is not a usable .rlx artifact (with the reason)."""


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _sha(data: bytes | memoryview | np.ndarray) -> str:
    return hashlib.sha256(
        memoryview(data).cast("B") if not isinstance(data, bytes) else data
    ).hexdigest()


def write(
    path: str | Path,
    header: dict[str, Any],
    module_text: str,
    blobs: list[tuple[dict[str, Any], bytes | np.ndarray]],
    dedupe: bool = True,
    code: list[tuple[Any, ...]] = (),  # type: ignore[assignment]
) -> int:
    """Write an artifact atomically; returns its size in bytes.

    `header` gets `module`, `code` and `weights` sections filled in: each blob's dict (its
    table entry) and each code entry gains `offset`, `nbytes` and `sha256`. A `code` item
    is `(entry, object bytes)` or `(entry, object bytes, {runtime piece: object bytes})`;
    the pieces become the entry's `runtime` list (each with its own section). With
    `dedupe`, identical blobs share one copy (same offset).
    """
    path = Path(path)
    mod = module_text.encode()
    sections: list[bytes | np.ndarray] = [mod]
    code_entries: list[dict[str, Any]] = []
    placed: list[dict[str, Any]] = []  # code and runtime entries, in section order
    for entry, data, *more in code:
        e = {**entry, "nbytes": len(data), "sha256": _sha(data)}
        code_entries.append(e)
        placed.append(e)
        sections.append(data)
        if more and more[0]:
            e["runtime"] = []
            for name, piece in more[0].items():
                r = {"name": name, "nbytes": len(piece), "sha256": _sha(piece)}
                e["runtime"].append(r)
                placed.append(r)
                sections.append(piece)
    entries: list[dict[str, Any]] = []
    where: dict[str, int] = {}
    index: list[int] = []
    for entry, data in blobs:
        arr = np.frombuffer(data, np.uint8) if isinstance(data, bytes) else np.asarray(data)
        arr = np.ascontiguousarray(arr).view(np.uint8).reshape(-1)
        digest = _sha(arr)
        entry = {**entry, "nbytes": int(arr.size), "sha256": digest}
        if dedupe and digest in where:
            index.append(where[digest])
        else:
            where[digest] = len(sections)
            index.append(len(sections))
            sections.append(arr)
        entries.append(entry)
    rel, pos = [], 0
    for s in sections:
        rel.append(pos)
        pos = _align(pos + len(s))
    hdr = {
        **header,
        "module": {**header.get("module", {}), "nbytes": len(mod), "sha256": _sha(mod)},
    }
    full = {**hdr, "code": code_entries, "weights": entries}
    for _ in range(3):  # the data start depends on the header length (which holds offsets)
        base = _align(PREAMBLE_SIZE + len(_encode(full)) + 32)
        hdr["module"]["offset"] = base + rel[0]
        for j, e in enumerate(placed):
            e["offset"] = base + rel[1 + j]
        for e, i in zip(entries, index, strict=True):
            e["offset"] = base + rel[i]
        text = _encode(full)
        if PREAMBLE_SIZE + len(text) <= base:
            break
    else:  # pragma: no cover - the length settles after one round
        raise RuntimeError("artifact header did not settle")
    _loadable(text, path)
    pre = PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(text), base, hashlib.sha256(text).digest())
    import tempfile  # only writers need it (it imports shutil, bz2, lzma, random: ~1 MiB)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pre.ljust(PREAMBLE_SIZE, b"\0"))
            f.write(text)
            f.write(b"\0" * (base - PREAMBLE_SIZE - len(text)))
            for s, r in zip(sections, rel, strict=True):
                assert f.tell() == base + r
                f.write(memoryview(s))
                f.write(b"\0" * (_align(len(s)) - len(s)))
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size


def _loadable(text: bytes, path: Path) -> None:
    """ArtifactError unless `read` would accept the header `text` (its field limits: a
    graph input named with 2,000 characters, or a run-time error site of 5,000, was
    written into an artifact that `rlx.load` then refused)."""
    try:
        hdr.decode(text)
    except hdr.HeaderError as e:
        raise ArtifactError(
            f"{path}: cannot write an artifact rlx.load would refuse: {e}"
        ) from None


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


@dataclass
class Artifact:
    """A verified artifact: the header, the module text and memory-mapped sections."""

    path: Path
    version: int
    header: dict[str, Any]
    module_text: str
    size: int
    _map: np.ndarray | None
    """The whole file, memory-mapped read-only (None for an empty data area)."""

    def section(self, entry: Mapping[str, Any]) -> np.ndarray:
        """The stored bytes of a section entry (a read-only view of the memory map)."""
        o, n = int(entry["offset"]), int(entry["nbytes"])
        if self._map is None or n == 0:
            return np.zeros(0, np.uint8)
        return self._map[o : o + n]

    blob = section

    def runtime_bytes(self, entry: Mapping[str, Any]) -> dict[str, bytes]:
        """{piece name: private checked copy} of a code entry's runtime objects."""
        return {str(r["name"]): self.code_bytes(r) for r in entry.get("runtime", [])}

    def code_bytes(self, entry: Mapping[str, Any]) -> bytes:
        """A private copy of a code section, checked against its SHA-256 after copying:
        the bytes that get linked are the bytes that were verified, even if the file is
        rewritten in place after `read` (the memory map is shared)."""
        data = self.section(entry).tobytes()
        if _sha(data) != entry["sha256"]:
            raise ArtifactError(
                f"{self.path}: checksum mismatch in a code section at byte {entry['offset']} "
                "(the file changed after it was read)"
            )
        return data

    @property
    def weights(self) -> list[dict[str, Any]]:
        return list(self.header.get("weights", []))

    @property
    def code(self) -> list[dict[str, Any]]:
        """The object-code sections (docs/artifact.md); empty for IR-only artifacts."""
        return list(self.header.get("code", []))

    @property
    def memory(self) -> str:
        return str(self.header.get("memory", "compact"))

    def blobs(self) -> dict[str, np.ndarray]:
        """name -> stored bytes of every live table entry."""
        return {e["name"]: self.section(e) for e in self.weights if e.get("live", True)}


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))  # fmt: skip


def _regular(st: os.stat_result, where: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for f, k in _KINDS if f(st.st_mode)), "not a regular file")
        raise ArtifactError(f"{where}: is {kind}, not a regular file; refusing to read it")


def _open(p: Path) -> tuple[int, int]:
    """(fd, size) of a regular file: stat first, so a FIFO or device is never opened for
    reading; O_NONBLOCK and a second fstat close the race with a swapped path."""
    try:
        _regular(os.stat(p), str(p))
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise ArtifactError(f"cannot read {p}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        _regular(st, str(p))
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read(
    path: str | Path, verify: bool = True, progress: Callable[[int, int], None] | None = None
) -> Artifact:
    """Open and check an artifact: file type, magic, version, header checksum and fields,
    section bounds, the SHA-256 of the module and code sections and (with `verify`) of every
    weight. Raises ArtifactError (a ValueError)."""
    p = Path(path)
    fd, size = _open(p)
    try:
        pre = os.pread(fd, PREAMBLE_SIZE, 0)
        where = str(p)
        base = _preamble(pre, size, where)
        hlen = struct.unpack_from("<Q", pre, 16)[0]
        text = os.pread(fd, hlen, PREAMBLE_SIZE)
        if len(text) != hlen:
            raise ArtifactError(f"{where}: truncated header")
        if hashlib.sha256(text).digest() != pre[32:64]:
            raise ArtifactError(f"{where}: header checksum mismatch (corrupted file)")
        try:
            header = hdr.decode(text)
        except hdr.HeaderError as e:
            at = PREAMBLE_SIZE + (hdr.locate(text, e.field) if e.field[0] != "<" else 0)
            raise ArtifactError(f"{where}: byte {at}: {e}") from None
        # verifying reads every page: map them in one go (MAP_POPULATE) rather than by
        # one page fault per 4 KiB
        populate = getattr(mmap, "MAP_POPULATE", 0) if verify else 0
        mm = (
            np.frombuffer(
                mmap.mmap(fd, size, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ),
                np.uint8,
            )
            if size > base
            else None
        )
    except OSError as e:
        raise ArtifactError(f"cannot read {p}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    art = Artifact(p, struct.unpack_from("<I", pre, 8)[0], header, "", size, mm)
    sections = [("module", header["module"])]
    for i, c in enumerate(art.code):
        sections.append((f"code section {i} ({c['cpu']})", c))
        sections += [(f"runtime object '{r['name']}' of code section {i}", r)
                     for r in c.get("runtime", [])]  # fmt: skip
    sections += [(f"weight '{w['name']}'", w) for w in art.weights]
    for label, s in sections:
        o, n = s["offset"], s["nbytes"]
        if o < base or o % ALIGN or o + n > size:
            raise ArtifactError(
                f"{where}: truncated or corrupted: {label} spans bytes {o}..{o + n}, file has {size}"
            )
    _no_overlaps(where, sections)
    _verify(art, sections, verify, progress)
    try:
        art.module_text = art.section(header["module"]).tobytes().decode()
    except UnicodeDecodeError:
        raise ArtifactError(f"{where}: module section is not UTF-8 MLIR text") from None
    return art


def _no_overlaps(where: str, sections: list[tuple[str, Mapping[str, Any]]]) -> None:
    """ArtifactError if two sections share bytes, unless they are one span of one kind
    (weights with equal bytes are stored once, `write(dedupe=True)`). Why: with
    `verify=False` weights are not hashed, so a weight whose offset pointed into the code
    section (or another weight) loaded those bytes as its values, silently."""
    spans = sorted(
        (s["offset"], s["offset"] + s["nbytes"], label) for label, s in sections if s["nbytes"]
    )
    reach = None  # the span reaching furthest so far: any overlap includes it
    for o2, e2, b in spans:
        if reach is not None:
            o1, e1, a = reach
            if o2 < e1 and not ((o1, e1) == (o2, e2) and a.split()[0] == b.split()[0]):
                raise ArtifactError(
                    f"{where}: corrupted: {b} (bytes {o2}..{e2}) overlaps {a} (bytes {o1}..{e1})"
                )
        if reach is None or e2 > reach[1]:
            reach = (o2, e2, b)


def _verify(
    art: Artifact,
    sections: list[tuple[str, dict[str, Any]]],
    weights: bool,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Check the SHA-256 of the module and code sections (and of the weights with
    `weights`), each stored blob once, on two threads (hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    todo: dict[tuple[int, int, str], str] = {}
    for label, s in sections:
        if weights or not label.startswith("weight"):
            todo.setdefault((s["offset"], s["nbytes"], s["sha256"]), label)
    total, done = sum(k[1] for k in todo), 0

    def digest(key: tuple[int, int, str]) -> str:
        return _sha(art.section({"offset": key[0], "nbytes": key[1]}))

    big = [k for k in todo if k[1] >= 1 << 20]
    with ThreadPoolExecutor(2) if len(big) > 1 else _Serial() as pool:
        for key, got in zip(todo, pool.map(digest, todo), strict=True):
            if got != key[2]:
                raise ArtifactError(
                    f"{art.path}: checksum mismatch in {todo[key]} at byte {key[0]} (corrupted file)"
                )
            done += key[1]
            if progress is not None:
                progress(done, total)


class _Serial:
    """A stand-in executor for a few small sections (no thread start-up)."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Any) -> Any:
        return map(fn, items)


def _preamble(pre: bytes, size: int, where: str) -> int:
    """Check the fixed preamble; returns the data start."""
    if pre[:8] == MAGIC and len(pre) < 12:
        raise ArtifactError(f"{where}: truncated ({size} bytes)")
    if len(pre) < 12 or pre[:8] != MAGIC:
        if pre[:8] == b"RLXENC01":
            raise ArtifactError(f"{where}: encrypted .rlx artifacts are not supported")
        raise ArtifactError(
            f"{where}: not an rlx-bake artifact (bad magic {pre[:8]!r}, expected {MAGIC!r})"
        )
    version = struct.unpack_from("<I", pre, 8)[0]
    if version > FORMAT_VERSION:
        raise ArtifactError(
            f"{where}: artifact format version {version} is newer than this rlx supports "
            f"({FORMAT_VERSION}); upgrade rlx"
        )
    if version < 1:
        raise ArtifactError(f"{where}: invalid artifact format version {version}")
    if len(pre) < PREAMBLE_SIZE:
        raise ArtifactError(
            f"{where}: truncated ({size} bytes, the preamble alone is {PREAMBLE_SIZE})"
        )
    _, _, flags, hlen, base, _ = PREAMBLE.unpack_from(pre)
    if flags != 0:
        raise ArtifactError(f"{where}: byte 12: unknown flags {flags:#x}")
    if hlen > MAX_HEADER:
        raise ArtifactError(f"{where}: byte 16: header length {hlen} exceeds {MAX_HEADER}")
    if PREAMBLE_SIZE + hlen > size or base < PREAMBLE_SIZE + hlen or base % ALIGN:
        raise ArtifactError(
            f"{where}: byte 16: truncated or corrupted header (length {hlen}, data start "
            f"{base}, file {size} bytes)"
        )
    return int(base)
