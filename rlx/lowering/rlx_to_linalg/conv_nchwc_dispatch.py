"""Dispatch of layout = "nchwc" convolutions: the blocked direct kernel (`conv_nchwc`) for
groups == 1, the blocked depthwise kernel (`conv_nchwc_dw`), else `layout.fallback_conv2d`
(other grouped convs, integer convs, a row slab over `SLAB_ELEMENTS`). `KERNELS` are the
entries `registry` installs in `layout.NCHWC`; `nchwc_path` names the kernel in the
dispatch report."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    MemRefType,
    NoneAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.lowering.gemm.conv_blocked import VectorEpilogue
from rlx.lowering.gemm.vector_act import ACTIVATIONS
from rlx.lowering.rlx_to_linalg.conv_common import conv_operands
from rlx.lowering.rlx_to_linalg.conv_nchwc import AnyConv, emit_conv_nchwc
from rlx.lowering.rlx_to_linalg.conv_nchwc_plan import BlockedGeom, direct_tile, plan_tasks
from rlx.lowering.rlx_to_linalg.conv_winograd import emit_conv_winograd, winograd_plan
from rlx.lowering.rlx_to_linalg.kernel_builder import Emitter, KernelBuilder, elem

_FLOATS = (Float32Type, Float16Type, BFloat16Type)


def fast_eligible(g: BlockedGeom, *types: Attribute) -> bool:  # types: x, w, out, ...
    """The blocked kernels take the conv: float identity-layout buffers, 32-bit sizes,
    groups 1 or depthwise, and (groups 1) a slab of one output row that fits."""
    for t in types:
        if not isinstance(t, MemRefType | TensorType) or not isinstance(t.element_type, _FLOATS):
            return False
        if isinstance(t, MemRefType) and not isinstance(t.layout, NoneAttr):
            return False
    sizes = (g.n * g.cb * g.h * g.w * g.xb, g.n * g.fb * g.oh * g.ow * g.b,
             g.fb * g.cb * g.kh * g.kw * g.xb * g.b)  # fmt: skip
    if max(sizes) >= 2**31:
        return False
    if g.depthwise:
        return True
    f32_x = isinstance(types[0].element_type, Float32Type)  # type: ignore[attr-defined]
    g, u, ut, nblk = direct_tile(g, f32_x)
    return plan_tasks(g, u, nblk, f32_x, ut) is not None


def _geom(op: AnyConv, x: Attribute, w: Attribute, out: Attribute) -> BlockedGeom:
    shapes = [tuple(t.get_shape()) for t in (x, w, out)]  # type: ignore[attr-defined]
    if op.winograd:  # U [16, F/B, C/B, B, B] of 3x3 weights
        _, fb, cb, bi, b = shapes[1]
        shapes[1] = (fb, cb, 3, 3, bi, b)
    return BlockedGeom.of_shapes(op, *shapes)


def _unwinograd(kb: KernelBuilder, g: BlockedGeom, u: SSAValue) -> SSAValue:
    """The blocked 3x3 weights `[F/B, C/B, 3, 3, B, B]` of Winograd weights U, `g = L U
    Lᵀ` (L = [[1,0,0,0], [0,1,-1,0], [0,0,0,1]], L G = I): for a `winograd = true` conv
    the Winograd kernel does not take (its task split; serial, not a hot path)."""
    w6 = kb.scratch([g.fb, g.cb, 3, 3, g.b, g.b], elem(u))
    with kb.loop(g.fb) as fb, kb.loop(g.cb) as cb, kb.loop(g.b) as i, kb.loop(g.b) as o:
        m = [kb.load(u, [p, fb, cb, i, o]) for p in range(16)]

        def inv(v: list[SSAValue]) -> list[SSAValue]:
            return [v[0], kb.v(arith.SubfOp(v[1], v[2])), v[3]]

        rows = [inv([m[4 * a + c] for a in range(4)]) for c in range(4)]  # [c][kh]
        for kh in range(3):
            for kw, v in enumerate(inv([rows[c][kh] for c in range(4)])):
                kb.store(v, w6, [fb, cb, kh, kw, i, o])
    return w6


def nchwc_path(op: AnyConv) -> str:
    """The kernel an nchwc conv takes (dispatch report; tensor-typed op)."""
    types = [v.type for v in (op.x, op.w, op.result)]
    g = _geom(op, *types)
    if op.groups != 1 and not g.depthwise or not fast_eligible(g, *types):
        return "nchwc fallback (unblocked copies + NCHW kernel)"
    if g.depthwise:
        return f"nchwc depthwise x{g.b}"
    ops = [op.x, op.w, op.result, *op.operands[2:]]
    wg = winograd_plan(g, _all_f32(v.type for v in ops), _vector_epi(op), op.reduce, op.winograd)
    if wg is not None:
        pre = ", prepared weights" if op.winograd else ""
        return f"nchwc winograd F(2x2,3x3) {wg[0]}x{wg[1]}x{g.b}{pre}"
    f32_x = isinstance(types[0].element_type, Float32Type)  # type: ignore[attr-defined]
    g, u, ut, nblk = direct_tile(g, f32_x)
    planned = plan_tasks(g, u, nblk, f32_x, ut)
    assert planned is not None
    narrow = f", x blocked by {g.xb}" if g.xb != g.b else ""
    tail = f"+{ut}" if ut else ""
    return f"nchwc direct {u}x{nblk}x{g.b}{tail} ({planned[0]} input{narrow})"


def _all_f32(types: Iterable[Attribute]) -> bool:
    return all(isinstance(getattr(t, "element_type", None), Float32Type) for t in types)


def _vector_epi(op: AnyConv) -> VectorEpilogue | None:
    """The op's epilogue as vector code (+ residual, then the activation; in registers for
    none / relu / clip, else over the tile in L1): every activation but gelu (erf), which
    the kernels apply in their scalar tile loop."""
    act, clip = op.activation, op.clip
    if act not in ("none", "relu", "clip", *ACTIVATIONS):
        return None
    lo, hi = (clip[0], clip[1]) if act == "clip" and clip is not None else (0.0, 0.0)
    return VectorEpilogue(op.bias is not None, isinstance(op, FusedConv2dResidualOp), act, lo, hi)


def emit_conv2d_nchwc(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """An nchwc conv2d / fused_conv2d_residual: the blocked direct or depthwise kernel,
    else `layout.fallback_conv2d` (grouped convs, integers, oversized rows)."""
    from rlx.lowering.rlx_to_linalg.conv import epilogue
    from rlx.lowering.rlx_to_linalg.conv_nchwc_dw import emit_dw_nchwc
    from rlx.lowering.rlx_to_linalg.layout import fallback_conv2d

    assert isinstance(op, Conv2dOp | FusedConv2dResidualOp)
    x, w, bias, extras = conv_operands(op, ins)
    out = outs[0]
    g = _geom(op, x.type, w.type, out.type)
    types = [v.type for v in (x, w, out, *extras, *([bias] if bias is not None else []))]
    wg = winograd_plan(g, _all_f32(types), _vector_epi(op), op.reduce, op.winograd)
    if op.winograd and (wg is None or not fast_eligible(g, *types) or kb.kernels is None):
        w = _unwinograd(kb, g, w)  # the direct kernel or the fallback on the 3x3 weights
        ins = [ins[0], w, *ins[2:]]
        wg = None
    if (op.groups == 1 or g.depthwise) and fast_eligible(g, *types):
        post, key = epilogue(op)
        if g.depthwise:
            if emit_dw_nchwc(kb, g, x, w, bias, out, post, extras, key, _vector_epi(op)):
                return
        elif wg is not None:
            if emit_conv_winograd(kb, g, x, w, bias, out, extras, _vector_epi(op), wg,  # type: ignore[arg-type]
                                  op.winograd):  # fmt: skip
                return
        elif emit_conv_nchwc(kb, g, x, w, bias, out, post, extras, key, _vector_epi(op)):
            return
    fallback_conv2d(kb, op, ins, outs)


KERNELS: dict[type[Operation], Emitter] = {
    Conv2dOp: emit_conv2d_nchwc,
    FusedConv2dResidualOp: emit_conv2d_nchwc,
}
"""The fast entries of `layout.NCHWC` (installed by `registry`)."""
