"""`CompiledGraph`: a JIT-compiled rlx function with its weights, called from NumPy.

ABI (fixed by convert-rlx-to-linalg + plan-memory): the entry function takes one pointer per
input, then per param, then per output, then the arena (bare-pointer convention) and returns
nothing. The runtime checks every array before calling native code (count, names, shapes,
exact dtypes), so bad input raises ValueError instead of crashing the process.

Memory: params are copied once into aligned contiguous buffers by `set_param`; outputs are
fresh aligned arrays per `run`; the arena (scratch for intermediates) is allocated once per
CompiledGraph per calling thread, aligned to `arena_alignment`. Native code runs without
the GIL (ctypes), so several threads may `run` one graph at once; `set_param` while another
thread runs is not synchronised (set weights before sharing the graph).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

KINDS = ("input", "param", "output", "arena")
STAGES = ("input", "rlx", "linalg", "loops", "llvm", "llvm-ir", "asm")


def np_dtype(name: str) -> np.dtype:
    """NumPy dtype from its name, including the ml_dtypes ones (bfloat16, float8_*)."""
    if name == "bfloat16" or name.startswith("float8"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


@dataclass(frozen=True)
class ArgSpec:
    """One argument of the lowered entry function."""

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
    """The entry's ABI plus the memory plan numbers; JSON-serialisable for the disk cache."""

    entry: str
    args: list[ArgSpec]
    arena_bytes: int
    unplanned_bytes: int
    alignment: int
    dead_params: dict[str, ArgSpec] = field(default_factory=dict)
    """Params of the source graph removed by optimisation: `set_param` accepts and ignores them."""

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
        )  # fmt: skip


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype, alignment: int) -> np.ndarray:
    """An uninitialised C-contiguous array whose data pointer is a multiple of `alignment`."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + alignment, dtype=np.uint8)
    off = (-buf.ctypes.data) % alignment
    return buf[off : off + nbytes].view(dtype).reshape(shape)


@dataclass
class Artifact:
    """What the compile cache shares between CompiledGraphs: code, signature, texts."""

    signature: Signature
    jit: Any  # rlx.runtime.jit.JitModule (kept alive: the code lives in it)
    address: int
    report: list[dict[str, str]]
    stages: dict[str, str] = field(default_factory=dict)
    llvm_ir: str = ""


class CompiledGraph:
    """A compiled graph; see the module docstring. Create it with `rlx.compile`."""

    def __init__(
        self, artifact: Artifact, regenerate: Callable[[], Artifact] | None = None
    ) -> None:
        self._art = artifact
        self._sig = artifact.signature
        self._regenerate = regenerate
        self._align = max(self._sig.alignment, 16)
        n = len(self._sig.args)
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))(artifact.address)
        self._params: dict[str, np.ndarray] = {}
        self._tls = threading.local()
        self.cache_hit = False

    # ------------------------------------------------------------------ introspection
    @property
    def inputs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return [(a.name, a.shape, a.np_dtype) for a in self._sig.of("input")]

    @property
    def outputs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return [(a.name, a.shape, a.np_dtype) for a in self._sig.of("output")]

    @property
    def params(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Params the compiled code reads (name -> (shape, dtype)); all must be set to run."""
        return {a.name: (a.shape, a.np_dtype) for a in self._sig.of("param")}

    @property
    def arena_bytes(self) -> int:
        return self._sig.arena_bytes

    @property
    def unplanned_bytes(self) -> int:
        return self._sig.unplanned_bytes

    @property
    def signature(self) -> Signature:
        return self._sig

    def ir(self, stage: str = "rlx") -> str:
        """Module text at `stage`: input, rlx, linalg, loops, llvm, llvm-ir or asm."""
        if stage not in STAGES:
            raise ValueError(f"unknown IR stage {stage!r}; stages: {', '.join(STAGES)}")
        if stage == "llvm-ir":
            return getattr(self._art.jit, "llvm_ir", None) or self._art.llvm_ir
        if stage == "asm":
            return str(self._art.jit.asm)
        if stage not in self._art.stages and self._regenerate is not None:
            # a graph loaded from the disk cache keeps only the LLVM IR: recompile for texts
            self._art.stages.update(self._regenerate().stages)
        return self._art.stages[stage]

    def pipeline_report(self) -> str:
        """One line per CompileOptions field: applied / default / accepted, not yet applied."""
        from rlx.runtime.pipeline import FieldStatus

        return "\n".join(FieldStatus(**r).line() for r in self._art.report)

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {list(s)} {d}" for n, s, d in self.inputs)
        return f"<CompiledGraph @{self._sig.entry}({ins}) -> {len(self.outputs)} output(s)>"

    # ------------------------------------------------------------------ params
    def set_param(self, name: str, array: Any) -> None:
        """Copy `array` (exact shape and dtype) into the param's aligned buffer."""
        spec = next((a for a in self._sig.of("param") if a.name == name), None)
        dead = spec is None and name in self._sig.dead_params
        if spec is None and not dead:
            known = ", ".join(sorted(self.params)) or "none"
            raise ValueError(f"unknown param '{name}'; params: {known}")
        spec = spec or self._sig.dead_params[name]
        arr = _check("param", spec, array)
        if dead:
            return  # removed by optimisation: accepted and ignored
        buf = aligned_empty(spec.shape, spec.np_dtype, self._align)
        buf[...] = arr
        self._params[name] = buf

    def set_params(self, params: Mapping[str, Any]) -> None:
        for k, v in params.items():
            self.set_param(k, v)

    # ------------------------------------------------------------------ running
    def run(self, *arrays: Any, **named: Any) -> list[np.ndarray]:
        """Run on inputs given by position and/or by name; returns one array per output."""
        specs = self._sig.of("input")
        if len(arrays) > len(specs):
            raise ValueError(
                f"@{self._sig.entry} takes {len(specs)} input(s) "
                f"({', '.join(a.name for a in specs)}), got {len(arrays)} positional"
            )
        given: dict[str, Any] = {s.name: a for s, a in zip(specs, arrays, strict=False)}
        for k, v in named.items():
            if k not in {s.name for s in specs}:
                raise ValueError(f"unknown input '{k}'; inputs: {', '.join(s.name for s in specs)}")
            if k in given:
                raise ValueError(f"input '{k}' given both by position and by name")
            given[k] = v
        missing = [s.name for s in specs if s.name not in given]
        if missing:
            raise ValueError(
                f"missing input(s): {', '.join(missing)} (@{self._sig.entry} takes {len(specs)})"
            )
        ins = [_check("input", s, given[s.name]) for s in specs]
        unset = [a.name for a in self._sig.of("param") if a.name not in self._params]
        if unset:
            raise ValueError(
                f"param(s) not set: {', '.join(unset)}; call set_param(name, array) first"
            )
        outs = [aligned_empty(a.shape, a.np_dtype, self._align) for a in self._sig.of("output")]
        ptrs: list[int] = []
        it_in, it_out = iter(ins), iter(outs)
        for a in self._sig.args:
            if a.kind == "input":
                ptrs.append(next(it_in).ctypes.data)
            elif a.kind == "param":
                ptrs.append(self._params[a.name].ctypes.data)
            elif a.kind == "output":
                ptrs.append(next(it_out).ctypes.data)
            else:
                ptrs.append(self._arena().ctypes.data)
        self._fn(*ptrs)
        return outs

    __call__ = run

    def _arena(self) -> np.ndarray:
        arena = getattr(self._tls, "arena", None)
        if arena is None:
            arena = aligned_empty(
                (max(self._sig.arena_bytes, 1),), np.dtype(np.uint8), self._sig.alignment
            )
            self._tls.arena = arena
        return arena


def _check(kind: str, spec: ArgSpec, value: Any) -> np.ndarray:
    """The array to pass for `spec`: exact dtype and shape; C-contiguous, aligned (copied if not)."""
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    want = spec.np_dtype
    if arr.dtype != want or arr.shape != spec.shape:
        raise ValueError(
            f"{kind} '{spec.name}': expected {want} array of shape {spec.shape}, "
            f"got {arr.dtype} array of shape {arr.shape}"
        )
    if not (arr.flags.c_contiguous and arr.flags.aligned):
        arr = np.ascontiguousarray(arr)
        if not arr.flags.aligned:
            tmp = aligned_empty(spec.shape, want, 64)
            tmp[...] = arr
            arr = tmp
    return arr
