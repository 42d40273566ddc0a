"""rng_uniform / rng_normal: the Philox4x64-10 streams of rlx.formats.philox, bit-exact.

The stream key k = seed + seed_offset * GOLDEN is a compile-time constant (the seed is
the pass option `rng-seed`), so every round key is a constant; `rng-backend=zero` fills
zeros instead. Block b uses counter [b + 1, 0, 0, 0]; the 64x64 -> 128-bit multiply-high is
done in i128. uniform: element i = word i, f32(lo + f32(u * span)) with
u = (w >> 40) * 2^-24 (f64 for f64 results); normal: element i = words 2i, 2i+1,
Box-Muller in f64 with libm log/cos, rounded once. No fast-math flags anywhere (no fma).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float64Type, IntegerType, MemRefType, f32, f64, i64
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.leaves import RngNormalOp, RngUniformOp
from rlx.formats import philox
from rlx.lowering.rlx_to_linalg.kernel_builder import FM_NONE, Emitter, KernelBuilder, elem, shape

I128 = IntegerType(128)
MASK = (1 << 64) - 1


def philox_block(kb: KernelBuilder, c0: SSAValue, key: int) -> list[SSAValue]:
    """The four output words of Philox4x64-10 for counter [c0, 0, 0, 0] and key [key, 0]."""
    zero = kb.const(0, i64)
    c = [c0, zero, zero, zero]
    sh = kb.const(64, I128)
    for r in range(philox.ROUNDS):
        k0 = kb.const((key + r * philox.W0) & MASK, i64)
        k1 = kb.const((r * philox.W1) & MASK, i64)
        his, los = [], []
        for m, x in ((philox.M0, c[0]), (philox.M1, c[2])):
            mc = kb.const(m, i64)
            wide = kb.muli(kb.v(arith.ExtUIOp(x, I128)), kb.const(m, I128))
            his.append(kb.v(arith.TruncIOp(kb.v(arith.ShRUIOp(wide, sh)), i64)))
            los.append(kb.muli(x, mc))
        xor = lambda a, b: kb.v(arith.XOrIOp(a, b))  # noqa: E731
        c = [xor(xor(his[1], c[1]), k0), los[1], xor(xor(his[0], c[3]), k1), los[0]]
    return c


def unit24(kb: KernelBuilder, w: SSAValue, t: object) -> SSAValue:
    """(w >> 40) * 2^-24 in float type t (exact)."""
    top = kb.v(arith.ShRUIOp(w, kb.const(40, i64)))
    return kb.mulf(kb.convert(top, t, signed=False), kb.const(2.0**-24, t), FM_NONE)  # type: ignore[arg-type]


def _flat(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """A 1-D view of a kernel argument."""
    from xdsl.dialects import memref
    from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr

    shp = shape(mem)
    if len(shp) == 1:
        return mem
    n = int(np.prod(shp, dtype=np.int64))
    t = MemRefType(elem(mem), [n])
    if len(shp) == 0:
        props = {
            "reassociation": ArrayAttr([]),
            "static_output_shape": DenseArrayBase.from_list(i64, [1]),
        }
        return kb.hoist(
            memref.ExpandShapeOp.build(operands=[mem, []], result_types=[t], properties=props)
        )
    groups = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in range(len(shp))])])
    return kb.hoist(
        memref.CollapseShapeOp.build(
            operands=[mem], result_types=[t], properties={"reassociation": groups}
        )
    )


def _blocks(kb: KernelBuilder, n_full: int, tail: int, per: int, key: int, write: object) -> None:
    """Run `write(words, first_element, count)` on every block: a loop over full blocks,
    then the partial tail block."""
    with kb.loop(n_full) as b:
        c0 = kb.addi(kb.convert(b, i64), kb.const(1, i64))
        write(philox_block(kb, c0, key), kb.imul(b, per), per)  # type: ignore[operator]
    if tail:
        write(philox_block(kb, kb.const(n_full + 1, i64), key), kb.idx(n_full * per), tail)  # type: ignore[operator]


def emit_rng_uniform(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    if kb.rng_backend == "zero":
        kb.fill(outs[0], 0.0)
        return
    out = _flat(kb, outs[0])
    n = shape(out)[0]
    wt = f64 if isinstance(elem(out), Float64Type) else f32
    npt = np.float64 if wt == f64 else np.float32
    lo = npt(op.low)
    span = npt(npt(op.high) - lo)
    key = philox.stream_key(kb.rng_seed, op.seed_offset or 0)

    def write(words: list[SSAValue], first: SSAValue, count: int) -> None:
        for lane in range(count):
            u = unit24(kb, words[lane], wt)
            v = kb.addf(
                kb.mulf(u, kb.const(float(span), wt), FM_NONE), kb.const(float(lo), wt), FM_NONE
            )
            kb.store_c(v, out, [kb.iadd(first, lane)])

    _blocks(kb, n // 4, n % 4, 4, key, write)


def emit_rng_normal(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    if kb.rng_backend == "zero":
        kb.fill(outs[0], 0.0)
        return
    out = _flat(kb, outs[0])
    n = shape(out)[0]
    mean = kb.const(float(op.mean or 0.0), f64)
    std = kb.const(float(op.std or 0.0), f64)
    key = philox.stream_key(kb.rng_seed, op.seed_offset or 0)

    def write(words: list[SSAValue], first: SSAValue, count: int) -> None:
        for e in range(count):
            u1 = kb.maxf(unit24(kb, words[2 * e], f64), kb.const(2.0**-24, f64))
            u2 = unit24(kb, words[2 * e + 1], f64)
            lg = kb.mulf(kb.const(-2.0, f64), kb.v(mathd.LogOp(u1)), FM_NONE)
            r = kb.v(mathd.SqrtOp(lg))
            z = kb.mulf(
                r, kb.v(mathd.CosOp(kb.mulf(kb.const(2.0 * math.pi, f64), u2, FM_NONE))), FM_NONE
            )
            v = kb.addf(mean, kb.mulf(std, z, FM_NONE), FM_NONE)
            kb.store_c(v, out, [kb.iadd(first, e)])

    _blocks(kb, n // 2, n % 2, 2, key, write)


LOWERINGS: dict[type[Operation], Emitter] = {
    RngUniformOp: emit_rng_uniform,
    RngNormalOp: emit_rng_normal,
}
