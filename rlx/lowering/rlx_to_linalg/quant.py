"""Affine int8 quantization (quantize, dequantize, fake_quantize) and the GGML packed
matmul (dequant_matmul with Q8_0 / TQ2_0 blocks dequantized on the fly).

The affine ops compute in f64 exactly like the reference (x / scale is an f64 division,
round half to even, NaN -> 0, clamp, then the zero point); per-channel scales and zero
points are f64 / i64 lookup tables (`memref.global`) indexed by the channel dim.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import f16, f32, f64, i16, i32, i64
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import (
    is_unsigned,
    normalize_axis,
)
from rlx.dialects.rlx.quant import DequantizeOp, DequantMatmulOp, FakeQuantizeOp, QuantizeOp
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_RED,
    PARALLEL,
    Emitter,
    KernelBuilder,
    amap,
    dim,
    elem,
    identity,
    int_limits,
    shape,
)


def _affine_params(kb: KernelBuilder, op: Operation, n: int) -> tuple[list[SSAValue], list, object]:
    """(extra generic inputs, their maps, getter(args) -> (scale f64, zp i64))."""
    scale, zp = op.scale, op.zero_point
    if isinstance(scale, float):
        s = kb.const(scale, f64)
        z = kb.const(zp if isinstance(zp, int) else 0, i64)
        return [], [], lambda _extra: (s, z)
    scales = scale
    zps = zp if isinstance(zp, tuple) else (0,) * len(scales)
    axis = normalize_axis(op.axis or 0, n)
    tabs = [kb.table([float(v) for v in scales], f64), kb.table([int(v) for v in zps], i64)]
    m = amap(n, [dim(axis)])
    return tabs, [m, m], lambda extra: (extra[0], extra[1])


def _codes(kb: KernelBuilder, x: SSAValue, s: SSAValue, z: SSAValue, lo: int, hi: int) -> SSAValue:
    """clamp(round_half_even(f64(x) / s) (NaN -> 0) + zp, lo, hi) as f64."""
    r = kb.unary(mathd.RoundEvenOp, kb.divf(kb.convert(x, f64), s))
    r = kb.select(kb.cmpf("uno", r, r), kb.const(0.0, f64), r)
    t = kb.addf(r, kb.convert(z, f64))
    return kb.minf(kb.maxf(t, kb.const(float(lo), f64)), kb.const(float(hi), f64))


def emit_quantize(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    n = len(shape(ins[0]))
    tabs, maps, get = _affine_params(kb, op, n)
    re = elem(op.results[0])
    lo, hi = int_limits(re, is_unsigned(re))

    def body(x: SSAValue, *rest: SSAValue) -> list[SSAValue]:
        s, z = get(rest)  # type: ignore[operator]
        return [
            kb.convert(_codes(kb, x, s, z, lo, hi), elem(outs[0]), to_signed=not is_unsigned(re))
        ]

    kb.generic([ins[0], *tabs], outs, [identity(n), *maps, identity(n)], [PARALLEL] * n, body)


def emit_dequantize(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    n = len(shape(ins[0]))
    tabs, maps, get = _affine_params(kb, op, n)
    unsigned = is_unsigned(elem(op.operands[0]))

    def body(q: SSAValue, *rest: SSAValue) -> list[SSAValue]:
        s, z = get(rest)  # type: ignore[operator]
        d = kb.subi(kb.convert(q, i64, signed=not unsigned), z)
        return [kb.mulf(kb.convert(d, f64), s)]

    kb.generic([ins[0], *tabs], outs, [identity(n), *maps, identity(n)], [PARALLEL] * n, body)


def emit_fake_quantize(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    n = len(shape(ins[0]))
    tabs, maps, get = _affine_params(kb, op, n)
    bits = op.bits or 8
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def body(x: SSAValue, *rest: SSAValue) -> list[SSAValue]:
        s, z = get(rest)  # type: ignore[operator]
        q = _codes(kb, x, s, z, lo, hi)
        return [kb.mulf(kb.subf(q, kb.convert(z, f64)), s)]

    kb.generic([ins[0], *tabs], outs, [identity(n), *maps, identity(n)], [PARALLEL] * n, body)


# ----------------------------------------------------------------------------- GGML


def load_f16_le(kb: KernelBuilder, packed: SSAValue, at: SSAValue) -> SSAValue:
    """The little-endian f16 at byte offset `at`, widened to f32."""
    lo = kb.v(arith.ExtUIOp(kb.load(packed, [at]), i16))
    hi = kb.v(arith.ExtUIOp(kb.load(packed, [kb.iadd(at, 1)]), i16))
    bits = kb.v(arith.OrIOp(lo, kb.v(arith.ShLIOp(hi, kb.const(8, i16)))))
    return kb.convert(kb.v(arith.BitcastOp(bits, f16)), f32)


def emit_dequant_matmul(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """out[..., n] = sum over blocks of d * sum_j x[..., j] * q_j, blocks decoded in place."""
    scheme = op.scheme
    nn, kk = op.n, op.k
    assert nn is not None and kk is not None
    x, packed = ins
    out = outs[0]
    f32t = elem(x)
    block, nbytes = (32, 34) if scheme == "q8_0" else (256, 66)
    nb = kk // block
    zero = kb.const(0.0, f32t)

    def dot(base: SSAValue, xbase: list[SSAValue], xoff: SSAValue, code: object) -> SSAValue:
        def step(j: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            q = code(j)  # type: ignore[operator]
            xv = kb.load(x, [*xbase, kb.addi(xoff, j)])
            return [kb.addf(acc[0], kb.mulf(xv, q, FM_RED), FM_RED)]

        return kb.loop_carry(32, [zero], step)[0]

    xs = shape(x)
    with kb.nest(xs[:-1]) as bidx, kb.loop(nn) as n:

        def blockstep(blk: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            base = kb.imul(kb.addi(kb.imul(n, nb), blk), nbytes)
            xoff = kb.imul(blk, block)
            if scheme == "q8_0":
                d = load_f16_le(kb, packed, base)
                qbase = kb.iadd(base, 2)
                part = dot(
                    base,
                    bidx,
                    xoff,
                    lambda j: kb.convert(kb.load(packed, [kb.addi(qbase, j)]), f32t),
                )
                return [kb.addf(acc[0], kb.mulf(part, d), FM_RED)]
            d = load_f16_le(kb, packed, kb.iadd(base, 64))
            part = zero
            for h in range(2):
                for sh in range(4):
                    qb = kb.iadd(base, h * 32)
                    xo = kb.iadd(xoff, h * 128 + sh * 32)

                    def code(j: SSAValue, qb: SSAValue = qb, sh: int = sh) -> SSAValue:
                        byte = kb.v(arith.ExtUIOp(kb.load(packed, [kb.addi(qb, j)]), i32))
                        c = kb.v(
                            arith.AndIOp(
                                kb.v(arith.ShRUIOp(byte, kb.const(2 * sh, i32))), kb.const(3, i32)
                            )
                        )
                        return kb.convert(kb.subi(c, kb.const(1, i32)), f32t)

                    part = kb.addf(part, dot(base, bidx, xo, code), FM_RED)
            return [kb.addf(acc[0], kb.mulf(part, d), FM_RED)]

        total = kb.loop_carry(nb, [zero], blockstep)[0]
        kb.store(total, out, [*bidx, n])


LOWERINGS: dict[type[Operation], Emitter] = {
    QuantizeOp: emit_quantize,
    DequantizeOp: emit_dequantize,
    FakeQuantizeOp: emit_fake_quantize,
    DequantMatmulOp: emit_dequant_matmul,
}
