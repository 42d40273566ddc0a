"""Normalizations over the last axis: layer_norm, rms_norm and their fused-residual forms.

Row after row (all dims but the last), three passes over the row, as softmax's row kernel:
the first widens h (x, or x + residual for the fused forms, never rounded) to f64 once into
a row buffer (`d` f64 in L1) while summing it (layer_norm) or its squares (rms_norm); the
second (layer_norm only) sums the squares of h - mean from that buffer: two-pass biased
variance like the reference; the last computes (h - mean) * rstd * gamma + beta from the
buffer and rounds once to the result type, stored ordinarily or streamed
(`streaming.row`). The sums and the row statistics live in registers (`scf.for`
iter_args, vectorized and interleaved by LLVM). Everything is computed in f64, as the
reference does: f32 sums of squares overflow for |x| ~ 1e19 (giving 0 instead of +-1),
and an f32 mean of a near-constant row loses the digits that 1/sqrt(var + eps) then
amplifies. The old form (three `linalg.generic` passes over the whole chunk, x re-read
from L2 and widened in every pass) cost the same in cache on one znver4 core (0.38 ns per
element at 64x768, session 9, load 9): the row form reads x once from memory and widens
it once (one `vcvtps2pd` per element instead of three).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.compute import LayerNormOp, RmsNormOp
from rlx.dialects.rlx.fused import FusedResidualLayerNormOp, FusedResidualRmsNormOp
from rlx.lowering.rlx_to_linalg import streaming
from rlx.lowering.rlx_to_linalg.kernel_builder import FM_RED, Emitter, KernelBuilder, elem, shape
from rlx.lowering.rlx_to_linalg.strided import row_major

CT = f64
"""The compute type of every norm (see the module docstring)."""


def _norm(
    kb: KernelBuilder,
    op: Operation,
    ins: Sequence[SSAValue],
    outs: Sequence[SSAValue],
    layer: bool,
    residual: bool,
) -> None:
    """The norm row after row (see the module docstring)."""
    xin = list(ins[:2] if residual else ins[:1])
    params = list(ins[len(xin) :])
    beta = params[1] if len(params) > 1 else None
    xs = shape(ins[0])
    d = xs[-1]
    eps = op.epsilon
    assert eps is not None
    out = outs[0]
    # gamma / beta widened once per call (exactly: the values each element would widen)
    per_col = [_widened(kb, v, d) for v in params]
    row = kb.scratch([d], CT)
    stream = kb.stream_stores and streaming.row_ok(out, d)
    flat = streaming.flat(kb, out) if stream else None
    with kb.nest(list(xs[:-1])) as ridx:

        def h(j: SSAValue) -> SSAValue:
            w = [kb.load_c(x, [*ridx, j]) for x in xin]
            w = [v if v.type == CT else kb.convert(v, CT) for v in w]
            return kb.addf(w[0], w[1]) if residual else w[0]

        def first(j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            v = h(j)
            kb.store(v, row, [j])
            return [kb.addf(acc[0], v if layer else kb.mulf(v, v, FM_RED), FM_RED)]

        (total,) = kb.loop_carry(d, [kb.const(0.0, CT)], first)
        mean = kb.divf(total, kb.const(float(d), CT)) if layer else None
        stat = total
        if mean is not None:

            def second(j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
                v = kb.subf(kb.load(row, [j]), mean)
                return [kb.addf(acc[0], kb.mulf(v, v, FM_RED), FM_RED)]

            (stat,) = kb.loop_carry(d, [kb.const(0.0, CT)], second)
        var = kb.addf(kb.divf(stat, kb.const(float(d), CT)), kb.const(eps, CT))
        rstd = kb.divf(kb.const(1.0, CT), kb.unary(mathd.SqrtOp, var))

        def value(j: SSAValue) -> SSAValue:
            v = kb.load(row, [j])
            if mean is not None:
                v = kb.subf(v, mean)
            y = kb.mulf(kb.mulf(v, rstd), kb.load(per_col[0], [j]))
            if beta is not None:
                y = kb.addf(y, kb.load(per_col[1], [j]))
            return kb.convert(y, elem(out))

        if flat is not None:
            base = kb.idx(0)
            for r, st in zip(ridx, row_major(list(xs[:-1])), strict=True):
                base = kb.addi(base, kb.imul(r, st * d))
            streaming.row(kb, flat, base, kb.idx(d), value)
        else:
            with kb.loop(d) as j:
                kb.store(value(j), out, [*ridx, j])
    if flat is not None:
        streaming.fence(kb)


def _widened(kb: KernelBuilder, v: SSAValue, d: int) -> SSAValue:
    """A per-column parameter (gamma, beta: `d` elements) converted to f64 into a scratch
    buffer, once per kernel call instead of once per element of the last pass."""
    w = kb.scratch([d], CT)
    with kb.loop(d) as j:
        kb.store(kb.convert(kb.load_c(v, [j]), CT), w, [j])
    return w


LOWERINGS: dict[type[Operation], Emitter] = {
    cls: functools.partial(_norm, layer=layer, residual=residual)
    for cls, layer, residual in (
        (LayerNormOp, True, False),
        (RmsNormOp, False, False),
        (FusedResidualLayerNormOp, True, True),
        (FusedResidualRmsNormOp, False, True),
    )
}
