"""`legalize`: rewrite every op kind the backend does not claim into claimed ops, or fail."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from rlx.diagnostics import OpError
from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.transforms import dispatch_report as dr
from rlx.transforms.decompositions import (
    ALL_KINDS,
    ALWAYS_LEGAL,
    LOGICAL,
    PRIMITIVE,
    DecompositionTable,
    kind_of,
    rewrite_with_decomposition,
)
from rlx.transforms.dispatch_config import parse_kinds
from rlx.transforms.expansion import Expansion

MAX_ROUNDS = 16

# ----------------------------------------------------------------------------- elementwise_region

_BINARY = {
    "arith.addf": "add", "arith.addi": "add", "arith.subf": "sub", "arith.subi": "sub",
    "arith.mulf": "mul", "arith.muli": "mul", "arith.divf": "div", "arith.divsi": "div",
    "arith.maximumf": "max", "arith.maxsi": "max", "arith.minimumf": "min", "arith.minsi": "min",
    "math.powf": "pow",
}  # fmt: skip
_UNARY = {
    "arith.negf": "neg", "math.exp": "exp", "math.log": "log", "math.sqrt": "sqrt",
    "math.rsqrt": "rsqrt", "math.tanh": "tanh", "math.erf": "erf", "math.sin": "sin",
    "math.cos": "cos", "math.absf": "abs", "math.absi": "abs", "math.floor": "floor",
    "math.ceil": "ceil", "math.roundeven": "round",
}  # fmt: skip
_CASTS = (
    "arith.extf",
    "arith.truncf",
    "arith.sitofp",
    "arith.fptosi",
    "arith.extsi",
    "arith.trunci",
)
_CMPF = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 14: "ne"}  # oeq ogt oge olt ole une
_CMPI = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge"}  # signed predicates


def _elementwise_region(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """One rlx op per scalar body op, on tensors (rlx binary ops broadcast like the region)."""
    from xdsl.dialects import arith

    block = op.regions[0].blocks.first
    assert block is not None
    e = Expansion()
    env: dict[SSAValue, SSAValue] = dict(zip(block.args, op.operands, strict=True))
    for inner in block.ops:
        args = [env[o] for o in inner.operands]
        if inner.name == "rlx.yield":
            out = args[0]
            if out.type != op.results[0].type:
                out = e.emit("broadcast_to", out, result_type=op.results[0].type)
            return e.ops, out
        name = inner.name
        if name in _BINARY:
            val = e.emit(_BINARY[name], *args)
        elif name in _UNARY:
            val = e.emit(_UNARY[name], *args)
        elif name in _CASTS:
            val = e.emit(
                "cast", args[0], result_type=tensor(shape_of(args[0].type), inner.results[0].type)
            )
        elif isinstance(inner, arith.CmpfOp | arith.CmpiOp):
            table = _CMPF if isinstance(inner, arith.CmpfOp) else _CMPI
            pred = table.get(inner.predicate.value.data)
            if pred is None:
                return None
            val = e.emit("compare", *args, predicate=pred)
        elif isinstance(inner, arith.SelectOp):
            val = e.emit("where", *args)
        elif isinstance(inner, arith.ConstantOp):
            v = inner.value
            if not hasattr(v, "value"):
                return None
            val = e.const(v.value.data, inner.results[0].type)  # type: ignore[union-attr]
        else:
            return None
        env[inner.results[0]] = val
    return None


LEGALIZE_REWRITES: DecompositionTable = {
    **LOGICAL,
    **PRIMITIVE,
    ElementwiseRegionOp: _elementwise_region,
}
"""Every rewrite `legalize` may apply to an unclaimed op (by class)."""


def is_legal(op: Operation, supported: frozenset[str]) -> bool:
    """Non-rlx ops, leaves and `rlx.yield` are always legal; an empty claim accepts all."""
    if not supported or not op.name.startswith("rlx."):
        return True
    kind = kind_of(op)
    return kind in supported or kind in ALWAYS_LEGAL


def illegal_ops(module: Operation, supported: frozenset[str]) -> list[Operation]:
    return [o for o in module.walk() if not is_legal(o, supported)]


@dataclass
class RewriteIllegalOp(RewritePattern):
    """Replace an unclaimed op by its decomposition / unfused form, if it has one."""

    supported: frozenset[str]
    rewritten: Counter[str] = field(default_factory=Counter[str])

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if is_legal(op, self.supported):
            return
        kind = kind_of(op)
        if rewrite_with_decomposition(op, LEGALIZE_REWRITES, rewriter):
            self.rewritten[kind] += 1


def failure_message(offenders: list[Operation]) -> str:
    """`legalization failed: N op kinds not supported by the backend: rlx.k (n ops), ...`."""
    counts = Counter(o.name for o in offenders)
    kinds = ", ".join(f"{k} ({n} op{'s' if n != 1 else ''})" for k, n in sorted(counts.items()))
    n = len(counts)
    return (
        f"legalization failed: {n} op kind{'s' if n != 1 else ''} not supported by the backend: "
        f"{kinds}; hint: claim the kind in supported-ops (backend support) or add a "
        "decomposition in rlx/transforms/decompositions.py"
    )


@dataclass(frozen=True)
class LegalizePass(ModulePass):
    """Rewrite op kinds missing from `supported_ops` into claimed ops, or fail listing them.

    Up to 16 rounds of rewrites; an empty `supported_ops` accepts every kind. Leaves
    (`param`, `constant`) and `yield` are always legal. Kinds are op names without `rlx.`.
    """

    name = "legalize"
    main_option: ClassVar[str] = "supported_ops"

    supported_ops: tuple[str, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:

        supported = parse_kinds(self.supported_ops, ALL_KINDS, "op kind in supported-ops")
        if not supported:
            return
        before = dr.count_kinds(op)
        pattern = RewriteIllegalOp(supported)
        walker = PatternRewriteWalker(GreedyRewritePatternApplier([pattern], dce_enabled=False))
        for _ in range(MAX_ROUNDS):
            if not illegal_ops(op, supported) or not walker.rewrite_module(op):
                break
        dr.maybe_print(dr.dispatch_report(before, op, supported_ops=supported, common_kinds=()))
        offenders = illegal_ops(op, supported)
        if offenders:
            raise OpError(offenders[0], failure_message(offenders))
