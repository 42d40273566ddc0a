"""The ABI of a lowered graph: argument specs, signatures, artifacts, aligned buffers.

What `CompiledGraph`, the compile cache (`rlx.runtime.cache`) and ahead-of-time artifacts
(`rlx.runtime.aot`) share: a `Signature` lists the entry function's pointer arguments in
call order (`KINDS`) with the memory plan's numbers and is JSON-serialisable; an `Artifact`
is the compiled code plus its signatures and printed stages. The pointer helpers read an
ndarray's data pointer without ctypes' per-call cost.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

KINDS = ("input", "prepared", "param", "output", "status", "arena")
PREP_PREFIX = "__rlx_prep_"


def np_dtype(name: str) -> np.dtype:
    """NumPy dtype from its name, including the ml_dtypes ones (bfloat16, float8_*)."""
    if name == "bfloat16" or name.startswith(("float8_", "float6_", "float4_")):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a lowered graph function."""

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str  # NumPy dtype name ("float32", "bfloat16", ...)

    @property
    def np_dtype(self) -> np.dtype:
        return np_dtype(self.dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.np_dtype.itemsize


@dataclass
class Signature:
    """A function's ABI plus the memory plan numbers; JSON-serialisable for the disk cache."""

    entry: str
    args: list[ArgSpec]
    arena_bytes: int
    unplanned_bytes: int
    alignment: int
    dead_params: dict[str, ArgSpec] = field(default_factory=dict)
    """Params of the source graph removed by optimisation: `set_param` accepts and ignores them."""
    error_sites: list[str] = field(default_factory=list)
    """Checked ops by site number (`rlx.errors`): what a run's error message names."""

    def of(self, kind: str) -> list[ArgSpec]:
        return [a for a in self.args if a.kind == kind]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Signature:
        def spec(a: Mapping[str, Any]) -> ArgSpec:
            s = ArgSpec(
                str(a["name"]), str(a["kind"]), tuple(int(x) for x in a["shape"]), str(a["dtype"])
            )
            if s.kind not in KINDS:
                raise ValueError(f"bad argument kind {s.kind!r}")
            s.np_dtype  # noqa: B018  (validates the dtype name)
            return s

        return cls(
            str(d["entry"]), [spec(a) for a in d["args"]], int(d["arena_bytes"]),
            int(d["unplanned_bytes"]), int(d["alignment"]),
            {str(k): spec(v) for k, v in d.get("dead_params", {}).items()},
            [str(x) for x in d.get("error_sites", [])],
        )  # fmt: skip


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype, alignment: int) -> np.ndarray:
    """An uninitialised C-contiguous array whose data pointer is a multiple of `alignment`."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + alignment, dtype=np.uint8)
    off = (-buf.ctypes.data) % alignment
    return buf[off : off + nbytes].view(dtype).reshape(shape)


def _data_offset() -> int | None:
    """Offset of the data pointer inside an ndarray object (PyArrayObject.data), or None."""
    probes = [np.ones(3, np.float32), np.zeros((2, 5), np.int8)]
    for off in range(8, 80, 8):
        if all(ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data for a in probes):
            return off
    return None


_DATA_OFF = _data_offset()
DATA_OFF = _DATA_OFF or 0
"""Offset of the data pointer in an ndarray object (0: unknown, use `data_ptr`)."""
read_ptr = ctypes.c_void_p.from_address


def data_ptr(a: np.ndarray) -> int:
    """The data pointer of `a` (~0.2 µs, vs ~2 µs for `a.ctypes.data`)."""
    if _DATA_OFF is None:
        return int(a.ctypes.data)
    return read_ptr(id(a) + _DATA_OFF).value or 0


@dataclass
class Artifact:
    """What the compile cache shares between CompiledGraphs: code, signatures, texts."""

    signature: Signature
    jit: Any  # rlx.runtime.jit.JitModule or cache.ObjectModule (kept alive: the code lives in it)
    address: int
    report: list[dict[str, str]]
    stages: dict[str, str] = field(default_factory=dict)
    llvm_ir: str = ""
    prepare: Signature | None = None
    """The `@prepare` function of `cache_param_invariant`, if the graph has one."""
    prepare_address: int = 0
    reports: dict[str, str] = field(default_factory=dict)
    """Texts of the dispatch and fusion reports ("dispatch", "fusion")."""


def check_prepared(sig: Signature, prep: Signature | None) -> None:
    """ValueError unless every `prepared` argument of `sig` is an output of `prep` (the
    `@prepare` function) of the same shape and element size (the signless ABI may name one
    buffer `int8` on one side and `uint8` on the other). A module hoisted by hand (or a
    cache entry or artifact saying otherwise) could name a value nothing computes (a
    KeyError at the first run) or one of another size (read out of bounds)."""
    made = {} if prep is None else {
        f"{PREP_PREFIX}{j}": (o.shape, o.dtype) for j, o in enumerate(prep.of("output"))
    }  # fmt: skip
    size = {name: (shape, np_dtype(dt).itemsize) for name, (shape, dt) in made.items()}
    for a in sig.of("prepared"):
        if a.name not in made:
            have = (
                f"@{prep.entry} computes {', '.join(made) or 'nothing'}" if prep else "no @prepare"
            )
            raise ValueError(
                f"@{sig.entry}: prepared argument '{a.name}' is not computed by a @prepare "
                f"function ({have}; prepared values are named {PREP_PREFIX}<i>)"
            )
        if size[a.name] != (a.shape, a.np_dtype.itemsize):
            shape, dtype = made[a.name]
            raise ValueError(
                f"@{sig.entry}: prepared argument '{a.name}' is {a.dtype} {list(a.shape)}, "
                f"but @{prep.entry if prep else '?'} computes {dtype} {list(shape)}"
            )
