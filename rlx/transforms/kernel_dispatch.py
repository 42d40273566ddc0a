"""`kernel-dispatch`: choose native kernel vs common-IR decomposition per logical kernel."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import PassFailedException

from rlx.transforms.decompositions import (
    ALL_KINDS,
    LOGICAL_KERNELS,
    kind_of,
    rewrite_with_decomposition,
)

POLICIES = ("prefer-native", "common", "native")


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


@dataclass
class DecomposeCommonKernel(RewritePattern):
    """Replace a logical kernel by its common-IR decomposition when `config` says so."""

    config: DispatchConfig
    lowered: set[str] = field(default_factory=set[str])
    """Kinds actually decomposed (for the dispatch report)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        kind = kind_of(op)
        if not op.name.startswith("rlx.") or not self.config.is_common(kind):
            return
        if rewrite_with_decomposition(op, LOGICAL_KERNELS, rewriter):
            self.lowered.add(kind)


@dataclass(frozen=True)
class KernelDispatchPass(ModulePass):
    """Decompose logical kernels (softmax, norms, attention, gelu, fused ops...) per dispatch policy.

    policy: "prefer-native" (common IR only for kinds missing from a non-empty
    `supported_ops`), "common" (always decompose), "native" (never). `force_native_kinds`
    beats `force_common_kinds` beats the policy. Kinds are op names without `rlx.`.
    """

    name = "kernel-dispatch"
    main_option: ClassVar[str] = "policy"

    policy: str = "prefer-native"
    force_common_kinds: tuple[str, ...] = ()
    force_native_kinds: tuple[str, ...] = ()
    supported_ops: tuple[str, ...] = ()

    def config(self) -> DispatchConfig:
        """The validated dispatch decision (PassFailedException on unknown names)."""
        return DispatchConfig.build(
            self.policy, self.force_common_kinds, self.force_native_kinds, self.supported_ops
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from rlx.transforms import dispatch_report as dr

        config = self.config()
        if config.inert and not dr.report_requested():
            return
        before = dr.count_kinds(op)
        pattern = DecomposeCommonKernel(config)
        if not config.inert:
            PatternRewriteWalker(
                GreedyRewritePatternApplier([pattern], dce_enabled=False)
            ).rewrite_module(op)
        dr.maybe_print(
            dr.dispatch_report(
                before,
                op,
                supported_ops=self.supported_ops,
                policy=config.policy,
                force_common_kinds=self.force_common_kinds,
                force_native_kinds=self.force_native_kinds,
                common_kinds=pattern.lowered,
            )
        )
