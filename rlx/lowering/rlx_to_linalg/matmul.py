"""Matmul family: matmul, fused_matmul_bias_act, fused_swiglu.

A matmul is `linalg.fill` + one `linalg.generic` over (batch..., i, k, j) with j innermost,
so the inner loop streams a row of b and of the output with unit stride and LLVM can
vectorize it; batch dims follow NumPy broadcasting (a size-1 batch dim maps to 0). The sum
uses reassoc+contract. f16/bf16 accumulate in an f32 scratch buffer; epilogues (bias,
activation, swiglu gating, narrowing) are one more elementwise generic.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap

from rlx.dialects.rlx.base import attr_bool, attr_str
from rlx.lowering.rlx_to_linalg.elementwise import float_unary
from rlx.lowering.rlx_to_linalg.kernel import (
    FM_RED,
    PARALLEL,
    REDUCTION,
    KernelBuilder,
    amap,
    bcast_exprs,
    bcast_map,
    compute_type,
    dim,
    elem,
    identity,
    is_float_t,
    shape,
)


def mm_maps(
    a: Sequence[int], b: Sequence[int], out: Sequence[int]
) -> tuple[AffineMap, AffineMap, AffineMap, list[str]]:
    """Indexing maps of out[batch, i, j] += a[batch', i, k] * b[batch'', k, j] over
    the iteration dims (batch..., i, k, j)."""
    nb = len(out) - 2
    n = nb + 3
    bo = out[:nb]
    a_map = amap(n, [*bcast_exprs(a[:-2], bo), dim(nb), dim(nb + 1)])
    b_map = amap(n, [*bcast_exprs(b[:-2], bo), dim(nb + 1), dim(nb + 2)])
    o_map = amap(n, [*(dim(i) for i in range(nb)), dim(nb), dim(nb + 2)])
    return a_map, b_map, o_map, [PARALLEL] * (nb + 1) + [REDUCTION, PARALLEL]


def mac(kb: KernelBuilder, acc: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    if is_float_t(acc.type):
        return kb.addf(acc, kb.mulf(x, y, FM_RED), FM_RED)
    return kb.addi(acc, kb.muli(x, y))


def accumulator(kb: KernelBuilder, out: SSAValue) -> SSAValue:
    """The output itself when it has the compute type, else an f32 scratch of its shape."""
    ct = compute_type(elem(out))
    return out if ct == elem(out) else kb.scratch(shape(out), ct)


def matmul_into(kb: KernelBuilder, a: SSAValue, b: SSAValue, acc: SSAValue) -> None:
    kb.fill(acc, 0.0 if is_float_t(elem(acc)) else 0)
    a_map, b_map, o_map, iters = mm_maps(shape(a), shape(b), shape(acc))
    kb.generic(
        [a, b],
        [acc],
        [a_map, b_map, o_map],
        iters,
        lambda x, y, c: [mac(kb, c, kb.convert(x, c.type), kb.convert(y, c.type))],
    )


def emit_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = outs[0]
    acc = accumulator(kb, out)
    matmul_into(kb, ins[0], ins[1], acc)
    if acc is not out:
        n = len(shape(out))
        kb.generic([acc], [out], [identity(n)] * 2, [PARALLEL] * n, lambda v, _o: [v])


def emit_fused_matmul_bias_act(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    act = attr_str(dict(op.attributes), "activation", "none")
    assert act is not None
    x, w, bias = ins
    out = outs[0]
    acc = accumulator(kb, out)
    matmul_into(kb, x, w, acc)
    n = len(shape(out))
    bmap = bcast_map(shape(bias), shape(out))
    if acc is out:
        kb.generic(
            [bias],
            [out],
            [bmap, identity(n)],
            [PARALLEL] * n,
            lambda bv, o: [float_unary(kb, act, kb.addf(o, bv))],
        )
    else:
        kb.generic([acc, bias], [out], [identity(n), bmap, identity(n)], [PARALLEL] * n,
                   lambda v, bv, _o: [float_unary(kb, act, kb.addf(v, bv))])  # fmt: skip


def emit_fused_swiglu(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    out = outs[0]
    n = len(shape(out))
    if len(ins) == 1:
        os_ = list(shape(out))
        zeros = [0] * (n - 1)
        first, second = (
            kb.subview(ins[0], [*zeros, 0], os_),
            kb.subview(ins[0], [*zeros, os_[-1]], os_),
        )
        gate, up = (
            (first, second) if attr_bool(dict(op.attributes), "gate_first") else (second, first)
        )
        kb.generic([gate, up], [out], [identity(n)] * 3, [PARALLEL] * n,
                   lambda g, u, _o: [kb.mulf(float_unary(kb, "silu", g), u)])  # fmt: skip
        return
    x, wg, wu = ins
    ag = accumulator(kb, out)
    au = kb.scratch(shape(out), elem(ag))
    kb.fill(ag, 0.0)
    kb.fill(au, 0.0)
    a_map, g_map, o_map, iters = mm_maps(shape(x), shape(wg), shape(out))
    u_map = mm_maps(shape(x), shape(wu), shape(out))[1]
    kb.generic([x, wg, wu], [ag, au], [a_map, g_map, u_map, o_map, o_map], iters,
               lambda xv, g, u, agv, auv: [mac(kb, agv, xv, g), mac(kb, auv, xv, u)])  # fmt: skip
    ins2 = [ag, au] if ag is not out else [au]

    def epi(*a: SSAValue) -> list[SSAValue]:
        g, u = (a[0], a[1]) if ag is not out else (a[1], a[0])
        return [kb.mulf(float_unary(kb, "silu", g), u)]

    kb.generic(ins2, [out], [identity(n)] * (len(ins2) + 1), [PARALLEL] * n, epi)


LOWERINGS = {
    "rlx.matmul": emit_matmul,
    "rlx.fused_matmul_bias_act": emit_fused_matmul_bias_act,
    "rlx.fused_swiglu": emit_fused_swiglu,
}
