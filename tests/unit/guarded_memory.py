"""Guard-page buffers for calling generated code (test helper, no tests of its own).

Every buffer gets its own anonymous mapping with a `PROT_NONE` page right after its end
(`side="end"`: catches reads and writes past the end) or right before its start
(`side="start"`: catches accesses before it); the few bytes between a 64-byte aligned
buffer's end and its guard page hold a canary that `check` verifies. Inputs and params
are mapped read-only after they are filled, so a write to them faults too. An access
out of bounds therefore either faults at the instruction that makes it (the process dies
with SIGSEGV: run such tests in a subprocess, `run_isolated`) or is reported by `check`,
instead of silently corrupting the heap and crashing much later (a heap overflow by the
old test harness's status buffer, docs/fuzzing.md).

`guarded_run(graph, inputs)` calls a `CompiledGraph`'s entry function this way, with
every argument kind of its signature (inputs, prepared values, params, outputs, the
status record, the arena); it returns the outputs and the status record.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

PAGE = mmap.PAGESIZE
CANARY = 0xA5
PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]  # fmt: skip
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


class Guarded:
    """One buffer of `nbytes` bytes next to a guard page; `array` views it."""

    def __init__(self, shape: Sequence[int], dtype: np.dtype, side: str = "end") -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        span = -(-max(self.nbytes, 1) // 64) * 64  # the buffer rounded to its alignment
        body = -(-span // PAGE) * PAGE
        self.size = body + PAGE
        base = _libc.mmap(None, self.size, mmap.PROT_READ | mmap.PROT_WRITE,
                          mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)  # fmt: skip
        if base in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"mmap of {self.size} bytes failed")
        self.base = int(base)
        if side == "end":
            guard, self.addr = self.base + body, self.base + body - span
        else:
            guard, self.addr = self.base, self.base + PAGE
        self._guard = guard
        self.slack = span - self.nbytes  # canary bytes after the buffer's end
        ctypes.memset(self.addr, CANARY, span)
        self._protect(guard, PAGE, PROT_NONE)
        raw = (ctypes.c_uint8 * max(self.nbytes, 1)).from_address(self.addr)
        self.array = np.frombuffer(raw, np.uint8, self.nbytes).view(self.dtype).reshape(self.shape)

    def _protect(self, addr: int, n: int, prot: int) -> None:
        if _libc.mprotect(addr, n, prot) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")

    def read_only(self) -> Guarded:
        """Map the buffer's pages read-only (a write faults)."""
        lo = self.base if self._guard != self.base else self.base + PAGE
        self._protect(lo, self.size - PAGE, mmap.PROT_READ)
        return self

    def check(self) -> None:
        """AssertionError if the canary after the buffer's end was overwritten."""
        tail = (
            (ctypes.c_uint8 * self.slack).from_address(self.addr + self.nbytes)
            if self.slack
            else b""
        )
        bad = [i for i, b in enumerate(bytes(tail)) if b != CANARY]
        assert not bad, (
            f"bytes {self.nbytes + bad[0]}..{self.nbytes + bad[-1]} of a {self.nbytes}-byte "
            "buffer were written (out of bounds)"
        )

    def __del__(self) -> None:
        _libc.munmap(self.base, self.size)


def filled(a: np.ndarray, side: str) -> Guarded:
    g = Guarded(a.shape, a.dtype, side)
    g.array[...] = a
    return g.read_only()


def guarded_run(graph: Any, inputs: Sequence[np.ndarray], side: str = "end"
                ) -> tuple[list[np.ndarray], np.ndarray | None]:  # fmt: skip
    """Call `graph`'s entry (and `@prepare`) with guarded buffers: (outputs, status record).
    Params must be set; inputs must have the signature's exact shapes and dtypes."""
    ins = iter(inputs)
    keep: list[Guarded] = []

    def call(
        sig: Any, fn: Any, prepared: dict[str, Guarded]
    ) -> tuple[list[Guarded], Guarded | None]:
        outs, status, ptrs = [], None, []
        for a in sig.args:
            if a.kind == "input":
                b = filled(np.asarray(next(ins)), side)
            elif a.kind == "param":
                b = filled(graph._params[a.name], side)
            elif a.kind == "prepared":
                b = prepared[a.name]
            elif a.kind == "arena":
                b = Guarded((max(sig.arena_bytes, 1),), np.dtype(np.uint8), side)
            else:
                b = Guarded(a.shape, a.np_dtype, side)
                if a.kind == "status":
                    b.array[...] = 0
                    status = b
                else:
                    outs.append(b)
            keep.append(b)
            ptrs.append(b.addr)
        fn(*ptrs)
        for b in keep:
            b.check()
        return outs, status

    prepared: dict[str, Guarded] = {}
    if graph._prep is not None:
        pouts, _ = call(graph._prep, graph._prep_fn, {})
        for j, b in enumerate(pouts):
            prepared[f"__rlx_prep_{j}"] = b.read_only()
    outs, status = call(graph._sig, graph._fn, prepared)
    return [o.array.copy() for o in outs], None if status is None else status.array.copy()


def run_isolated(code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run Python `code` in a fresh interpreter (a fault kills that one, not the tests)."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True,
                          text=True, timeout=timeout, env=env)  # fmt: skip
