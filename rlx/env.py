"""RLX's environment flags, read one way everywhere (bottom layer: no rlx imports)."""

from __future__ import annotations

import os
from collections.abc import Callable

FALSY = ("", "0", "false", "off", "no")
"""Values of a set variable that still mean "off" (case-insensitive)."""


def env_flag(name: str) -> bool:
    """RLX flag semantics: set and not one of empty/0/false/off/no (case-insensitive)."""
    v = os.environ.get(name)
    return v is not None and v.strip().lower() not in FALSY


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask, else the machine's CPU count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def env_count(name: str, default: Callable[[], int], auto: bool = False) -> int:
    """A positive integer from the environment variable `name`, `default()` when unset or
    empty (or, with `auto`, set to "auto"); anything else is a ValueError naming `name`."""
    raw = os.environ.get(name, "").strip()
    if not raw or (auto and raw.lower() == "auto"):
        return default()
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        want = "auto or a positive integer" if auto else "a positive integer"
        raise ValueError(f"{name} must be {want}, got {raw!r}")
    return n


WINOGRAD_ENV = "RLX_CONV_WINOGRAD"
"""`RLX_CONV_WINOGRAD=0` keeps blocked 3x3 convs off the Winograd kernel (docs/conv.md)."""


def winograd_enabled() -> bool:
    """Whether blocked 3x3 convs may take the Winograd kernel (`RLX_CONV_WINOGRAD` is not
    "0"). Read at compile time and part of the compile-cache key (`runtime.blas.cache_key`),
    which must not import xDSL, hence here."""
    return os.environ.get(WINOGRAD_ENV, "1") != "0"
