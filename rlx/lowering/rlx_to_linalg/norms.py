"""Normalizations over the last axis: layer_norm, rms_norm and their fused-residual forms.

Per-row statistics live in small scratch buffers (rows = all dims but the last): layer_norm
is two-pass (mean, then the biased variance of x - mean) like the reference, then one
elementwise pass computes (h - mean) * rstd * gamma + beta. Everything is computed in f64
and rounded once to the result type, as the reference does: f32 sums of squares overflow
for |x| ~ 1e19 (giving 0 instead of +-1), and an f32 mean of a near-constant row loses the
digits that 1/sqrt(var + eps) then amplifies. The fused forms recompute
h = x + residual in every pass instead of materializing it (and never round it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.compute import LayerNormOp, RmsNormOp
from rlx.dialects.rlx.fused import FusedResidualLayerNormOp, FusedResidualRmsNormOp
from rlx.lowering.rlx_to_linalg import streaming
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_RED,
    PARALLEL,
    REDUCTION,
    Emitter,
    KernelBuilder,
    amap,
    dim,
    elem,
    identity,
    shape,
)
from rlx.lowering.rlx_to_linalg.strided import row_major


def _norm(
    kb: KernelBuilder,
    op: Operation,
    ins: Sequence[SSAValue],
    outs: Sequence[SSAValue],
    layer: bool,
    residual: bool,
) -> None:
    xin = list(ins[:2] if residual else ins[:1])
    params = list(ins[len(xin) :])
    gamma = params[0]
    beta = params[1] if len(params) > 1 else None
    xs = shape(ins[0])
    n = len(xs)
    d = xs[-1]
    # f64 throughout (the numeric policy of the norms): the statistics of |x| ~ 1e30 do not
    # overflow, and (x - mean) of near-constant rows keeps its digits; one rounding at the end
    ct = f64
    eps = op.epsilon
    assert eps is not None
    rows = list(xs[:-1])
    idm, rmap, pmap = identity(n), amap(n, [dim(i) for i in range(n - 1)]), amap(n, [dim(n - 1)])
    red = [PARALLEL] * (n - 1) + [REDUCTION]
    xmaps = [idm] * len(xin)
    rid, rpar = identity(n - 1), [PARALLEL] * (n - 1)

    def h(vals: Sequence[SSAValue]) -> SSAValue:
        w = [kb.convert(v, ct) for v in vals]
        return kb.addf(w[0], w[1]) if residual else w[0]

    def rstd(sumsq: SSAValue) -> SSAValue:
        v = kb.addf(kb.divf(sumsq, kb.const(float(d), ct)), kb.const(eps, ct))
        return kb.divf(kb.const(1.0, ct), kb.unary(mathd.SqrtOp, v))

    k = len(xin)
    mean = None
    if layer:
        mean = kb.scratch(rows, ct)
        kb.fill(mean, 0.0)
        kb.generic(xin, [mean], [*xmaps, rmap], red, lambda *a: [kb.addf(a[k], h(a[:k]), FM_RED)])
        kb.generic([], [mean], [rid], rpar, lambda mv: [kb.divf(mv, kb.const(float(d), ct))])
    stat = kb.scratch(rows, ct)
    kb.fill(stat, 0.0)

    def sq(a: Sequence[SSAValue]) -> list[SSAValue]:
        v = kb.subf(h(a[:k]), a[k]) if layer else h(a[:k])
        return [kb.addf(a[-1], kb.mulf(v, v, FM_RED), FM_RED)]

    stat_ins = [*xin, mean] if mean is not None else xin
    stat_maps = [*xmaps, rmap] if mean is not None else xmaps
    kb.generic(stat_ins, [stat], [*stat_maps, rmap], red, lambda *a: sq(a))
    kb.generic([], [stat], [rid], rpar, lambda s: [rstd(s)])

    def final(*a: SSAValue) -> list[SSAValue]:
        v = h(a[:k])
        i = k
        if mean is not None:
            v = kb.subf(v, a[i])
            i += 1
        y = kb.mulf(kb.mulf(v, a[i]), kb.convert(a[i + 1], ct))
        if beta is not None:
            y = kb.addf(y, kb.convert(a[i + 2], ct))
        return [y]

    # gamma / beta widened once per call (exactly: the values `final` would widen per element)
    per_col = [_widened(kb, v, d) for v in (gamma, *([beta] if beta is not None else []))]
    f_ins = [*stat_ins, stat, *per_col]
    if kb.stream_stores and streaming.row_ok(outs[0], d):
        per_row = [*([mean] if mean is not None else []), stat]
        _final_streamed(kb, xin, per_row, per_col, outs[0], rows, final)
        return
    f_maps = [*stat_maps, rmap, pmap, *([pmap] if beta is not None else []), idm]
    kb.generic(f_ins, outs, f_maps, [PARALLEL] * n, final)


def _widened(kb: KernelBuilder, v: SSAValue, d: int) -> SSAValue:
    """A per-column parameter (gamma, beta: `d` elements) converted to f64 into a scratch
    buffer, once per kernel call instead of once per element of the last pass."""
    w = kb.scratch([d], f64)
    with kb.loop(d) as j:
        kb.store(kb.convert(kb.load_c(v, [j]), f64), w, [j])
    return w


def _final_streamed(
    kb: KernelBuilder,
    xin: Sequence[SSAValue],
    per_row: Sequence[SSAValue],
    per_col: Sequence[SSAValue],
    out: SSAValue,
    rows: Sequence[int],
    final: Callable[..., list[SSAValue]],
) -> None:
    """The last pass as explicit loops, each row a `streaming.row` (non-temporal stores
    of whole lines): the same `final` formula on the same loaded values (`xin` per
    element, `per_row` statistics, `per_col` the widened gamma / beta) as the
    `linalg.generic` form, so the same results bit for bit."""
    d = shape(out)[-1]
    flat = streaming.flat(kb, out)
    strides = row_major(rows)
    with kb.nest(list(rows)) as ridx:
        base = kb.idx(0)
        for r, st in zip(ridx, strides, strict=True):
            base = kb.addi(base, kb.imul(r, st * d))
        stats = [kb.load_c(v, ridx) for v in per_row]

        def value(j: SSAValue) -> SSAValue:
            xs = [kb.load_c(x, [*ridx, j]) for x in xin]
            cols = [kb.load(w, [j]) for w in per_col]
            (y,) = final(*xs, *stats, *cols)
            return kb.convert(y, elem(out))

        streaming.row(kb, flat, base, kb.idx(d), value)
    streaming.fence(kb)


LOWERINGS: dict[type[Operation], Emitter] = {
    cls: functools.partial(_norm, layer=layer, residual=residual)
    for cls, layer, residual in (
        (LayerNormOp, True, False),
        (RmsNormOp, False, False),
        (FusedResidualLayerNormOp, True, True),
        (FusedResidualRmsNormOp, False, True),
    )
}
