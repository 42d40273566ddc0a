"""`attention`: softmax(q @ kᵀ · scale [+ bias]) @ v -> rlx.attention.

kᵀ is `transpose(k, [0, 1, 3, 2])` of a [B, H, S, D] k, or the standard multi-head layout
of ONNX / torch exports after canonicalize has merged its two transposes:
`transpose(k4, [0, 2, 3, 1])` of a [B, S, H, D] k4 (a `transpose(k4, [0, 2, 1, 3])` is
emitted for the fused op). The scale is a scalar multiply / divide of the scores, or 1, times scalar multiplies of q
and kᵀ (torch's SDPA export scales both by √scale). A one-element scale that is a param
(an ONNX initializer imported as an `rlx.param`, so unknown until `set_params`)
becomes `q * s` (or `q / s`) feeding the fused op with scale 1 (a rounding of q·kᵀ·s
moves onto q: within the pass's tolerance).
The [B, S, H, D] -> [B, H, S, D] transposes of q, k, v (and the one back of the output)
are then absorbed: the op takes layout = "bshd" and reads the projections in place.
Grouped-query attention: a k or v repeated over heads the way HF's `repeat_kv` exports
(`reshape [B, Hkv, S, D] -> [B, Hkv, 1, S, D]`, `broadcast_to [B, Hkv, g, S, D]`,
`reshape [B, Hkv·g, S, D]`) is read unrepeated (the op takes Hkv dividing H).
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx.base import f64_attr, ints_attr, shape_of
from rlx.dialects.rlx.compute import AttentionOp, MatmulOp, SoftmaxOp
from rlx.dialects.rlx.elementwise import AddOp, DivOp, MulOp
from rlx.dialects.rlx.leaves import ParamOp
from rlx.dialects.rlx.shape import BroadcastToOp, ReshapeOp, TransposeOp
from rlx.transforms.fusion.attention_heads3 import fuse_heads3
from rlx.transforms.fusion.common import make_op, only_user, producer, rank, scalar_constant


def _single(value: SSAValue, user: Operation) -> bool:
    return only_user(value, type(user)) is user


Dynamic = tuple[SSAValue, bool] | None
"""A one-element scale that is a param, not a constant (an ONNX initializer kept as `rlx.param`):
(the scalar, whether the scores are divided by it); the fused op then takes q scaled by it."""


def _scaled_scores(v: SSAValue) -> tuple[MatmulOp, float, Operation | None, Dynamic] | None:
    """(scores matmul, scale, scaling op, dynamic scale) for mul(s, c), mul(c, s), div(s, c)
    or the matmul itself (scale 1, no scaling op); c a scalar constant, or any one-element
    float param of the scores' element type (`Dynamic`)."""
    op = v.owner
    if isinstance(op, MatmulOp):
        return op, 1.0, None, None
    if isinstance(op, MulOp):
        pairs = ((op.lhs, op.rhs), (op.rhs, op.lhs))
    elif isinstance(op, DivOp):
        pairs = ((op.lhs, op.rhs),)
    else:
        return None
    for s, c in pairs:
        mm, value = producer(s, MatmulOp), scalar_constant(c)
        if mm is None or not _single(mm.result, op) or rank(c) > 4:
            continue
        if value is None:
            if _one_element(c, mm.result):
                return mm, 1.0, op, (c, isinstance(op, DivOp))
            continue
        if isinstance(op, DivOp):
            if value == 0:
                return None
            value = 1.0 / value
        return mm, value, op, None
    return None


def _one_element(c: SSAValue, like: SSAValue) -> bool:
    """`c` is an `rlx.param` (a model weight, not a per-call input) holding one element of
    `like`'s element type."""
    t, u = c.type, like.type
    return (
        producer(c, ParamOp) is not None
        and isinstance(t, TensorType)
        and isinstance(u, TensorType)
        and t.element_type == u.element_type
        and all(d == 1 for d in t.get_shape())
    )


def _prescaled(x: SSAValue, user: Operation) -> tuple[SSAValue, float, Operation | None]:
    """(y, c, the mul) for `x = mul(y, c)` / `mul(c, y)` with a scalar constant c read only
    by `user`, else (x, 1, None)."""
    op = producer(x, MulOp)
    if op is None or not _single(op.result, user):
        return x, 1.0, None
    for y, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        value = scalar_constant(c)
        if value is not None and rank(c) <= 4 and y.type == x.type:
            return y, value, op
    return x, 1.0, None


def _unrepeated(v: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """(the [B, Hkv, S, D] tensor a `repeat_kv` chain expands, the chain's ops) for the
    value `v` of such a chain, else (v, [])."""
    r2 = producer(v, ReshapeOp)
    if r2 is None or rank(v) != 4:
        return v, []
    bc = producer(r2.x, BroadcastToOp)
    r1 = producer(bc.x, ReshapeOp) if bc is not None else None
    if bc is None or r1 is None or rank(r1.x) != 4:
        return v, []
    b, hk, s, d = shape_of(r1.x.type)
    out = shape_of(v.type)
    if shape_of(bc.x.type) != (b, hk, 1, s, d) or len(shape_of(bc.result.type)) != 5:
        return v, []
    g = shape_of(bc.result.type)[2]
    if shape_of(bc.result.type) != (b, hk, g, s, d) or out != (b, hk * g, s, d):
        return v, []
    return r1.x, [r2, bc, r1]


def _keys(
    kt: SSAValue, scores: MatmulOp
) -> tuple[SSAValue, TransposeOp | None, TransposeOp] | None:
    """(k as [B, H, S, D] or its [B, S, H, D] source, the transpose to emit ([0, 2, 1, 3])
    or None, the kᵀ transpose) for the scores' rhs `kt`."""
    tr = producer(kt, TransposeOp)
    if tr is None or not _single(tr.result, scores) or rank(tr.x) != 4:
        return None
    if tr.permutation == (0, 1, 3, 2):
        return tr.x, None, tr
    if tr.permutation == (0, 2, 3, 1):
        heads = TransposeOp.create(
            operands=[tr.x],
            result_types=[_heads_type(tr.x)],
            attributes={"permutation": ints_attr([0, 2, 1, 3])},
        )
        heads.location = tr.location
        return heads.results[0], heads, tr
    return None


def _heads_type(x: SSAValue) -> TensorType:
    """The type of `transpose(x, [0, 2, 1, 3])`."""
    t = x.type
    assert isinstance(t, TensorType)
    b, s, h, d = t.get_shape()
    return TensorType(t.element_type, [b, h, s, d])


class FuseAttention(RewritePattern):
    """matmul(softmax(scale(matmul(q, transpose(k))) [+ bias]), v) on rank-4 q/k/v (and the
    rank-3 [S, H, D] head layout, `attention_heads3`); an
    rlx.attention whose k and v are repeat_kv chains (the ONNX importer's and the Llama
    builder's GQA) reads them unrepeated; one whose q, k, v are [B, S, H, D] tensors
    transposed to [B, H, S, D] reads them in place (`_absorb_transposes`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, MatmulOp):
            self._fuse(op, rewriter)
        elif isinstance(op, AttentionOp) and op.layout == "bhsd":
            if not _unrepeat(op, rewriter):
                _absorb_transposes(op, rewriter)

    def _fuse(self, out: MatmulOp, rewriter: PatternRewriter) -> None:
        if rank(out.a) == 3 and fuse_heads3(out, rewriter, _scaled_scores, _prescaled):
            return
        sm = producer(out.a, SoftmaxOp)
        if sm is None or not _single(sm.result, out):
            return
        axis = sm.axis
        if axis not in (-1, rank(sm.result) - 1):
            return
        chain: list[Operation] = [sm]
        bias: SSAValue | None = None
        pre = sm.x
        add = producer(pre, AddOp)
        if add is not None:
            if not _single(add.result, sm):
                return
            for s, b in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
                if _scaled_scores(s) is not None:
                    pre, bias = s, b
                    break
            else:
                return
            chain.append(add)
        found = _scaled_scores(pre)
        if found is None:
            return
        scores, scale, scale_op, dynamic = found
        last = chain[-1]
        if scale_op is not None and not _single(scale_op.results[0], last):
            return
        if scale_op is None and not _single(scores.result, last):
            return
        q, qscale, qmul = _prescaled(scores.a, scores)
        kt, kscale, kmul = _prescaled(scores.b, scores)
        keys = _keys(kt, kmul or scores)
        if keys is None:
            return
        k, heads, tr = keys
        v = out.b
        scale *= qscale * kscale
        if rank(q) != 4 or rank(v) != 4:
            return
        repeats: list[Operation] = []
        if heads is None:
            k, rk = _unrepeated(k)
            v, rv = _unrepeated(v)
            if shape_of(k.type)[1] != shape_of(v.type)[1]:
                return
            repeats = rk + rv
        new_q: list[Operation] = []  # q * s (or q / s): a dynamic scale moves onto q
        dead: list[Operation] = []
        if dynamic is not None:
            c, divide = dynamic
            if rank(c) != 0:
                scalar = TensorType(c.type.element_type, [])  # type: ignore[attr-defined]
                flat = make_op("rlx.reshape", [c], given=[scalar], like=scale_op)
                if flat is None:
                    return
                new_q.append(flat)
                c = flat.results[0]
            # scale a [B, S, H, D] q before its transpose, so the transposes stay absorbable
            tq = producer(q, TransposeOp)
            if tq is not None and tq.permutation == (0, 2, 1, 3) and _single(q, scores):
                base = tq.x
            else:
                base, tq = q, None
            scaled = make_op("rlx.div" if divide else "rlx.mul", [base, c], like=scale_op)
            if scaled is None or scaled.results[0].type != base.type:
                return
            new_q.append(scaled)
            if tq is not None:
                perm = {"permutation": ints_attr([0, 2, 1, 3])}
                moved = make_op("rlx.transpose", [scaled.results[0]], perm, like=tq)
                if moved is None:
                    return
                new_q.append(moved)
                dead.append(tq)
            q = new_q[-1].results[0]
        attrs = {
            "scale": f64_attr(scale),
            "mask_kind": StringAttr("none" if bias is None else "bias"),
        }
        operands = [q, k, v] + ([] if bias is None else [bias])
        fused = make_op("rlx.attention", operands, attrs, like=out)
        if fused is None or fused.results[0].type != out.result.type:
            return
        if heads is not None:
            rewriter.insert(heads, InsertPoint.before(out))
        for op in new_q:
            rewriter.insert(op, InsertPoint.before(out))
        rewriter.replace(out, fused)
        for op in [*chain, scale_op, scores, kmul, qmul, tr, *dead]:
            if op is None:
                continue
            rewriter.erase(op)
        for op in repeats:  # the repeat_kv chains, unless something else reads them
            if all(not r.uses for r in op.results):
                rewriter.erase(op)


def _unrepeat(op: AttentionOp, rewriter: PatternRewriter) -> bool:
    """attention(q, repeat_kv(k), repeat_kv(v), ...) -> attention(q, k, v, ...) (same
    attributes); the repeat ops are erased when nothing else reads them. True if done."""
    k, rk = _unrepeated(op.k)
    v, rv = _unrepeated(op.v)
    if not rk or not rv or shape_of(k.type)[1] != shape_of(v.type)[1]:
        return False
    rest = [op.bias] if op.bias is not None else []
    fused = AttentionOp.create(
        operands=[op.q, k, v, *rest],
        result_types=[op.result.type],
        attributes=dict(op.attributes),
        properties=dict(op.properties),
    )
    fused.location = op.location
    rewriter.replace(op, fused)
    for dead in [*rk, *rv]:
        if all(not r.uses for r in dead.results):
            rewriter.erase(dead)
    return True


HEADS = (0, 2, 1, 3)
"""The permutation between [B, S, H, D] and [B, H, S, D] (its own inverse)."""


def _absorb_transposes(op: AttentionOp, rewriter: PatternRewriter) -> None:
    """attention(transpose(q4), transpose(k4), transpose(v4)) [then transpose] with `HEADS`
    transposes -> attention {layout = "bshd"}(q4, k4, v4): the flash kernel reads the
    [B, S, H, D] tensors in place and writes its output so (the transpose consuming the
    output is absorbed; without one, a transpose back to [B, H, S, D] is emitted). Done
    only when it removes more copies than it adds: operand transposes read by others
    stay."""
    trs = [producer(x, TransposeOp) for x in (op.q, op.k, op.v)]
    if any(t is None or t.permutation != HEADS for t in trs):
        return
    srcs = [t.x for t in trs if t is not None]
    back = only_user(op.result, TransposeOp)
    if back is not None and back.permutation != HEADS:
        back = None
    dying = {t for t in trs if t is not None and all(u.operation is op for u in t.result.uses)}
    if len(dying) + (back is not None) <= (back is None):
        return
    attrs = dict(op.attributes) | {"layout": StringAttr("bshd")}
    rest = [op.bias] if op.bias is not None else []
    fused = make_op("rlx.attention", [*srcs, *rest], attrs, like=op)
    if fused is None:
        return
    if back is not None:
        if fused.results[0].type != back.result.type:
            return
        rewriter.replace(back, fused)
        rewriter.erase(op)
    else:
        heads = TransposeOp.create(
            operands=[fused.results[0]],
            result_types=[op.result.type],
            attributes={"permutation": ints_attr(list(HEADS))},
        )
        heads.location = op.location
        rewriter.insert(fused, InsertPoint.before(op))
        rewriter.replace(op, heads)
    for t in dying:
        rewriter.erase(t)
