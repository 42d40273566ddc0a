"""`matmul_bias_act`: act(x @ w + bias) -> rlx.fused_matmul_bias_act."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.elementwise import AddOp, GeluOp, GeluTanhOp, ReluOp, SiluOp
from rlx.transforms.fusion.common import float_tensor, make_op, only_user, rank

FUSABLE_ACTIVATIONS: dict[type, str] = {
    ReluOp: "relu",
    GeluOp: "gelu",
    GeluTanhOp: "gelu_tanh",
    SiluOp: "silu",
}
"""Epilogue activations absorbed into rlx.fused_matmul_bias_act (RLX fuses only gelu/silu)."""


class FuseMatmulBiasAct(RewritePattern):
    """A single-user matmul -> add(rank <= 1 bias) [-> single-user activation]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mm: MatmulOp, rewriter: PatternRewriter) -> None:
        add = only_user(mm.result, AddOp)
        if add is None or add.lhs is add.rhs or not float_tensor(mm.result):
            return
        bias = add.rhs if add.lhs is mm.result else add.lhs
        if rank(bias) > 1:
            return
        act = only_user(add.result, tuple(FUSABLE_ACTIVATIONS))
        kind = "none" if act is None else FUSABLE_ACTIVATIONS[type(act)]
        last = add if act is None else act
        fused = make_op(
            "rlx.fused_matmul_bias_act",
            [mm.a, mm.b, bias],
            {"activation": StringAttr(kind)},
            like=last,
        )
        if fused is None or fused.results[0].type != last.results[0].type:
            return
        rewriter.replace(last, fused)
        if act is not None:
            rewriter.erase(add)
        rewriter.erase(mm)
