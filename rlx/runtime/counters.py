"""Process-wide counts of compiler work, so tests can check that a load compiled nothing.

`COUNTS["pipeline"]`: runs of the rlx pass pipeline (`rlx.runtime.compiler._build`);
`COUNTS["llvm"]`: LLVM optimisation + code generation of a `JitModule`. Loading stored
object code (`rlx.runtime.aot`) bumps neither. Counting, not timing: a check stays exact
on a loaded machine.
"""

from __future__ import annotations

import threading

COUNTS: dict[str, int] = {"pipeline": 0, "llvm": 0}
_LOCK = threading.Lock()


def bump(name: str) -> None:
    """Add one to `COUNTS[name]`."""
    with _LOCK:
        COUNTS[name] = COUNTS.get(name, 0) + 1


def snapshot() -> dict[str, int]:
    """A copy of the counts."""
    with _LOCK:
        return dict(COUNTS)
