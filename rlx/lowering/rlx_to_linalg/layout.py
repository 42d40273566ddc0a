"""The blocked channel layout NCHWc: `rlx.to_nchwc` / `rlx.from_nchwc` as copy loops, and
the layout = "nchwc" convs and pools.

The nchwc kernels are looked up in `NCHWC` (op class -> emitter); its entries are the
*fallback*: unblock x (and the weight, and a residual) into scratch NCHW buffers, run the
op's NCHW kernel (`conv.emit_conv2d`, `pool.emit_pool2d`) and block the result. That is
correct for every blocked op the verifier accepts, not fast; a fast blocked kernel
replaces its entry (and may call the fallback for the cases it does not take).
`LOWERINGS` routes each of these op classes by its `layout` attribute.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.layout import FromNchwcOp, ToNchwcOp, unblocked_shape
from rlx.dialects.rlx.window import Conv2dOp, Pool2dOp
from rlx.lowering.rlx_to_linalg.conv import emit_conv2d
from rlx.lowering.rlx_to_linalg.kernel_builder import Emitter, KernelBuilder, elem, shape
from rlx.lowering.rlx_to_linalg.pool import emit_pool2d


def copy_blocked(kb: KernelBuilder, src: SSAValue, dst: SSAValue, to_blocked: bool) -> None:
    """dst = to_nchwc(src) (`to_blocked`) or from_nchwc(src): one loop nest over the
    blocked tensor, [n, cb, h, w, j] <-> [n, cb·B + j, h, w]."""
    blk = dst if to_blocked else src
    flat = src if to_blocked else dst
    b = shape(blk)[4]
    with kb.nest(list(shape(blk))) as (n, cb, h, w, j):
        at5 = [n, cb, h, w, j]
        at4 = [n, kb.iadd(kb.imul(cb, b), j), h, w]
        if to_blocked:
            kb.store(kb.load(flat, at4), blk, at5)
        else:
            kb.store(kb.load(blk, at5), flat, at4)


def unblock_weight(kb: KernelBuilder, w6: SSAValue) -> SSAValue:
    """A scratch `[F, Cg, KH, KW]` copy of a blocked weight `[F/B, Cg/Bi, KH, KW, Bi, B]`:
    w4[fb·B + o, cb·Bi + i, kh, kw] = w6[fb, cb, kh, kw, i, o]."""
    fb, cb, kh, kw, bi, b = shape(w6)
    w4 = kb.scratch([fb * b, cb * bi, kh, kw], elem(w6))
    with kb.nest([fb, cb, kh, kw, bi, b]) as (f, c, y, x, i, o):
        v = kb.load(w6, [f, c, y, x, i, o])
        kb.store(v, w4, [kb.iadd(kb.imul(f, b), o), kb.iadd(kb.imul(c, bi), i), y, x])
    return w4


def _unblocked(kb: KernelBuilder, v: SSAValue) -> SSAValue:
    out = kb.scratch(unblocked_shape(shape(v)), elem(v))
    copy_blocked(kb, v, out, to_blocked=False)
    return out


def emit_to_nchwc(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    copy_blocked(kb, ins[0], outs[0], to_blocked=True)


def emit_from_nchwc(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    copy_blocked(kb, ins[0], outs[0], to_blocked=False)


def fallback_conv2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """An nchwc conv2d / fused_conv2d_residual through the NCHW kernels (module docstring)."""
    assert isinstance(op, Conv2dOp | FusedConv2dResidualOp)
    n_blocked = 3 if isinstance(op, FusedConv2dResidualOp) else 2  # x, w[, residual]
    x4 = _unblocked(kb, ins[0])
    w4 = unblock_weight(kb, ins[1])
    rest = [_unblocked(kb, v) for v in ins[2:n_blocked]] + list(ins[n_blocked:])
    out4 = kb.scratch(unblocked_shape(shape(outs[0])), elem(outs[0]))
    emit_conv2d(kb, op, [x4, w4, *rest], [out4])
    copy_blocked(kb, out4, outs[0], to_blocked=True)


def fallback_pool2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """An nchwc pool2d through the NCHW kernel (module docstring)."""
    x4 = _unblocked(kb, ins[0])
    out4 = kb.scratch(unblocked_shape(shape(outs[0])), elem(outs[0]))
    emit_pool2d(kb, op, [x4], [out4])
    copy_blocked(kb, out4, outs[0], to_blocked=True)


NCHWC: dict[type[Operation], Emitter] = {
    Conv2dOp: fallback_conv2d,
    FusedConv2dResidualOp: fallback_conv2d,
    Pool2dOp: fallback_pool2d,
}
"""The emitter of each op class with layout = "nchwc" (fast kernels replace entries)."""


def _by_layout(cls: type[Operation], nchw: Emitter) -> Emitter:
    def emit(
        kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
    ) -> None:
        (NCHWC[cls] if op.layout == "nchwc" else nchw)(kb, op, ins, outs)  # type: ignore[attr-defined]

    emit.__name__ = f"emit_{cls.__name__}_by_layout"
    return emit


LOWERINGS: dict[type[Operation], Emitter] = {
    ToNchwcOp: emit_to_nchwc,
    FromNchwcOp: emit_from_nchwc,
    Conv2dOp: _by_layout(Conv2dOp, emit_conv2d),
    FusedConv2dResidualOp: _by_layout(FusedConv2dResidualOp, emit_conv2d),
    Pool2dOp: _by_layout(Pool2dOp, emit_pool2d),
}
