"""The decision of `kernel-dispatch`: policy and per-kind overrides, validated
(`DispatchConfig`), and the name checks shared with `legalize`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.utils.exceptions import PassFailedException

from rlx.transforms.declarations import DISPATCH_POLICIES
from rlx.transforms.decompositions import ALL_KINDS, LOGICAL_KERNELS

POLICIES = DISPATCH_POLICIES


def names_error(what: str, bad: Sequence[str], accepted: Iterable[str]) -> PassFailedException:
    import difflib

    acc = list(accepted)
    hint = ""
    close = difflib.get_close_matches(bad[0], acc, n=1) if bad else []
    if close:
        hint = f" (did you mean '{close[0]}'?)"
    return PassFailedException(
        f"unknown {what} {', '.join(repr(b) for b in bad)}{hint}; accepted: {', '.join(acc)}"
    )


def parse_kinds(
    names: Iterable[str], accepted: Sequence[str], what: str = "op kind"
) -> frozenset[str]:
    """Validate kind names (an `rlx.` prefix is tolerated); PassFailedException otherwise."""
    out: set[str] = set()
    bad: list[str] = []
    for raw in names:
        n = str(raw).strip().removeprefix("rlx.")
        (out.add(n) if n in accepted else bad.append(str(raw)))
    if bad:
        raise names_error(what, bad, accepted)
    return frozenset(out)


@dataclass(frozen=True)
class DispatchConfig:
    """Native vs common-IR choice per logical kernel (RLX `KernelDispatchConfig`).

    force_native beats force_common beats the policy; "prefer-native" picks the common
    IR iff `supported` is non-empty and lacks the kind.
    """

    policy: str = "prefer-native"
    force_common: frozenset[str] = frozenset()
    force_native: frozenset[str] = frozenset()
    supported: frozenset[str] = frozenset()

    @staticmethod
    def build(
        policy: str = "prefer-native",
        force_common: Iterable[str] = (),
        force_native: Iterable[str] = (),
        supported: Iterable[str] = (),
    ) -> DispatchConfig:
        """Validate user-given names (PassFailedException listing the accepted ones)."""
        if policy not in POLICIES:
            raise names_error("kernel-dispatch policy", [policy], POLICIES)
        kernels = tuple(LOGICAL_KERNELS)
        return DispatchConfig(
            policy,
            parse_kinds(force_common, kernels, "logical kernel"),
            parse_kinds(force_native, kernels, "logical kernel"),
            parse_kinds(supported, ALL_KINDS),
        )

    def is_common(self, kind: str) -> bool:
        """Whether `kind` goes through its common-IR decomposition."""
        if kind not in LOGICAL_KERNELS or kind in self.force_native:
            return False
        if kind in self.force_common or self.policy == "common":
            return True
        if self.policy == "native":
            return False
        return bool(self.supported) and kind not in self.supported

    @property
    def inert(self) -> bool:
        """True when no kind can go common (the pass has nothing to do)."""
        return (
            not self.force_common
            and self.policy != "common"
            and (self.policy == "native" or not self.supported)
        )
