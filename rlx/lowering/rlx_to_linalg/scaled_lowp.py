"""Scaled low-precision ops (rlx.formats.lowp): scaled_quant_scale, scaled_quantize and
scaled_matmul, as scf loop nests.

Decoding a code is a table lookup (a 256-entry `memref.global`); encoding is the nearest
code of |v| on the sorted non-negative grid (an unrolled branchless binary search, the
error compared in f64, ties to the code with an even bit 0, saturation at max_finite,
NaN -> 0, the sign from signbit(v), no -0 in FNUZ formats): exactly `lowp.encode`. Scale
layouts: per_tensor f32 [1]; mx E8M0 bytes (table 2^(b-127), 255 = NaN); nvfp4 f8e4m3
bytes. All f32 arithmetic is done without fast-math flags, in the reference's order, so
results are bit-identical.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IndexType, f32, f64, i32, i64
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.quant import ScaledMatmulOp, ScaledQuantizeOp, ScaledQuantScaleOp
from rlx.formats import lowp
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_NONE,
    FM_RED,
    Emitter,
    KernelBuilder,
    elem,
    shape,
)

_E4M3 = lowp.NAMED_FORMATS["f8e4m3"]


def _tab(kb: KernelBuilder, values: np.ndarray, t: object) -> SSAValue:
    return kb.table([float(v) for v in values], t)  # type: ignore[arg-type]


def decode_table(kb: KernelBuilder, fmt: lowp.LowpFormat, t: object = f32) -> SSAValue:
    vals = np.zeros(256)
    tab = lowp.decode_table(fmt)
    vals[: tab.size] = tab
    return _tab(kb, vals, t)


def e8m0_table(kb: KernelBuilder) -> SSAValue:
    vals = np.array([np.ldexp(1.0, b - 127) for b in range(255)] + [np.nan])
    return _tab(kb, vals, f32)


def lookup(kb: KernelBuilder, table: SSAValue, code: SSAValue) -> SSAValue:
    """table[code] for an i8 code (zero-extended)."""
    i = kb.convert(code, IndexType(), signed=False)
    return kb.load(table, [i])


class Scales:
    """Reads the decoded f32 scale of (row, K position) for a layout."""

    def __init__(self, kb: KernelBuilder, mem: SSAValue, layout: str | None) -> None:
        self.kb, self.mem = kb, mem
        self.lay = lowp.parse_layout(layout or "per_tensor")
        self.table = None
        if self.lay.kind == "mx":
            self.table = e8m0_table(kb)
        elif self.lay.kind == "nvfp4":
            self.table = decode_table(kb, _E4M3)

    def block_len(self, k: int) -> int:
        return max(k, 1) if self.lay.kind == "per_tensor" else self.lay.block

    def at(self, row: SSAValue, blk: SSAValue) -> SSAValue:
        if self.table is None:
            return self.kb.load(self.mem, [0])
        return lookup(self.kb, self.table, self.kb.load(self.mem, [row, blk]))


def encode(kb: KernelBuilder, fmt: lowp.LowpFormat, v: SSAValue) -> SSAValue:
    """lowp.encode of one f32/f64 value, as an i32 code."""
    grid = lowp._positive_grid(fmt)  # noqa: SLF001 - the normative grid
    p = grid.size
    g = _tab(kb, grid, f64)
    x = kb.convert(v, f64)
    a = kb.minf(kb.unary(mathd.AbsFOp, x), kb.const(float(grid[-1]), f64))
    pos = kb.count_below(g, p, a)
    hi = kb.imax(kb.imin(pos, kb.idx(p - 1)), kb.idx(1))
    lo = kb.iadd(hi, -1)
    err_lo = kb.subf(a, kb.load(g, [lo]), FM_NONE)
    err_hi = kb.subf(kb.load(g, [hi]), a, FM_NONE)
    lo_odd = kb.cmpi("ne", kb.v(arith.AndIOp(lo, kb.idx(1))), kb.idx(0))
    tie = kb.v(arith.AndIOp(kb.cmpf("oeq", err_hi, err_lo), lo_odd))
    take_hi = kb.v(arith.OrIOp(kb.cmpf("olt", err_hi, err_lo), tie))
    mag = kb.convert(kb.select(take_hi, hi, lo), i32)
    neg = kb.cmpi("slt", kb.v(arith.BitcastOp(x, i64)), kb.const(0, i64))
    if fmt.kind == "fnuz":
        neg = kb.v(arith.AndIOp(neg, kb.cmpi("ne", mag, kb.const(0, i32))))
    code = kb.v(
        arith.OrIOp(
            mag, kb.v(arith.ShLIOp(kb.convert(neg, i32, signed=False), kb.const(fmt.bits - 1, i32)))
        )
    )
    return kb.select(kb.cmpf("uno", x, x), kb.const(0, i32), code)


def _block_amax(
    kb: KernelBuilder, x: SSAValue, row: SSAValue, lo: SSAValue, hi: SSAValue
) -> SSAValue:
    def step(p: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        return [kb.maxf(acc[0], kb.unary(mathd.AbsFOp, kb.load(x, [row, p])))]

    return kb.loop_carry(hi, [kb.const(0.0, f32)], step, lb=lo)[0]


def emit_scaled_quant_scale(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    fmt = lowp.parse_format(op.format or "")
    lay = lowp.parse_layout(op.scale_layout or "per_tensor")
    x, out = ins[0], outs[0]
    rows, k = shape(x)
    mf = kb.const(float(np.float32(lowp.max_finite(fmt))), f32)
    zero, one = kb.const(0.0, f32), kb.const(1.0, f32)
    if lay.kind == "per_tensor":

        def row_max(r: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            return [kb.maxf(acc[0], _block_amax(kb, x, r, kb.idx(0), kb.idx(k)))]

        amax = kb.loop_carry(rows, [zero], row_max)[0]
        s = kb.select(kb.cmpf("oeq", amax, zero), one, kb.divf(amax, mf, FM_NONE))
        kb.store(s, out, [0])
        return
    nb = shape(out)[1]
    with kb.nest([rows, nb]) as (r, b):
        lo = kb.imul(b, lay.block)
        amax = _block_amax(kb, x, r, lo, kb.imin(kb.iadd(lo, lay.block), kb.idx(k)))
        if lay.kind == "nvfp4":
            q = kb.select(kb.cmpf("oeq", amax, zero), one, kb.divf(amax, mf, FM_NONE))
            byte = encode(kb, _E4M3, q)
        else:
            byte = _e8m0_byte(kb, kb.divf(kb.convert(amax, f64), kb.convert(mf, f64), FM_NONE))
        kb.store(kb.convert(byte, elem(out)), out, [r, b])


def _e8m0_byte(kb: KernelBuilder, q: SSAValue) -> SSAValue:
    """clip(ceil(log2 q) + 127, 0, 254), 127 for 0, 254 for inf, 255 for NaN (q normal f64)."""
    bits = kb.v(arith.BitcastOp(q, i64))
    e = kb.v(arith.AndIOp(kb.v(arith.ShRUIOp(bits, kb.const(52, i64))), kb.const(0x7FF, i64)))
    m = kb.v(arith.AndIOp(bits, kb.const((1 << 52) - 1, i64)))
    ceil_log2 = kb.select(
        kb.cmpi("eq", m, kb.const(0, i64)),
        kb.subi(e, kb.const(1023, i64)),
        kb.subi(e, kb.const(1022, i64)),
    )
    byte = kb.imin(
        kb.imax(kb.addi(ceil_log2, kb.const(127, i64)), kb.const(0, i64)), kb.const(254, i64)
    )
    byte = kb.select(kb.cmpf("oeq", q, kb.const(0.0, f64)), kb.const(127, i64), byte)
    byte = kb.select(kb.cmpf("oeq", q, kb.const(float("inf"), f64)), kb.const(254, i64), byte)
    return kb.select(kb.cmpf("uno", q, q), kb.const(255, i64), byte)


def emit_scaled_quantize(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    fmt = lowp.parse_format(op.format or "")
    x, scale = ins
    out = outs[0]
    rows, k = shape(x)
    sc = Scales(kb, scale, op.scale_layout)
    blk_len = sc.block_len(k)
    zero = kb.const(0.0, f32)
    with kb.nest([rows, k]) as (r, p):
        s = sc.at(r, kb.idiv(p, blk_len))
        code = encode(kb, fmt, kb.divf(kb.load(x, [r, p]), s, FM_NONE))
        code = kb.select(kb.cmpf("oeq", s, zero), kb.const(0, i32), code)
        kb.store(kb.convert(code, elem(out)), out, [r, p])


def emit_scaled_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """out[i, j] = sum over K blocks (in order, f32) of (sa * sb) * f32(sum_p da db in f64)."""
    ca, cb, sa_m, sb_m = ins[:4]
    bias = ins[4] if len(ins) > 4 else None
    out = outs[0]
    m, k = shape(ca)
    n = shape(cb)[0]
    ta = decode_table(kb, lowp.parse_format(op.lhs_format or ""), f64)
    tb = decode_table(kb, lowp.parse_format(op.rhs_format or ""), f64)
    layout = op.scale_layout
    sa, sb = Scales(kb, sa_m, layout), Scales(kb, sb_m, layout)
    blen = sa.block_len(k)
    nblk = -(-k // blen) if k else 0
    with kb.nest([m, n]) as (i, j):

        def block(b: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            lo = kb.imul(b, blen)
            hi = kb.imin(kb.iadd(lo, blen), kb.idx(k))

            def dot(p: SSAValue, s: list[SSAValue]) -> list[SSAValue]:
                x = kb.mulf(
                    lookup(kb, ta, kb.load(ca, [i, p])), lookup(kb, tb, kb.load(cb, [j, p])), FM_RED
                )
                return [kb.addf(s[0], x, FM_RED)]

            part = kb.convert(kb.loop_carry(hi, [kb.const(0.0, f64)], dot, lb=lo)[0], f32)
            ss = kb.mulf(sa.at(i, b), sb.at(j, b), FM_NONE)
            return [kb.addf(acc[0], kb.mulf(ss, part, FM_NONE), FM_NONE)]

        acc = kb.loop_carry(nblk, [kb.const(0.0, f32)], block)[0]
        if bias is not None:
            acc = kb.addf(acc, kb.load(bias, [j]), FM_NONE)
        kb.store(acc, out, [i, j])


LOWERINGS: dict[type[Operation], Emitter] = {
    ScaledQuantScaleOp: emit_scaled_quant_scale,
    ScaledQuantizeOp: emit_scaled_quantize,
    ScaledMatmulOp: emit_scaled_matmul,
}
