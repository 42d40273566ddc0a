"""`kernel-dispatch`: choose native kernel vs common-IR decomposition per logical kernel."""

from __future__ import annotations

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

from rlx.transforms import dispatch_report as dr
from rlx.transforms.decompositions import LOGICAL, kind_of, rewrite_with_decomposition
from rlx.transforms.dispatch_config import DispatchConfig


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
        if rewrite_with_decomposition(op, LOGICAL, rewriter):
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
