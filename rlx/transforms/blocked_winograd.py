"""`blocked-layout` (`prepare-weights`): the Winograd weight transform of a blocked conv
whose weights are param-invariant, computed once in `@prepare`.

The blocked Winograd F(2x2, 3x3) kernel (`lowering/rlx_to_linalg/conv_winograd.py`)
multiplies transformed weights `U [16, F/B, C/B, B, B]`, U[4a + b] = (G g Gᵀ)[a, b] over
the taps (kh, kw). Computed by the kernel, U costs a pass over the weights on every call
(and is limited to 256 -> 256 for that reason). For a conv the kernel takes whose blocked
weights `@prepare` already computes (a param or constant reordered), this pass computes U
there with ordinary ops (one transpose, reshapes, one matmul by the constant G ⊗ G: few
ops in `@prepare`, so a small compile; it rounds differently from the kernel's per-call
½(s ± g), within the conv tolerance), passes it as a prepared argument and sets the
conv's `winograd = true`: `@main` reads U only. Activation weights (computed in `@main`, e.g. a squeeze-excite-scaled
`w · g`) keep the per-call transform. Which convs: those the kernel takes with U given,
by the plan the lowering uses (`rlx.conv_plan.winograd_tile`); a `winograd = true` conv
the lowering refuses all the same (IR written so, or `RLX_CONV_WINOGRAD=0` / another
`RLX_GEMM_ISA` when lowering) runs the direct kernel on weights it transforms back (`g =
L U Lᵀ`). docs/conv.md "Winograd".
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from rlx.conv_plan import winograd_tile
from rlx.dialects.rlx.base import shape_of, tensor
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fields import encode_bool
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dialects.rlx.shape import ReshapeOp, TransposeOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.dtypes import to_dense_attr
from rlx.interpreter.ops.layout import WINOGRAD_G
from rlx.transforms.prepare_func import PrepareFunc, erase_dead

K_T = np.einsum("ai,bj->abij", WINOGRAD_G, WINOGRAD_G).reshape(16, 9).astype(np.float32)
"""(G ⊗ G) as a 16x9 matrix: `K_T @ g [(kh, kw), ...] = U [(a, b), ...]`, U = G g Gᵀ (the
coefficients 0, ±¼, ±½, 1 are exact; one matmul keeps `@prepare` and its compile small)."""

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
    when `w` is one), one matmul by the constant `K_T`."""
    fb, cb, _, _, bi, b = shape_of(w.type)
    e = w.type.element_type  # type: ignore[attr-defined]
    src, perm = w, TAPS_FIRST
    reorder = w.owner
    if isinstance(reorder, TransposeOp):
        src, perm = reorder.x, tuple(reorder.permutation[q] for q in TAPS_FIRST)

    def add(op: Operation) -> SSAValue:
        return prep.insert(op).results[0]

    k = add(ConstantOp(to_dense_attr(K_T, tensor((16, 9), e))))
    t = add(TransposeOp(src, permutation=perm))  # [kh, kw, fb, cb, i, o]
    t = add(ReshapeOp(t, result_types=[tensor((9, fb * cb * bi * b), e)]))
    u = add(ReshapeOp(add(MatmulOp(k, t)), result_types=[tensor((16, fb, cb, bi, b), e)]))
    if isinstance(reorder, TransposeOp) and not reorder.results[0].uses:
        Rewriter.erase_op(reorder)
    return u


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
