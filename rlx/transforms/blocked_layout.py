"""`blocked-layout`: run conv-heavy regions in the blocked channel layout NCHWc.

A *region* is a connected set of ops that can run blocked (`blocked_layout_rules.plan`:
convs with groups 1 or depthwise, pools, elementwise ops and regions, channel / spatial
concat, spatial gather / slice (resize, pad, crop), reductions over H and W, scalar
fills), connected through their activation operands. A region with at least `min-convs`
convolutions, and no more full-size conversions at its edges than convolutions (a
ConvNeXt block, depthwise conv between channels-last ops, would pay two copies for one
conv), is converted with one block `B` per region: the largest power of two <=
`block` (0: 16 with AVX-512, else 8) that divides every channel count of the region.
Each op is rebuilt on blocked operands (`rlx.to_nchwc` where a value enters the region,
per-channel operands `[1, C, 1, 1]` reshaped to `[1, C/B, 1, 1, B]`, the input of a conv
whose channels are not blockable (a stem's 3, `narrow-convs`) reshaped to `[N, C, H, W,
1]`: blocked by 1, no copy, and the conv writes the blocked result; conv weights
reordered to `[F/B, C/B, KH, KW, B, B]` by `rlx.reshape` + `rlx.transpose`, folded now
when constant, moved into `@prepare` with `prepare-weights` (with the Winograd weight
transform of 3x3 convs: `blocked_winograd`); a squeeze-excite-scaled
weight `w · g` as the reorder of `w` times the reshaped gate), and every use outside the
region reads `rlx.from_nchwc` of its blocked result; the conversions between ops of the
region cancel (`from_nchwc(to_nchwc(x))`, the ops' canonicalization patterns) and dead
ones are removed. Function arguments and
results stay NCHW. Numerics are unchanged (values only move). docs/layout.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from math import gcd

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx import host_cpu
from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.elementwise import MulOp
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.layout import CancelConversionPair, FromNchwcOp, ToNchwcOp, blocked_shape
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dialects.rlx.shape import ReshapeOp, TransposeOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.env import winograd_enabled
from rlx.ir_checks import graph_block
from rlx.transforms.blocked_layout_rules import (
    ACT,
    MIN_BLOCK,
    NARROW,
    SPREAD,
    WEIGHT,
    Plan,
    plan,
)
from rlx.transforms.blocked_winograd import prepare_winograd
from rlx.transforms.constant_folding import FoldConstantOp
from rlx.transforms.declarations import BlockedLayoutOptions
from rlx.transforms.prepare_func import PrepareFunc

WEIGHT_PERMUTATION = (0, 2, 4, 5, 3, 1)
"""`[F/B, B, Cg/Bi, Bi, KH, KW]` -> `[F/B, Cg/Bi, KH, KW, Bi, B]` ("OIhw{B}i{B}o")."""


def host_block() -> int:
    """The host's f32 vector lanes: 16 with AVX-512, else 8."""
    feats = host_cpu.features()
    return 16 if feats is not None and feats.get("avx512f") else 8


def _block_of(channels: list[int], largest: int) -> int:
    """The largest power of two in [MIN_BLOCK, largest] dividing every channel count."""
    g = reduce(gcd, channels)
    b = largest
    while b > MIN_BLOCK and g % b:
        b //= 2
    return b


def regions(
    block: Block, narrow_convs: bool = True, exclude: frozenset[Operation] = frozenset()
) -> list[list[tuple[Operation, Plan]]]:
    """The connected components (in program order) of the blockable top-level ops of
    `block` but `exclude`, linked through activation operands (`narrow_convs`: as `plan`'s).
    Ops whose result is a conv's weights (the squeeze-excite gate's `w · g`) are not
    activations: they stay out (`_weight_gate` blocks them as weights)."""
    plans: dict[Operation, Plan] = {}
    parent: dict[Operation, Operation] = {}
    weights = {op.w for op in block.ops if isinstance(op, Conv2dOp | FusedConv2dResidualOp)}

    def find(op: Operation) -> Operation:
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in block.ops:
        p = (None if op in exclude or any(r in weights for r in op.results)
             else plan(op, narrow_convs))  # fmt: skip
        if p is None:
            continue
        plans[op] = p
        parent[op] = op
        for v, kind in zip(op.operands, p.kinds, strict=True):
            src = v.owner
            if kind == ACT and isinstance(src, Operation) and src in plans:
                parent[find(src)] = find(op)
    groups: dict[Operation, list[tuple[Operation, Plan]]] = {}
    for op, p in plans.items():
        groups.setdefault(find(op), []).append((op, p))
    return list(groups.values())


def _spatial(v: SSAValue) -> int:
    s = shape_of(v.type)
    return s[-1] * s[-2] if len(s) >= 2 else 1


def edge_conversions(region: list[tuple[Operation, Plan]]) -> int:
    """The full-size layout conversions blocking `region` costs: activations entering it
    (`to_nchwc`) and results used outside it (`from_nchwc`); `[N, C, 1, 1]` values (a
    reshape, or tiny) are not counted."""
    ops = {op for op, _ in region}
    entering: set[SSAValue] = set()
    leaving = 0
    for op, p in region:
        for v, kind in zip(op.operands, p.kinds, strict=True):
            if kind == ACT and v.owner not in ops and _spatial(v) > 1:
                entering.add(v)
        r = op.results[0]
        if not p.sink and _spatial(r) > 1 and any(u.operation not in ops for u in r.uses):
            leaving += 1
    return len(entering) + leaving


class _Blocker:
    """Rewrites the regions of one function block, sharing conversions per value."""

    def __init__(self, fold: bool) -> None:
        self.fold = fold
        self.created: list[Operation] = []
        self.cache: dict[tuple[SSAValue, str, int], SSAValue] = {}
        self.weights: list[Operation] = []
        """Constant weights reordered: erased when folding leaves them unused."""
        self.chains: list[list[Operation]] = []
        """The weight reorders (reshape, transpose) created, for `prepare-weights`."""

    def _insert(self, op: Operation, at: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(at))
        self.created.append(op)
        return op.results[0]

    def _after_def(self, v: SSAValue, first_use: Operation) -> Operation:
        """Where a conversion of `v` goes: right after its definition (so every later
        user can share it), or before `first_use` for block arguments."""
        owner = v.owner
        if isinstance(owner, Operation) and owner.next_op is not None:
            return owner.next_op
        return first_use

    def convert(self, v: SSAValue, kind: str, b: int, user: Operation, lanes_one: bool) -> SSAValue:
        """Operand `v` of `user` in the blocked form its plan asks for (`lanes_one`: a
        weight with one input lane, depthwise or narrow)."""
        if kind not in (ACT, NARROW, SPREAD, WEIGHT):
            return v
        key = (v, kind if kind != WEIGHT else f"w{int(lanes_one)}", b)
        if key in self.cache:
            return self.cache[key]
        t = v.type
        assert isinstance(t, TensorType)
        s, e = shape_of(t), t.element_type
        at = self._after_def(v, user)
        gate = _weight_gate(v) if kind == WEIGHT else None
        if gate is not None:  # w · g (conv_input_scale): reorder w (prepared), scale blocked
            f, cg, kh, kw = s
            bi = 1 if lanes_one else b
            w6 = self.convert(gate[0], WEIGHT, b, user, lanes_one)
            g6 = self._insert(
                ReshapeOp(gate[1], result_types=[tensor((1, cg // bi, 1, 1, bi, 1), e)]), at
            )
            out = self._insert(MulOp.create(operands=[w6, g6], result_types=[w6.type]), at)
            self.weights.append(v.owner)  # type: ignore[arg-type]  # erased when unused
        elif kind == WEIGHT:
            if isinstance(v.owner, ConstantOp):
                self.weights.append(v.owner)
            f, cg, kh, kw = s
            bi = 1 if lanes_one else b
            r = self._insert(
                ReshapeOp(v, result_types=[tensor((f // b, b, cg // bi, bi, kh, kw), e)]), at
            )
            out = self._insert(TransposeOp(r, permutation=WEIGHT_PERMUTATION), at)
            self.chains.append([r.owner, out.owner])  # type: ignore[list-item]
        else:
            s4 = (1,) * (4 - len(s)) + tuple(s)
            src = v.owner
            if kind == ACT and isinstance(src, FromNchwcOp) and shape_of(src.x.type)[4] == b:
                out = src.x  # already blocked with this block
            elif kind in (SPREAD, NARROW) or s4[2:] == (1, 1):  # pure reshapes: no interleave
                target = (
                    (s4[0], 1, s4[2], s4[3], 1) if kind == SPREAD
                    else (*s4, 1) if kind == NARROW
                    else blocked_shape(s4, b)
                )  # fmt: skip
                out = self._insert(ReshapeOp(v, result_types=[tensor(target, e)]), at)
            else:
                if len(s) < 4:
                    v = self._insert(ReshapeOp(v, result_types=[tensor(s4, e)]), at)
                out = self._insert(ToNchwcOp(v, block=b), at)
        self.cache[key] = out
        return out

    def rewrite(self, region: list[tuple[Operation, Plan]], b: int) -> None:
        for op, p in region:
            operands = [
                self.convert(v, k, b, op, p.weight_lanes_one)
                for v, k in zip(op.operands, p.kinds, strict=True)
            ]
            new_ops = p.build(op, operands, b)
            for new in new_ops:
                Rewriter.insert_op(new, InsertPoint.before(op))
            res = new_ops[-1].results[0]
            if not p.sink:
                res = self._insert(FromNchwcOp(res), op)
            op.results[0].replace_all_uses_with(res)
            Rewriter.erase_op(op)

    def cleanup(self, module: builtin.ModuleOp) -> None:
        """Cancel conversion pairs, fold constant weight reorders, drop dead conversions."""
        created = set(self.created)
        patterns: list[RewritePattern] = [CancelConversionPair()]
        if self.fold:
            patterns.append(_Only(FoldConstantOp(1 << 62), created))
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(module)
        for op in [*reversed(self.created), *self.weights]:
            if op.parent is not None and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)


def _weight_gate(w: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """(weights, g) when conv weights `w` are `rlx.mul` of weights by a per-input-channel
    g `[1, C, 1, 1]` / `[C, 1, 1]` (`conv_input_scale`'s squeeze-excite gate): blocked, the
    weights' reorder goes to `@prepare` and the gate scales the blocked weights (no
    reorder of the product on every run)."""
    mul = w.owner
    if not isinstance(mul, MulOp):
        return None
    c = shape_of(w.type)[1]
    for a, g in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        if a.type == w.type and shape_of(g.type) in ((1, c, 1, 1), (c, 1, 1)):
            return a, g
    return None


def _move_to_prepare(prep: PrepareFunc, w: SSAValue) -> None:
    """Compute the weight reorder `w` in `@prepare` and read it in `@main` as a prepared
    argument (`hoist-param-invariant` ran before fusion and never saw it); left in `@main`
    when its weight is computed there."""
    prep.move(w, f"blocked_w{prep.n_outputs()}")


@dataclass
class _Only(RewritePattern):
    """`pattern` on the ops of `ops` only (the weight reorders this pass created)."""

    pattern: RewritePattern
    ops: set[Operation]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op in self.ops and all(isinstance(o.owner, ConstantOp) for o in op.operands):
            self.pattern.match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class BlockedLayout(BlockedLayoutOptions, ModulePass):
    """Run conv-heavy regions in the blocked channel layout NCHWc (to_nchwc / from_nchwc at the edges)."""

    name = "blocked-layout"

    def _regions(self, body: Block, largest: int) -> list[list[tuple[Operation, Plan]]]:
        """`regions`, except that a region whose tail holds it at a narrower block than
        `largest` (SqueezeNet's 1000-way classifier conv, its relu and pool) loses that
        tail, which stays NCHW, so that the rest runs at the full vector width: where the
        ops of channel counts `largest` does not divide feed no other op of the region
        and hold at most a quarter of its convs."""
        out = []
        for region in regions(body, self.narrow_convs):
            ops = {o for o, _ in region}
            tail = frozenset(o for o, p in region if any(c % largest for c in p.channels))
            rest = ops - tail
            feeds_rest = any(u.operation in rest for o in tail for r in o.results for u in r.uses)
            held = sum(p.convs for o, p in region if o in tail)
            if not tail or feeds_rest or 4 * held > sum(p.convs for _, p in region):
                out.append(region)
                continue
            out += [r for r in regions(body, self.narrow_convs, tail) if r[0][0] in ops]
        return out

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        try:
            self.check()
        except ValueError as e:
            raise PassFailedException(str(e)) from None
        largest = self.block or host_block()
        blocker = _Blocker(self.fold_weights)
        fns = [f for f in op.walk() if isinstance(f, func.FuncOp) and not f.is_declaration]
        for fn in fns:
            body = graph_block(fn, "blocked-layout")
            for region in self._regions(body, largest):
                convs = sum(p.convs for _, p in region)
                if convs < self.min_convs or edge_conversions(region) > convs:
                    continue
                chans = [c for _, p in region for c in p.channels]
                blocker.rewrite(region, _block_of(chans, largest))
        blocker.cleanup(op)
        if self.prepare_weights:
            main = next((f for f in fns if f.sym_name.data == "main"), None)
            if main is not None:
                prep = PrepareFunc(op, main, "blocked-layout")
                if self.winograd_weights and winograd_enabled():  # first: U replaces w it reads
                    prepare_winograd(prep, main)
                for chain in blocker.chains:
                    if all(o.parent is main.body.block for o in chain):
                        _move_to_prepare(prep, chain[-1].results[0])
