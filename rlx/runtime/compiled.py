"""`CompiledGraph`: a JIT-compiled rlx function with its weights, called from NumPy.

ABI (fixed by convert-rlx-to-linalg + plan-memory): the entry function takes one pointer per
input, per prepared value (`cache_param_invariant`), per param, per output, the status
record when the graph checks data at run time (`rlx.errors`: `run` raises IndexError /
ZeroDivisionError naming the op), then the arena (bare-pointer convention) and returns
nothing. The runtime checks every array before
calling native code (count, names, shapes, exact dtypes), so bad input raises ValueError
instead of crashing the process.

Memory: params are copied once into aligned contiguous buffers by `set_param`; outputs are
fresh aligned arrays per `run` (views of one allocation); the arena (scratch for
intermediates) is allocated once per CompiledGraph per calling thread, aligned to
`arena_alignment`. With `cache_param_invariant`, the `@prepare` function (weight-only
compute, see docs/passes/hoist-param-invariant.md) runs lazily before the first run and again
after `set_param` changes one of its params; its results live in runtime-owned aligned
buffers. Native code runs without the GIL (ctypes), so several threads may `run` one graph at
once; `set_param` while another thread runs is not synchronised (set weights first).

Per-run cost is a few microseconds: pointer order, output layout and the ctypes function
are precomputed; each thread keeps a pointer template (params, prepared values, arena).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rlx.runtime.abi import (
    DATA_OFF,
    PREP_PREFIX,
    ArgSpec,
    Artifact,
    Signature,
    aligned_empty,
    check_prepared,
    data_ptr,
    read_ptr,
)
from rlx.runtime.entry_call import entry_caller

STAGES = ("input", "rlx", "linalg", "loops", "llvm", "llvm-ir", "asm")
ndarray = np.ndarray


class CompiledGraph:
    """A compiled graph; see the module docstring. Create it with `rlx.compile`."""

    def __init__(
        self, artifact: Artifact, regenerate: Callable[[], Artifact] | None = None
    ) -> None:
        self._art = artifact
        sig = self._sig = artifact.signature
        check_prepared(sig, artifact.prepare)
        self._regenerate = regenerate
        self._align = max(sig.alignment, 64)
        self._fn = entry_caller(artifact.address, len(sig.args))
        self._params: dict[str, np.ndarray] = {}
        self._tls = threading.local()
        self._spare_out: np.ndarray | None = None
        """The output buffer of an earlier run, reused once no output of that run is alive."""
        self._spare_lock = threading.Lock()
        self._version = 0  # bumped by set_param: per-thread pointer templates are rebuilt
        self.cache_hit = False
        self.prepare_runs = 0
        """How many times `@prepare` ran (cache_param_invariant)."""
        self._ins = sig.of("input")
        self._in_names = tuple(a.name for a in self._ins)
        self._n_in = len(self._in_names)
        self._in_check = [
            (i, a.np_dtype, a.shape, _c_strides(a), a.np_dtype.itemsize, a.np_dtype == np.bool_)
            for i, a in enumerate(sig.args)
            if a.kind == "input"
        ]
        outs, off = [], 0
        for i, a in enumerate(sig.args):
            if a.kind == "output":
                outs.append((i, a.shape, a.np_dtype, off))
                off += -(-max(a.nbytes, 1) // self._align) * self._align
        self._outs, self._out_bytes = outs, off
        self._prep = artifact.prepare
        self._prep_lock = threading.Lock()
        self._prep_stale = self._prep is not None
        self._prep_bufs: dict[str, np.ndarray] = {}
        if self._prep is not None:
            self._prep_fn = entry_caller(artifact.prepare_address, len(self._prep.args))
            for j, o in enumerate(self._prep.of("output")):
                self._prep_bufs[f"{PREP_PREFIX}{j}"] = aligned_empty(
                    o.shape, o.np_dtype, self._align
                )
        self._prep_params = {a.name for a in self._prep.of("param")} if self._prep else set()

    # ------------------------------------------------------------------ introspection
    @property
    def inputs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """User-facing inputs (name, shape, dtype); prepared values are not inputs."""
        return [(a.name, a.shape, a.np_dtype) for a in self._ins]

    @property
    def outputs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        return [(a.name, a.shape, a.np_dtype) for a in self._sig.of("output")]

    @property
    def params(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Params the compiled code reads (name -> (shape, dtype)); all must be set to run."""
        specs = [*self._sig.of("param"), *(self._prep.of("param") if self._prep else [])]
        return {a.name: (a.shape, a.np_dtype) for a in specs}

    @property
    def arena_bytes(self) -> int:
        return self._sig.arena_bytes

    @property
    def unplanned_bytes(self) -> int:
        return self._sig.unplanned_bytes

    @property
    def signature(self) -> Signature:
        return self._sig

    @property
    def prepare_signature(self) -> Signature | None:
        """ABI of `@prepare` (cache_param_invariant), or None when nothing was hoisted."""
        return self._prep

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
        """One line per CompileOptions field: default / applied / skipped / no effect."""

        # Imported here for start-up laziness: the pipeline table imports the passes (and
        # xDSL), which a graph linked from stored code (rlx.runtime.aot) never needs.
        from rlx.runtime.pipeline_passes import FieldStatus

        return "\n".join(FieldStatus(**r).line() for r in self._art.report)

    def dispatch_report(self) -> str:
        """How each op kind runs after kernel-dispatch/legalize (rlx.transforms.dispatch_report)."""
        return self._art.reports.get("dispatch", "")

    def fusion_report(self) -> str:
        """What fusion did and missed (rlx.transforms.fusion_report.analyze_fusion)."""
        return self._art.reports.get("fusion", "")

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {list(s)} {d}" for n, s, d in self.inputs)
        return f"<CompiledGraph @{self._sig.entry}({ins}) -> {len(self.outputs)} output(s)>"

    # ------------------------------------------------------------------ params
    def _param_spec(self, name: str) -> ArgSpec | None:
        for sig in (self._sig, self._prep):
            for a in sig.args if sig is not None else ():
                if a.kind == "param" and a.name == name:
                    return a
        return None

    def set_param(self, name: str, array: Any) -> None:
        """Copy `array` (exact shape and dtype) into the param's aligned buffer."""
        spec = self._param_spec(name)
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
        self._version += 1
        if name in self._prep_params:
            self._prep_stale = True

    def set_params(self, params: Mapping[str, Any]) -> None:
        """`set_param` for each `name: array` of a mapping (a dict, not a list)."""
        if not isinstance(params, Mapping):
            raise TypeError(
                "set_params: expected a mapping of param name to array (e.g. a dict), "
                f"got {type(params).__name__}; params: {', '.join(sorted(self.params)) or 'none'}"
            )
        for k, v in params.items():
            if not isinstance(k, str):
                raise TypeError(f"set_params: param names are strings, got {k!r}")
            self.set_param(k, v)

    # ------------------------------------------------------------------ running
    def run(self, *arrays: Any, **named: Any) -> list[np.ndarray]:
        """Run on inputs given by position and/or by name; returns one array per output."""
        if named or len(arrays) != self._n_in:
            arrays = self._gather(arrays, named)
        state = getattr(self._tls, "state", None)
        if state is None or state[0] != self._version or self._prep_stale:
            state = self._refresh()
        ptrs = state[1].copy()
        keep = None  # converted copies must outlive the call
        for (i, dt, shape, strides, size, boolean), a in zip(self._in_check, arrays, strict=True):
            if (
                type(a) is ndarray
                and a.dtype == dt
                and a.shape == shape
                and a.strides == strides
                and not boolean  # bool inputs are checked for non-canonical bytes
            ):
                p = read_ptr(id(a) + DATA_OFF).value if DATA_OFF else data_ptr(a)
                if p and not p % size:
                    ptrs[i] = p
                    continue
            a = _check("input", self._sig.args[i], a)  # slow path: validate, copy if needed
            keep = [*(keep or ()), a]
            ptrs[i] = data_ptr(a)
        align = self._align
        with self._spare_lock:
            buf, self._spare_out = self._spare_out, None
        # A buffer only this frame refers to (no output array of its run is alive) is
        # reused: a fresh one costs a page fault per 4 KiB on first write.
        if buf is None or sys.getrefcount(buf) > 2:
            buf = np.empty(self._out_bytes + align, np.uint8)
        base = read_ptr(id(buf) + DATA_OFF).value if DATA_OFF else data_ptr(buf)
        pad = -base % align
        base += pad
        outs = []
        for i, shape, dt, off in self._outs:
            ptrs[i] = base + off
            outs.append(ndarray(shape, dt, buf, pad + off))
        self._fn(*ptrs)
        del keep
        self._spare_out = buf
        if state[2] is not None and state[2][0]:
            raise _status_error(state[2], self._sig)
        return outs

    __call__ = run

    def _gather(self, arrays: tuple[Any, ...], named: dict[str, Any]) -> tuple[Any, ...]:
        """Inputs in signature order from positional and named arrays (slow path, checked)."""
        names = self._in_names
        if len(arrays) > len(names):
            raise ValueError(
                f"@{self._sig.entry} takes {len(names)} input(s) "
                f"({', '.join(names)}), got {len(arrays)} positional"
            )
        given: dict[str, Any] = dict(zip(names, arrays, strict=False))
        for k, v in named.items():
            if k not in names:
                raise ValueError(f"unknown input '{k}'; inputs: {', '.join(names)}")
            if k in given:
                raise ValueError(f"input '{k}' given both by position and by name")
            given[k] = v
        missing = [n for n in names if n not in given]
        if missing:
            raise ValueError(
                f"missing input(s): {', '.join(missing)} (@{self._sig.entry} takes {len(names)})"
            )
        return tuple(given[n] for n in names)

    def _refresh(self) -> tuple[int, list[int], np.ndarray | None]:
        """Run `@prepare` if stale; rebuild this thread's pointer template."""
        unset = [n for n in self.params if n not in self._params]
        if unset:
            raise ValueError(
                f"param(s) not set: {', '.join(unset)}; call set_param(name, array) first"
            )
        if self._prep_stale:
            with self._prep_lock:
                if self._prep_stale:
                    self._run_prepare()
                    self._prep_stale = False
        version = self._version
        ptrs = [0] * len(self._sig.args)
        status = None
        for i, a in enumerate(self._sig.args):
            if a.kind == "param":
                ptrs[i] = data_ptr(self._params[a.name])
            elif a.kind == "prepared":
                ptrs[i] = data_ptr(self._prep_bufs[a.name])
            elif a.kind == "arena":
                ptrs[i] = data_ptr(self._arena())
            elif a.kind == "status":
                status = getattr(self._tls, "status", None)
                if status is None:
                    status = self._tls.status = _status_buffer(a)
                ptrs[i] = data_ptr(status)
        state = self._tls.state = (version, ptrs, status)
        return state

    def _run_prepare(self) -> None:
        assert self._prep is not None
        arena = aligned_empty((max(self._prep.arena_bytes, 1),), np.dtype(np.uint8), self._align)
        outs = iter(self._prep_bufs.values())
        ptrs = []
        status = None
        for a in self._prep.args:
            if a.kind == "param":
                ptrs.append(data_ptr(self._params[a.name]))
            elif a.kind == "output":
                ptrs.append(data_ptr(next(outs)))
            elif a.kind == "status":
                status = _status_buffer(a)
                ptrs.append(data_ptr(status))
            else:
                ptrs.append(data_ptr(arena))
        self._prep_fn(*ptrs)
        if status is not None and status[0]:
            raise _status_error(status, self._prep)
        self.prepare_runs += 1

    def _arena(self) -> np.ndarray:
        arena = getattr(self._tls, "arena", None)
        if arena is None:
            arena = aligned_empty((max(self._sig.arena_bytes, 1),), np.dtype(np.uint8), self._align)
            self._tls.arena = arena
        return arena


def _status_buffer(a: ArgSpec) -> np.ndarray:
    """A zeroed status record (`rlx.errors`); the generated code writes it only on error."""
    buf = aligned_empty(a.shape, a.np_dtype, 64)
    buf[...] = 0
    return buf


def _status_error(status: np.ndarray, sig: Signature) -> Exception:
    """The error a failed run raises (IndexError, ZeroDivisionError, ...: `rlx.errors`);
    the record is cleared so the next run starts clean."""
    from rlx import errors

    code, site, value, bound = (int(v) for v in status[:4])
    status[...] = 0
    sites = sig.error_sites
    where = sites[site] if 0 <= site < len(sites) else f"check #{site} of @{sig.entry}"
    return errors.status_error(where, code, value, bound)


def _c_strides(a: ArgSpec) -> tuple[int, ...]:
    return np.empty(a.shape, a.np_dtype).strides


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
    if want == np.bool_ and arr.size and arr.view(np.uint8).max() > 1:
        # a bool byte other than 0/1 (e.g. from a view of uint8 data) is True, as in NumPy;
        # compiled code reads i1 as the low bit, so such bytes are normalised here
        arr = arr.view(np.uint8) != 0
    return arr
