"""Attention (one fused scf kernel per op) and rope (linalg.generic, rotate-half).

Attention, per (b, h, i) query row, in the compute type (f32 for f32/f16/bf16):
  1. live keys j in [lo, hi): causal keeps j <= i + offset, sliding_window also
     j >= i + offset - window (offset = Sk - Sq); masked keys are never visited;
  2. s_j = (q_i . k_j) * scale [+ bias], then softcap * tanh(s_j / softcap), into a row
     scratch, tracking the row max m (m := 0 when not finite, as the reference does);
  3. e_j = exp(s_j - m) (a -inf score gives exactly 0), denominator d = sum e_j;
  4. out_i = sum_j (e_j / d) v_j with the d-loop innermost (unit stride over v and out);
     a row without live keys (d == 0) is all zeros.
The dot products and sums use reassoc+contract so LLVM can vectorize the inner loops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import math as mathd
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import attr_float, attr_int, attr_str
from rlx.lowering.rlx_to_linalg.kernel import (
    FM_RED,
    PARALLEL,
    KernelBuilder,
    amap,
    bcast_exprs,
    compute_type,
    elem,
    identity,
    shape,
)


def _bidx(
    bshape: Sequence[int], full: Sequence[int], idx: Sequence[SSAValue], kb: KernelBuilder
) -> list[SSAValue]:
    """Indices into a broadcast operand of shape `bshape` for a point of `full`."""
    off = len(full) - len(bshape)
    return [
        kb.idx(0) if d == 1 and full[off + i] != 1 else idx[off + i] for i, d in enumerate(bshape)
    ]


def emit_attention(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    a = dict(op.attributes)
    q, k, v = ins[:3]
    bias = ins[3] if len(ins) > 3 else None
    out = outs[0]
    b_, h_, sq, d = shape(q)
    sk, dv = shape(k)[2], shape(v)[3]
    ct = compute_type(elem(q))
    scale = attr_float(a, "scale", 1.0 / math.sqrt(d) if d else 1.0)
    softcap = attr_float(a, "softcap")
    kind = attr_str(a, "mask_kind", "bias" if bias is not None else "none")
    window = attr_int(a, "window")
    offset = sk - sq
    c = lambda x: kb.const(x, ct)  # noqa: E731
    scores = kb.scratch([max(sk, 1)], ct)
    acc = out if elem(out) == ct else kb.scratch([max(dv, 1)], ct)
    zero_i = kb.idx(0)
    with kb.nest([b_, h_, sq]) as (bi, hi, i):
        lo, hi_ = zero_i, kb.idx(sk)
        if kind in ("causal", "sliding_window"):
            hi_ = kb.imax(kb.imin(kb.iadd(i, offset + 1), kb.idx(sk)), zero_i)
        if kind == "sliding_window":
            assert window is not None
            lo = kb.imin(kb.imax(kb.iadd(i, offset - window), zero_i), hi_)

        def score(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            def dot(dd: SSAValue, acc_: list[SSAValue]) -> list[SSAValue]:
                x = kb.mulf(kb.load_c(q, [bi, hi, i, dd]), kb.load_c(k, [bi, hi, j, dd]), FM_RED)
                return [kb.addf(acc_[0], x, FM_RED)]

            s = kb.mulf(kb.loop_carry(d, [c(0.0)], dot)[0], c(scale))
            if bias is not None:
                s = kb.addf(
                    s, kb.load_c(bias, _bidx(shape(bias), (b_, h_, sq, sk), [bi, hi, i, j], kb))
                )
            if softcap is not None:
                s = kb.mulf(c(softcap), kb.unary(mathd.TanhOp, kb.divf(s, c(softcap))))
            kb.store(s, scores, [j])
            return [kb.maxf(carried[0], s)]

        m = kb.loop_carry(hi_, [c(float("-inf"))], score, lb=lo)[0]
        finite = kb.cmpf("olt", kb.unary(mathd.AbsFOp, m), c(float("inf")))
        m = kb.select(finite, m, c(0.0))

        def expsum(j: SSAValue, carried: list[SSAValue]) -> list[SSAValue]:
            e = kb.unary(mathd.ExpOp, kb.subf(kb.load(scores, [j]), m))
            kb.store(e, scores, [j])
            return [kb.addf(carried[0], e, FM_RED)]

        den = kb.loop_carry(hi_, [c(0.0)], expsum, lb=lo)[0]
        pos = kb.cmpf("ogt", den, c(0.0))
        inv = kb.select(pos, kb.divf(c(1.0), kb.select(pos, den, c(1.0))), c(0.0))
        row = [bi, hi, i] if acc is out else []
        with kb.loop(dv) as dd:
            kb.store(c(0.0), acc, [*row, dd])
        with kb.loop(hi_, lb=lo) as j:
            p = kb.mulf(kb.load(scores, [j]), inv)
            with kb.loop(dv) as dd:
                cur = kb.load(acc, [*row, dd])
                kb.store(
                    kb.addf(cur, kb.mulf(p, kb.load_c(v, [bi, hi, j, dd]), FM_RED), FM_RED),
                    acc,
                    [*row, dd],
                )
        if acc is not out:
            with kb.loop(dv) as dd:
                kb.store_c(kb.load(acc, [dd]), out, [bi, hi, i, dd])


def emit_rope(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """out[..., i] = x_i c_i - x_{i+h} s_i and out[..., i+h] = x_{i+h} c_i + x_i s_i for
    i < h = n_rot/2: one generic over [..., h] on subviews of the two halves (two
    outputs); the dims >= n_rot are copied."""
    x, cos, sin = ins
    out = outs[0]
    xs = shape(x)
    n = len(xs)
    dd = xs[-1]
    n_rot = attr_int(dict(op.attributes), "n_rot", dd) or dd
    half = n_rot // 2
    hs = [*xs[:-1], half]
    zeros = [0] * (n - 1)
    x1, x2 = kb.subview(x, [*zeros, 0], hs), kb.subview(x, [*zeros, half], hs)
    o1, o2 = kb.subview(out, [*zeros, 0], hs), kb.subview(out, [*zeros, half], hs)
    idm = identity(n)
    cmap, smap = amap(n, bcast_exprs(shape(cos), hs)), amap(n, bcast_exprs(shape(sin), hs))

    def body(
        a1: SSAValue, a2: SSAValue, cv: SSAValue, sv: SSAValue, _o1: SSAValue, _o2: SSAValue
    ) -> list[SSAValue]:
        cv, sv = kb.convert(cv, a1.type), kb.convert(sv, a1.type)
        r1 = kb.subf(kb.mulf(a1, cv), kb.mulf(a2, sv))
        r2 = kb.addf(kb.mulf(a2, cv), kb.mulf(a1, sv))
        return [r1, r2]

    kb.generic([x1, x2, cos, sin], [o1, o2], [idm, idm, cmap, smap, idm, idm], [PARALLEL] * n, body)
    if n_rot < dd:
        ts = [*xs[:-1], dd - n_rot]
        xt, ot = kb.subview(x, [*zeros, n_rot], ts), kb.subview(out, [*zeros, n_rot], ts)
        kb.generic([xt], [ot], [idm, idm], [PARALLEL] * n, lambda v, _o: [v], compute=False)


LOWERINGS = {
    "rlx.attention": emit_attention,
    "rlx.rope": emit_rope,
}
