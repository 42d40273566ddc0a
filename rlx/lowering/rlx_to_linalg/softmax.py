"""Softmax: per row the max, exp(x - max) written once while summing, the scale by 1 / sum
(onnxruntime's MLAS has the same three passes: `MlasReduceMaximumF32Kernel`,
`MlasComputeSumExpF32Kernel`, `MlasComputeSoftmaxOutputF32Kernel`).

Over the last axis of a contiguous tensor (`_rows`) the three passes run row after row, the
row's max and sum carried in registers by `scf.for` iter_args (LLVM vectorizes and
interleaves the two reductions) and the row (8 KiB at 2048 f32) still in L1 for the second
and third pass; other axes use `linalg.generic` nests over the whole chunk with the max and
the sums in scratch rows (`_generic`).

The row max is taken over integer keys (`_key`: the float's bits with the magnitude bits
flipped when the sign is set, so that signed integer order is the float order, -0.0 below
+0.0 and a positive NaN above +inf), which LLVM vectorizes like any integer reduction,
instead of the six instructions of a NaN-propagating `maximumf` per vector (a NaN-ignoring
`maxnumf` is cheaper still, but llvmlite 0.50's loop vectorizer mis-compiles that
reduction: rows whose length is not a multiple of the vector width lost their tail, and
some lengths hit an LLVM assertion that aborts the process). The row path needs no keys:
the max of the keys is picked from two integer reductions of the raw bits (`_row_max`: a
signed max and an unsigned min, one vector op each per vector instead of the keys' four;
the max pass went from 12 to 8 cycles per 64 elements in llvm-mca's AVX-512 model); the
other axes reduce the keys into a scratch row. The max is `maximumf`'s bit for bit except
for a NaN with the sign bit set, which orders below -inf: that row is all NaN anyway (its
exp is NaN, so is the sum). `test_row_kernels.py` checks every position of the max for row
lengths 1-40, `test_softmax_isa.py` the kernel compiled for AVX2 and baseline x86-64.
The f32 exp is `fast_exp.exp_nonpositive` (the argument `x - max` is <= 0); f16 / bf16
compute in f32 and recompute exp for the output (divided by the sum, as before).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import AnyFloat, IntegerType, f32
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import normalize_axis
from rlx.dialects.rlx.compute import SoftmaxOp
from rlx.lowering.rlx_to_linalg.fast_exp import exp_nonpositive
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    FM_RED,
    PARALLEL,
    REDUCTION,
    Emitter,
    KernelBuilder,
    amap,
    compute_type,
    dim,
    elem,
    identity,
    shape,
)
from rlx.lowering.rlx_to_linalg.reductions import is_contiguous, view_as


def _key(kb: KernelBuilder, bits: SSAValue) -> SSAValue:
    """The ordered integer key of a float's bits (and back: the map is an involution):
    the magnitude bits flipped where the sign bit is set."""
    it = bits.type
    assert isinstance(it, IntegerType)
    sign = kb.v(arith.ShRSIOp(bits, kb.const(it.width.data - 1, it)))
    return kb.v(arith.XOrIOp(bits, kb.v(arith.ShRUIOp(sign, kb.const(1, it)))))


def _key_type(ct: AnyFloat) -> tuple[IntegerType, int]:
    """The key's integer type for compute type `ct` (f32 or f64) and the key of -inf (the
    max of an all -inf row, and the start of every max)."""
    w = ct.bitwidth
    neg_inf = (0xFF8 if w == 32 else 0xFFF) << (w - 12)
    return IntegerType(w), neg_inf ^ ((1 << (w - 1)) - 1)


def _max_step(kb: KernelBuilder, acc: SSAValue, v: SSAValue) -> SSAValue:
    return kb.v(arith.MaxSIOp(acc, _key(kb, kb.v(arith.BitcastOp(v, acc.type)))))


def _unkey(kb: KernelBuilder, k: SSAValue, ct: AnyFloat) -> SSAValue:
    return kb.v(arith.BitcastOp(_key(kb, k), ct))


def _exp_sub(kb: KernelBuilder, v: SSAValue, mv: SSAValue) -> SSAValue:
    d = kb.subf(v, mv)
    return exp_nonpositive(kb, d) if d.type == f32 else kb.unary(mathd.ExpOp, d)


def _row_max(
    kb: KernelBuilder, n: int, ct: AnyFloat, load: Callable[[SSAValue], SSAValue]
) -> SSAValue:
    """The max of `load(0 .. n-1)` (floats of type `ct`) from two integer reductions of
    their bits, which LLVM vectorizes like any integer min / max (`vpmaxsd` and `vpminud`,
    one op each per vector with the load folded in, instead of the keys' four): the
    signed max of the bits is the max float when some element has its sign bit clear
    (every negative float is a negative integer), else the max float is the negative one
    of least magnitude, the unsigned min of the bits. The same value as the max of the
    keys (`_key`) for every row, a NaN included: a positive NaN orders above +inf, a
    negative one below -inf (either way the row's exp, sum and outputs are NaN)."""
    it, _ = _key_type(ct)
    w = it.width.data

    def step(i: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
        b = kb.v(arith.BitcastOp(load(i), it))
        return [kb.v(arith.MaxSIOp(acc[0], b)), kb.v(arith.MinUIOp(acc[1], b))]

    smax, umin = kb.loop_carry(n, [kb.const(-(1 << (w - 1)), it), kb.const(-1, it)], step)
    bits = kb.select(kb.cmpi("sge", smax, kb.const(0, it)), smax, umin)
    return kb.v(arith.BitcastOp(bits, ct))


def _rows(kb: KernelBuilder, x: SSAValue, out: SSAValue, rows: int, n: int) -> None:
    """Softmax of each of `rows` contiguous rows of `n` elements, row after row."""
    ct = compute_type(elem(x))
    assert isinstance(ct, AnyFloat)
    xm, om = view_as(kb, x, [rows, n]), view_as(kb, out, [rows, n])
    wide = elem(out) == ct
    with kb.loop(rows) as r:

        def load(i: SSAValue) -> SSAValue:
            return kb.convert(kb.load(xm, [r, i]), ct)

        mx = _row_max(kb, n, ct, load)

        def exp_sum(i: SSAValue, acc: list[SSAValue]) -> list[SSAValue]:
            e = _exp_sub(kb, load(i), mx)
            if wide:  # exp once: written here, scaled in place below
                kb.store(e, om, [r, i])
            return [kb.addf(acc[0], e, FM_RED)]

        (total,) = kb.loop_carry(n, [kb.const(0.0, ct)], exp_sum)
        inv = kb.divf(kb.const(1.0, ct), total)
        with kb.loop(n) as i:
            if wide:
                kb.store(kb.mulf(kb.load(om, [r, i]), inv), om, [r, i])
            else:  # narrow outputs: recompute exp, divide by the f32 sum, round once
                kb.store(
                    kb.convert(kb.divf(_exp_sub(kb, load(i), mx), total), elem(out)), om, [r, i]
                )


def _generic(kb: KernelBuilder, x: SSAValue, out: SSAValue, ax: int) -> None:
    """Softmax along `ax` as `linalg.generic` nests: max, exp and sums, scale."""
    xs = shape(x)
    n = len(xs)
    ct = compute_type(elem(x))
    assert isinstance(ct, AnyFloat)
    rows = [d for i, d in enumerate(xs) if i != ax]
    m, s = kb.scratch(rows, ct), kb.scratch(rows, ct)
    idm, rmap = identity(n), amap(n, [dim(i) for i in range(n) if i != ax])
    iters = [REDUCTION if i == ax else PARALLEL for i in range(n)]
    rid, par = identity(len(rows)), [PARALLEL] * len(rows)
    it, start = _key_type(ct)
    keys = kb.scratch(rows, it)
    kb.fill(keys, start)
    kb.generic([x], [keys], [idm, rmap], iters, lambda v, kv: [_max_step(kb, kv, v)])
    kb.generic([keys], [m], [rid, rid], par, lambda kv, _m: [_unkey(kb, kv, ct)])
    kb.fill(s, 0.0)
    if elem(out) == ct:

        def exp_and_sum(v: SSAValue, mv: SSAValue, _o: SSAValue, sv: SSAValue) -> list[SSAValue]:
            e = _exp_sub(kb, v, mv)
            return [e, kb.addf(sv, e, FM_RED)]

        kb.generic([x, m], [out, s], [idm, rmap, idm, rmap], iters, exp_and_sum)
        one = kb.const(1.0, ct)
        kb.generic([s], [s], [rid, rid], par, lambda sv, _s: [kb.divf(one, sv)])
        kb.generic([s], [out], [rmap, idm], [PARALLEL] * n, lambda iv, o: [kb.mulf(o, iv)])
        return
    kb.generic(
        [x, m], [s], [idm, rmap, rmap], iters,
        lambda v, mv, sv: [kb.addf(sv, _exp_sub(kb, v, mv), FM_RED)],
    )  # fmt: skip
    kb.generic(
        [x, m, s], [out], [idm, rmap, rmap, idm], [PARALLEL] * n,
        lambda v, mv, sv, _o: [kb.divf(_exp_sub(kb, v, mv), sv)],
    )  # fmt: skip


def emit_softmax(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    x, out = ins[0], outs[0]
    xs = shape(x)
    ax = normalize_axis(op.axis or 0, len(xs))
    if ax == len(xs) - 1 and xs[ax] > 0 and is_contiguous(x) and is_contiguous(out):
        _rows(kb, x, out, prod(xs[:-1]), xs[ax])
    else:
        _generic(kb, x, out, ax)


LOWERINGS: dict[type[Operation], Emitter] = {SoftmaxOp: emit_softmax}
