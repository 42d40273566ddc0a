"""`blocked-layout` (`prepare-weights`): the Winograd weight transform of a blocked conv
whose weights are param-invariant, computed once in `@prepare`.

The blocked Winograd F(2x2, 3x3) kernel (`lowering/rlx_to_linalg/conv_winograd.py`)
multiplies transformed weights `U [16, F/B, C/B, B, B]`, U[4a + b] = (G g Gᵀ)[a, b] over
the taps (kh, kw). Computed by the kernel, U costs a pass over the weights on every call
(and is limited to 256 -> 256 for that reason). For a conv the kernel takes whose blocked
weights `@prepare` already computes (a param or constant reordered), this pass computes U
there with ordinary ops (one transpose, then G over each tap axis by slices, adds,
multiplies by ½ and a concat: the kernel's own arithmetic, so U has the same bits either
way), passes it as a prepared argument and sets the conv's `winograd = true`: `@main`
reads U only. Activation weights (computed in `@main`, e.g. a squeeze-excite-scaled
`w · g`) keep the per-call transform. Which convs: those the kernel takes with U given,
by the plan the lowering uses (`rlx.conv_plan.winograd_tile`); a `winograd = true` conv
the lowering refuses all the same (IR written so, or `RLX_CONV_WINOGRAD=0` / another
`RLX_GEMM_ISA` when lowering) runs the direct kernel on weights it transforms back (`g =
L U Lᵀ`). docs/conv.md "Winograd".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Float32Type, FloatAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from rlx.conv_plan import winograd_tile
from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.control import ElementwiseRegionOp, YieldOp
from rlx.dialects.rlx.fields import encode_bool
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dialects.rlx.shape import ConcatOp, ReshapeOp, SliceOp, TransposeOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.dtypes import to_dense_attr
from rlx.transforms.prepare_func import PrepareFunc, erase_dead

SIGN = np.array([1, -1], np.float32)
"""`s + t1 · SIGN` gives `s + t1` and `s - t1` (exactly) in one elementwise region (`_g`)."""

TAPS_FIRST = (2, 3, 0, 1, 4, 5)
"""`[F/B, C/B, 3, 3, Bi, B]` -> `[3, 3, F/B, C/B, Bi, B]`."""


def candidate(op: Operation) -> bool:
    """A blocked conv (not yet `winograd`) the Winograd kernel takes with U prepared: the
    kernel's own plan (`rlx.conv_plan.winograd_tile`, the same conditions and scratch
    limits, on this host's register tile) for its tensor shapes and attributes."""
    if not isinstance(op, Conv2dOp | FusedConv2dResidualOp) or op.layout != "nchwc":
        return False
    if op.winograd:
        return False
    strides, _, dil = op.spatial()
    ws = shape_of(op.w.type)
    values = [*op.operands, *op.results]
    f32 = all(
        isinstance(v.type, TensorType) and isinstance(v.type.element_type, Float32Type)
        for v in values
    )
    tile = winograd_tile(x=shape_of(op.x.type), w=ws, out=shape_of(op.result.type),
                         kernel=ws[2:4], stride=strides, dilation=dil, groups=op.groups,
                         f32=f32, act=op.activation, reduce=op.reduce, prepared=True)  # fmt: skip
    return tile is not None


def _transform(prep: PrepareFunc, w: SSAValue) -> SSAValue:
    """U [16, F/B, C/B, B, B] of the blocked weights `w` [F/B, C/B, 3, 3, B, B] (values
    of `@prepare`): the taps first (one transpose, composed with the blocked reorder's
    when `w` is one), then G over kh and G over kw (`_g`), as the kernel's per-call
    transform computes them: the same bits whether the weights are params or not."""
    fb, cb, _, _, bi, b = shape_of(w.type)
    e = w.type.element_type  # type: ignore[attr-defined]
    src, perm = w, TAPS_FIRST
    reorder = w.owner
    if isinstance(reorder, TransposeOp):
        src, perm = reorder.x, tuple(reorder.permutation[q] for q in TAPS_FIRST)

    def add(op: Operation) -> SSAValue:
        return prep.insert(op).results[0]

    t = add(TransposeOp(src, permutation=perm))  # [kh, kw, fb, cb, i, o]
    t = add(ReshapeOp(t, result_types=[tensor((3, 3, fb * cb * bi * b), e)]))
    for axis in (0, 1):  # G over kh, then over kw: [a, b, (fb, cb, i, o)]
        shape = [2 if a == axis else 1 for a in range(3)]
        sign = add(ConstantOp(to_dense_attr(SIGN.reshape(shape), tensor(shape, e))))
        t = _g(add, t, axis, sign)
    u = add(ReshapeOp(t, result_types=[tensor((16, fb, cb, bi, b), e)]))
    if isinstance(reorder, TransposeOp) and not reorder.results[0].uses:
        Rewriter.erase_op(reorder)
    return u


def _g(add: Callable[[Operation], SSAValue], t: SSAValue, axis: int,
       sign: SSAValue) -> SSAValue:  # fmt: skip
    """G along `axis` of `t` (3 -> 4): (t0, ½((t0 + t2) + t1), ½((t0 + t2) - t1), t2),
    the operations and their order of the kernel's `conv_winograd._g` (t1 · ±1 and ½ are
    exact, s + (-t1) is s - t1): the middle two rows in one elementwise region over the
    taps and `sign` = [1, -1] along `axis`."""
    shape = shape_of(t.type)
    e = t.type.element_type  # type: ignore[attr-defined]

    def tap(i: int) -> SSAValue:
        starts = [i if a == axis else 0 for a in range(len(shape))]
        limits = [i + 1 if a == axis else d for a, d in enumerate(shape)]
        return add(SliceOp(t, starts=starts, limits=limits))

    g0, g1, g2 = tap(0), tap(1), tap(2)
    block = Block(arg_types=[e, e, e, e])
    with ImplicitBuilder(block):
        a0, a1, a2, sg = block.args
        s = arith.AddfOp(a0, a2)
        v = arith.AddfOp(s, arith.MulfOp(a1, sg))
        YieldOp(arith.MulfOp(v, arith.ConstantOp(FloatAttr(0.5, e))))
    mid = [2 if a == axis else d for a, d in enumerate(shape)]
    pm = add(ElementwiseRegionOp([g0, g1, g2, sign], tensor(mid, e), Region(block)))
    return add(ConcatOp(g0, pm, g2, axis=axis))


def prepare_winograd(prep: PrepareFunc, main: func.FuncOp) -> None:
    """Every `candidate` conv of `main` whose weights `@prepare` can compute reads their
    transform U from `@prepare` (`winograd = true`); the others are left as they are."""
    done: dict[SSAValue, SSAValue] = {}
    for op in [o for o in main.body.block.ops if candidate(o)]:
        w = op.operands[1]
        if w not in done:
            src = prep.source(w)
            if src is None:  # computed from the inputs: the kernel transforms per call
                continue
            done[w] = prep.add_output(_transform(prep, src), f"winograd_w{prep.n_outputs()}")
        attrs = {**op.attributes, "winograd": encode_bool(True)}
        operands = [op.operands[0], done[w], *op.operands[2:]]
        new = type(op).create(operands=operands, attributes=attrs,
                              result_types=[r.type for r in op.results])  # fmt: skip
        Rewriter.replace_op(op, new)
        erase_dead(w)
