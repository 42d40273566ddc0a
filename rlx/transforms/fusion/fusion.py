"""The `fusion` pass: rewrite primitive rlx op chains into fused rlx ops."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern
from xdsl.utils.exceptions import PassFailedException

from rlx.env import env_flag
from rlx.transforms import fusion_report  # a module: fusion_report imports fusion patterns
from rlx.transforms.declarations import FUSION_TARGETS, PATTERN_ORDER, FusionToggles
from rlx.transforms.fusion.attention import FuseAttention
from rlx.transforms.fusion.conv_bias_act import FuseConvBiasAct
from rlx.transforms.fusion.conv_input_scale import FuseConvInputScale
from rlx.transforms.fusion.conv_pool import FuseConvGlobalPool
from rlx.transforms.fusion.elementwise_region import FuseElementwiseRegion
from rlx.transforms.fusion.matmul_bias_act import FuseMatmulBiasAct
from rlx.transforms.fusion.norms import (
    FuseResidualLayerNorm,
    FuseResidualRmsNorm,
    FuseRmsNormReshape,
)
from rlx.transforms.fusion.shared_input_matmul import FuseSharedInputMatmul
from rlx.transforms.fusion.swiglu import FuseSwiglu, FuseSwigluDualMatmul


@dataclass(frozen=True)
class FusionPass(FusionToggles, ModulePass):
    """Fuse primitive rlx op chains into fused ops (matmul epilogues, norms, SwiGLU, attention, regions).

    Options (kebab-case on the command line, e.g. `fusion{swiglu=false max-steps=32}`):
    `target` ("cpu", or "none" to disable every pattern), one bool per pattern (see
    PATTERN_ORDER), `max_steps` / `max_inputs` bounding elementwise regions (0 = no limit,
    the CPU default), `report` (print the fusion report to stderr; also env
    RLX_FUSION_REPORT=1) and `assert_clean` (fail on any near miss).
    """

    name: ClassVar[str] = "fusion"

    target: str = "cpu"
    assert_clean: bool = False

    def patterns(self) -> list[tuple[str, RewritePattern]]:
        """The enabled (name, pattern) pairs in application order."""
        if self.target not in FUSION_TARGETS:
            raise PassFailedException(
                f"fusion: unknown target '{self.target}' (expected one of {', '.join(FUSION_TARGETS)})"
            )
        if self.max_steps < 0 or self.max_inputs < 0:
            raise PassFailedException(
                "fusion: max-steps and max-inputs must be >= 0 (0 = no limit)"
            )
        if self.target == "none":
            return []
        table: dict[str, RewritePattern] = {
            "matmul_bias_act": FuseMatmulBiasAct(),
            "residual_layer_norm": FuseResidualLayerNorm(),
            "residual_rms_norm": FuseResidualRmsNorm(),
            "rms_norm_reshape": FuseRmsNormReshape(),
            "swiglu_dual_matmul": FuseSwigluDualMatmul(),
            "shared_input_matmul": FuseSharedInputMatmul(),
            "swiglu": FuseSwiglu(),
            "attention": FuseAttention(),
            "conv_bias_act": FuseConvBiasAct(),
            "conv_global_pool": FuseConvGlobalPool(),
            "conv_input_scale": FuseConvInputScale(),
            "elementwise_region": FuseElementwiseRegion(self.max_steps, self.max_inputs),
        }
        return [(n, table[n]) for n in PATTERN_ORDER if getattr(self, n)]

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns = self.patterns()
        want_report = self.report or self.assert_clean or env_flag("RLX_FUSION_REPORT")
        before = fusion_report.fusion_counts(op) if want_report else None
        for _, pattern in patterns:
            PatternRewriteWalker(pattern, apply_recursively=True).rewrite_module(op)
        if before is None:
            return

        report = fusion_report.analyze_fusion(before, op)
        if self.report or env_flag("RLX_FUSION_REPORT"):
            print(report.format(), file=sys.stderr)
        if self.assert_clean and report.missed:
            raise report.contract_error()


__all__ = ["FusionPass", "PATTERN_ORDER"]
