"""Module texts printed by a forked child while the compile goes on (`rlx.compile`).

Why: a cold compile keeps two whole-module texts, the input (`ir("input")`, what the cache
entry regenerates the other stages from) and the graph-pass output (`ir("rlx")`), and
printing one costs xDSL ~0.15-0.2 s on a CNN (densenet121), on the serial path before
`parallel_build` spreads the kernels over the cores. The second core idles then: a child
forked at that moment has a copy-on-write snapshot of the module, prints it to a
temporary file and exits, while this process keeps compiling (and mutating the module).
`result()` reads the text at the end; None when the child failed (the caller falls back:
print another copy, or leave the stage to be regenerated). Linux only (`can_fork`), only
with `RLX_COMPILE_JOBS` above 1, and only for modules of `MIN_OPS` ops or more (a fork
costs ~5-20 ms); otherwise the text is printed here and now.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from rlx.runtime import parallel_build

MIN_OPS = 600
"""Top-level ops of the module's functions below which printing here is cheaper."""


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
    """The text of `module` as it is now, printed in a child (or here: see the module doc)."""

    def __init__(self, module: ModuleOp) -> None:
        self._text: str | None = None
        self._pid = 0
        if parallel_build.jobs() < 2 or _size(module, MIN_OPS) < MIN_OPS:
            self._text = str(module)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            fd, self._path = tempfile.mkstemp(prefix="rlx-text-", suffix=".mlir")
        except OSError:  # no writable temporary directory: print here
            self._text = str(module)
            return
        try:
            pid = os.fork()
        except OSError:  # no process to be had (EAGAIN, ENOMEM): print here
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            self._text = str(module)
            return
        if pid == 0:  # the child: print, write, exit (never returns)
            code = 1
            try:
                gc.disable()  # a collection would touch (and copy) every page of the heap
                _write(fd, str(module).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(fd)
        self._pid = pid

    def result(self) -> str | None:
        """The text, or None when the child failed (it is reaped either way)."""
        if self._pid == 0:
            return self._text
        pid, self._pid = self._pid, 0
        try:
            _, status = os.waitpid(pid, 0)
            ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if ok:
                with open(self._path, encoding="utf-8") as f:
                    self._text = f.read()
        except (OSError, UnicodeDecodeError, ChildProcessError):
            self._text = None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
        return self._text


def later(module: ModuleOp) -> Callable[[], str | None]:
    """`TextLater(module).result` (the getter of the text; call it once, also when the
    compile fails, so that the child is reaped)."""
    return TextLater(module).result
