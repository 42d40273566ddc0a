"""The `*.rlx` artifact: write (atomically), read (memory-mapped) and verify.

Layout (all integers little-endian; see docs/artifact.md)::

    0   8   magic b"RLXBAKE1"
    8   4   u32 format version (FORMAT_VERSION)
    12  4   u32 flags (0)
    16  8   u64 header length H (bytes of UTF-8 JSON)
    24  8   u64 data start D (64-byte aligned, >= 64 + H)
    32  32  SHA-256 of the header bytes
    64  H   header JSON
    D   ..  sections (the MLIR module text, then each weight blob), each 64-byte aligned;
            header offsets are absolute file offsets.

Reading never executes anything from the file (JSON + raw bytes, no pickle); the magic,
version, bounds and every SHA-256 are checked before a section is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"RLXBAKE1"
FORMAT_VERSION = 1
ALIGN = 64
PREAMBLE = struct.Struct("<8sIIQQ32s")
PREAMBLE_SIZE = 64
MAX_HEADER = 1 << 30


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
) -> int:
    """Write an artifact atomically; returns its size in bytes.

    `header` gets `module` and `weights` sections filled in: each blob's dict (its table
    entry) gains `offset`, `nbytes` and `sha256`. With `dedupe`, identical blobs share one
    copy (same offset).
    """
    path = Path(path)
    mod = module_text.encode()
    sections: list[bytes | np.ndarray] = [mod]
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
    for _ in range(3):  # the data start depends on the header length (which holds offsets)
        base = _align(PREAMBLE_SIZE + len(_encode({**hdr, "weights": entries})) + 32)
        hdr["module"]["offset"] = base + rel[0]
        for e, i in zip(entries, index, strict=True):
            e["offset"] = base + rel[i]
        text = _encode({**hdr, "weights": entries})
        if PREAMBLE_SIZE + len(text) <= base:
            break
    else:  # pragma: no cover - the length settles after one round
        raise RuntimeError("artifact header did not settle")
    pre = PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(text), base, hashlib.sha256(text).digest())
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


def _encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass
class Artifact:
    """A verified artifact: the header, the module text and memory-mapped weight blobs."""

    path: Path
    version: int
    header: dict[str, Any]
    module_text: str
    size: int
    _map: np.memmap | None

    def blob(self, entry: Mapping[str, Any]) -> np.ndarray:
        """The stored bytes of a weight-table entry (a read-only memory-mapped view)."""
        o, n = int(entry["offset"]), int(entry["nbytes"])
        if self._map is None or n == 0:
            return np.zeros(0, np.uint8)
        return self._map[o : o + n]

    @property
    def weights(self) -> list[dict[str, Any]]:
        return list(self.header.get("weights", []))

    def blobs(self) -> dict[str, np.ndarray]:
        """name -> stored bytes of every live table entry."""
        return {e["name"]: self.blob(e) for e in self.weights if e.get("live", True)}


def read(
    path: str | Path, verify: bool = True, progress: Callable[[int, int], None] | None = None
) -> Artifact:
    """Open and check an artifact: magic, version, header checksum, section bounds and
    (with `verify`) the SHA-256 of every section. Raises ArtifactError (a ValueError)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        with open(p, "rb") as f:
            pre = f.read(PREAMBLE_SIZE)
    except OSError as e:
        raise ArtifactError(f"cannot read {p}: {e.strerror or e}") from None
    where = f"{p}"
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
    _, _, flags, hlen, base, hsha = PREAMBLE.unpack_from(pre)
    if flags != 0:
        raise ArtifactError(f"{where}: unknown flags {flags:#x}")
    if hlen > MAX_HEADER or PREAMBLE_SIZE + hlen > size or base < PREAMBLE_SIZE + hlen:
        raise ArtifactError(
            f"{where}: truncated or corrupted header (length {hlen}, file {size} bytes)"
        )
    with open(p, "rb") as f:
        f.seek(PREAMBLE_SIZE)
        text = f.read(hlen)
    if hashlib.sha256(text).digest() != hsha:
        raise ArtifactError(f"{where}: header checksum mismatch (corrupted file)")
    try:
        header = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArtifactError(f"{where}: unreadable header: {e}") from None
    if not isinstance(header, dict) or not isinstance(header.get("module"), dict):
        raise ArtifactError(f"{where}: header has no module section")
    sections = [("module", header["module"])]
    weights = header.get("weights", [])
    if not isinstance(weights, list):
        raise ArtifactError(f"{where}: header 'weights' must be a list")
    sections += [(f"weight '{w.get('name')}'", w) for w in weights]
    for label, s in sections:
        try:
            o, n = int(s["offset"]), int(s["nbytes"])
        except (KeyError, TypeError, ValueError):
            raise ArtifactError(f"{where}: {label} has no valid offset/nbytes") from None
        if o < base or o % ALIGN or n < 0 or o + n > size:
            raise ArtifactError(
                f"{where}: truncated or corrupted: {label} spans bytes {o}..{o + n}, file has {size}"
            )
    mm = np.memmap(p, dtype=np.uint8, mode="r") if size > base else None
    total = sum(int(s["nbytes"]) for _, s in sections)
    done = 0
    for label, s in sections:
        o, n = int(s["offset"]), int(s["nbytes"])
        if verify or label == "module":
            view = mm[o : o + n] if mm is not None else np.zeros(0, np.uint8)
            if _sha(np.ascontiguousarray(view)) != s.get("sha256"):
                raise ArtifactError(f"{where}: checksum mismatch in {label} (corrupted file)")
        done += n
        if progress is not None:
            progress(done, total)
    m = header["module"]
    o, n = int(m["offset"]), int(m["nbytes"])
    try:
        module_text = bytes(mm[o : o + n]).decode() if mm is not None else ""
    except UnicodeDecodeError:
        raise ArtifactError(f"{where}: module text is not UTF-8") from None
    return Artifact(p, version, header, module_text, size, mm)
