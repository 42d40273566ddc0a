"""Several object files as one byte string: what a parallel compile produces.

Why: `rlx.runtime.parallel_build` lets each forked child generate the machine code of its
part of the kernels (LLVM code generation is ~15 % of a CNN's cold compile and used to run
in this process for the whole linked module). The compile then has one object per part,
which MCJIT links at load time (`ExecutionEngine.add_object_file`), while the compile
cache (`<key>.o`) and `ObjectEngine` hold one blob. A bundle is that blob:

    MAGIC (8 bytes) | count (u32 LE) | count x length (u64 LE) | the objects, in order

A blob that does not start with `MAGIC` is one object file, as every cache entry written
before bundles existed (ELF starts with b"\\x7fELF"), so those entries load unchanged.
Imports neither xDSL nor LLVM (the object loader's start-up laziness).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

MAGIC = b"RLXOBJS\x01"
_COUNT = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")


def pack(objects: Sequence[bytes]) -> bytes:
    """One object as itself (the single-object format), several as a bundle."""
    if len(objects) == 1:
        return bytes(objects[0])
    if not objects:
        raise ValueError("object_bundle.pack: no object files")
    head = [MAGIC, _COUNT.pack(len(objects))] + [_LENGTH.pack(len(o)) for o in objects]
    return b"".join(head + [bytes(o) for o in objects])


def unpack(data: bytes) -> list[bytes]:
    """The object files of `data` (a bundle or one object); ValueError when a bundle is
    truncated or its lengths do not add up (a corrupt cache entry: the caller rebuilds)."""
    if not data.startswith(MAGIC):
        return [data]
    at = len(MAGIC)
    if len(data) < at + _COUNT.size:
        raise ValueError("object bundle: truncated header")
    (n,) = _COUNT.unpack_from(data, at)
    at += _COUNT.size
    if n == 0 or len(data) < at + n * _LENGTH.size:
        raise ValueError(f"object bundle: bad object count {n}")
    lengths = [_LENGTH.unpack_from(data, at + i * _LENGTH.size)[0] for i in range(n)]
    at += n * _LENGTH.size
    if at + sum(lengths) != len(data):
        raise ValueError(f"object bundle: {len(data)} bytes, the header says {at + sum(lengths)}")
    out = []
    for size in lengths:
        out.append(data[at : at + size])
        at += size
    return out
