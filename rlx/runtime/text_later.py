"""Module texts printed by a forked child while the compile goes on (`rlx.compile`).

Why: a cold compile keeps two whole-module texts, the input (`ir("input")`, what the cache
entry regenerates the other stages from) and the graph-pass output (`ir("rlx")`), and
printing one costs xDSL ~0.15-0.2 s on a CNN (densenet121), on the serial path before
`parallel_build` spreads the kernels over the cores. The second core idles then: a child
forked at that moment has a copy-on-write snapshot of the module, prints it to a
temporary file and exits, while this process keeps compiling (and mutating the module).
`result()` reads the text at the end; None when the child failed (the caller falls back:
print another copy, or leave the stage to be regenerated). Linux only (`can_fork`), only
when the compile has `jobs` above 1 (`parallel_build.jobs()`, read once per compile by
`rlx.compile`), and only for modules of `MIN_OPS` ops or more (a fork costs ~5-20 ms);
otherwise the text is printed here and now.

A `check` (the verification after the graph passes, ~0.15 s on densenet121) runs in the
same child, on the same snapshot, before it prints; its verdict goes through a pipe, so
that it is known even when printing fails. `result()` raises `CheckFailed` with the
check's message, or `CheckUnknown` when the child died before its verdict (the caller
must then check another way: the snapshot is gone). Printed here, the check runs here,
and `TextLater()` itself raises `CheckFailed`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from rlx.runtime import parallel_build

MIN_OPS = 600
"""Top-level ops of the module's functions below which printing here is cheaper."""
MAX_MESSAGE = 16 << 10
"""Longest check message the child sends (below a pipe's buffer: it never blocks)."""

Check = Callable[[], str | None]
"""A check of the module: None when it passes, else the error message."""


class CheckFailed(Exception):
    """The check found a problem (the message is the check's)."""


class CheckUnknown(Exception):
    """The child died before the check's verdict."""


def _size(module: ModuleOp, cap: int) -> int:
    """Ops in the bodies of `module`'s functions, counted up to `cap`."""
    n = 0
    for f in module.ops:
        for region in f.regions:
            for block in region.blocks:
                n += len(block.ops)
                if n >= cap:
                    return n
    return n


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class TextLater:
    """The text of `module` as it is now, printed in a child (or here: see the module doc),
    and `check`'s verdict on it; `jobs`: the compile's processes (1: print here)."""

    def __init__(self, module: ModuleOp, check: Check | None = None, *, jobs: int) -> None:
        self._text: str | None = None
        self._problem: str | None = None
        self._pid = 0
        self._verdict = -1
        if jobs < 2 or _size(module, MIN_OPS) < MIN_OPS:
            self._here(module, check)
            return
        try:
            fd, self._path = tempfile.mkstemp(prefix="rlx-text-", suffix=".mlir")
        except OSError:  # no writable temporary directory: print here
            self._here(module, check)
            return
        r, w = os.pipe() if check is not None else (-1, -1)

        def run() -> None:  # in the child: check, print, write
            if check is not None:
                os.close(r)
                problem = check()
                verdict = b"-" if problem is None else b"!" + problem.encode()[:MAX_MESSAGE]
                _write(w, verdict)
                os.close(w)
            _write(fd, str(module).encode())

        try:
            pid = parallel_build.fork(run)
        except OSError:  # no process to be had (EAGAIN, ENOMEM): print here
            for d in (fd, r, w):
                if d >= 0:
                    os.close(d)
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            self._here(module, check)
            return
        os.close(fd)
        if w >= 0:
            os.close(w)
        self._pid, self._verdict = pid, r

    def _here(self, module: ModuleOp, check: Check | None) -> None:
        problem = None if check is None else check()
        if problem is not None:
            raise CheckFailed(problem)
        self._text = str(module)

    def result(self) -> str | None:
        """The text, or None when the child failed (it is reaped either way); raises
        `CheckFailed` / `CheckUnknown` for a check that failed / has no verdict."""
        if self._pid != 0:
            self._reap()
        if self._problem is not None:
            raise CheckFailed(self._problem)
        return self._text

    def _reap(self) -> None:
        pid, self._pid = self._pid, 0
        verdict: bytes | None = None
        try:
            _, status = os.waitpid(pid, 0)
            if self._verdict >= 0:
                verdict = _read_all(self._verdict)
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                with open(self._path, encoding="utf-8") as f:
                    self._text = f.read()
        except (OSError, UnicodeDecodeError, ChildProcessError):
            self._text = None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            if self._verdict >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._verdict)
                self._verdict = -1
                if not verdict:  # no check's verdict: the child died before it
                    raise CheckUnknown("the child checking the module gave no verdict")
                self._problem = None if verdict == b"-" else verdict[1:].decode(errors="replace")


def _read_all(fd: int) -> bytes:
    """Everything in the pipe `fd` (its writer has exited)."""
    out = bytearray()
    while chunk := os.read(fd, 1 << 16):
        out += chunk
    return bytes(out)


def later(module: ModuleOp, check: Check | None = None, *, jobs: int) -> Callable[[], str | None]:
    """`TextLater(module, check, jobs=jobs).result` (the getter of the text; call it once,
    also when the compile fails, so that the child is reaped)."""
    return TextLater(module, check, jobs=jobs).result
