"""Bake profiles (`--opt PROFILE`) and the fine-grained `BakeOptions` they expand to."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["MEMORY_MODES", "BakeOptions", "BakeProfile", "parse_memory_mode"]


class BakeProfile(str, Enum):
    """How aggressively `rlx-bake` rewrites the graph (default: `exact`)."""

    MERGE = "merge"
    FOLD = "fold"
    EXACT = "exact"
    SIZE = "size"

    @property
    def intent(self) -> str:
        """One-line description (what `rlx-bake --list-profiles` prints)."""
        return _INTENT[self]

    @property
    def aliases(self) -> tuple[str, ...]:
        """The other accepted names of this profile."""
        return tuple(a for a, p in _ALIASES.items() if p is self)

    @classmethod
    def parse(cls, name: str | BakeProfile) -> BakeProfile:
        """Profile from a name or alias (case-insensitive, trimmed); ValueError otherwise."""
        if isinstance(name, BakeProfile):
            return name
        if not isinstance(name, str):
            raise TypeError(f"bake profile must be a string, got {type(name).__name__}")
        key = name.strip().lower()
        for p in cls:
            if key == p.value:
                return p
        if key in _ALIASES:
            return _ALIASES[key]
        listing = "; ".join(f"{p.value} ({', '.join(p.aliases)})" for p in cls)
        raise ValueError(f"unknown bake profile {name!r}; expected one of: {listing}")

    @classmethod
    def all_names(cls) -> tuple[str, ...]:
        """Canonical names, then aliases: merge, fold, exact, size, none, raw, ..."""
        return (*(p.value for p in cls), *_ALIASES)


_INTENT = {
    BakeProfile.MERGE: "one file, same dense compute (package only)",
    BakeProfile.FOLD: "fold weight-only math; keep dense GEMM",
    BakeProfile.EXACT: "lossless skip of all-zero matmuls + ternary TQ2_0 pack + cleanup",
    BakeProfile.SIZE: "exact + Q8_0 pack of the remaining matmul weights (lossy)",
}
_ALIASES: dict[str, BakeProfile] = {
    "none": BakeProfile.MERGE,
    "raw": BakeProfile.MERGE,
    "cleanup": BakeProfile.FOLD,
    "lossless": BakeProfile.EXACT,
    "default": BakeProfile.EXACT,
    "compute": BakeProfile.EXACT,
    "compact": BakeProfile.SIZE,
    "quant": BakeProfile.SIZE,
}

MEMORY_MODES = ("compact", "duplex", "runtime")
_MEMORY_ALIASES = {"table": "compact", "lean": "compact", "both": "duplex", "full": "duplex",
                   "graph": "runtime"}  # fmt: skip


def parse_memory_mode(name: str) -> str:
    """`compact` (weights only in the table), `duplex` (in the module and the table) or
    `runtime` (no weight bytes: graph and code only, weights set at run time)."""
    key = str(name).strip().lower()
    key = _MEMORY_ALIASES.get(key, key)
    if key not in MEMORY_MODES:
        raise ValueError(
            f"unknown memory mode {name!r}; expected compact (table, lean), duplex (both, "
            "full) or runtime (graph)"
        )
    return key


@dataclass(frozen=True)
class BakeOptions:
    """Every switch of the bake pipeline; `from_profile` gives a profile's settings."""

    profile: BakeProfile = BakeProfile.EXACT
    constant_folding: bool = True
    dce: bool = True
    simplify: bool = True
    skip_zero: bool = True
    ternary: bool = True
    quant: bool = False
    unfold: bool = True
    memory: str = "compact"
    dedupe: bool = True
    keep_folded_bindings: bool = False

    @classmethod
    def from_profile(cls, profile: str | BakeProfile = BakeProfile.EXACT) -> BakeOptions:
        """The settings of a profile (see docs/bake.md for the table)."""
        p = BakeProfile.parse(profile)
        cleanup = p is not BakeProfile.MERGE
        lossless = p in (BakeProfile.EXACT, BakeProfile.SIZE)
        return cls(
            profile=p,
            constant_folding=cleanup,
            dce=cleanup,
            simplify=cleanup,
            skip_zero=lossless,
            ternary=lossless,
            quant=p is BakeProfile.SIZE,
            unfold=True,
            memory="duplex" if p is BakeProfile.MERGE else "compact",
            dedupe=cleanup,
            keep_folded_bindings=not cleanup,
        )

    def replace(self, **overrides: Any) -> BakeOptions:
        """A copy with some fields changed; unknown fields raise ValueError (listing fields)."""
        names = [f.name for f in dataclasses.fields(self)]
        bad = sorted(set(overrides) - set(names))
        if bad:
            raise ValueError(f"unknown bake option(s) {bad}; options: {', '.join(names)}")
        kw = dict(overrides)
        if "profile" in kw:
            kw["profile"] = BakeProfile.parse(kw["profile"])
        if "memory" in kw:
            kw["memory"] = parse_memory_mode(kw["memory"])
        for k, v in kw.items():
            if k not in ("profile", "memory") and not isinstance(v, bool):
                raise ValueError(f"bake option {k} must be a bool, got {v!r}")
        return dataclasses.replace(self, **kw)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (stored in the artifact header)."""
        d = dataclasses.asdict(self)
        d["profile"] = self.profile.value
        return d
