"""RLX's environment flags, read one way everywhere (bottom layer: no rlx imports)."""

from __future__ import annotations

import os

FALSY = ("", "0", "false", "off", "no")
"""Values of a set variable that still mean "off" (case-insensitive)."""


def env_flag(name: str) -> bool:
    """RLX flag semantics: set and not one of empty/0/false/off/no (case-insensitive)."""
    v = os.environ.get(name)
    return v is not None and v.strip().lower() not in FALSY
