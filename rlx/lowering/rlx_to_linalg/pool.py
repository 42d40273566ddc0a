"""pool2d (max / average pooling) as row-at-a-time loop nests, NCHW and blocked NCHWc.

For each (image, channel, output row) the kernel accumulates the whole output row: for each
window row `ih` (clamped to the input) and kernel column `kj`, the output columns whose
window reads inside the input at that tap are the range [lo, hi) of `tap_range` (computed
once per `kj`), so the innermost loop `row[j] = row[j] (max|+) x[ih, j*sw + kj -
pl]` has no bounds checks or selects: unit stride in the row, stride `sw` in the input, and
LLVM vectorizes it (max is exact in any order; the average's sum is the reference's sum
of the same elements in another order). Padding is never read: max pads with -inf (the
integer minimum), the average divides by the number of non-padded elements of each window,
as the reference does. The row lives in the output itself when the compute type is the
output's type (f32/f64/ints), else in an f32 scratch row (f16/bf16: one rounding at the
end).

Large pools run on the runtime's threads: `rlx.pool2d` is row-parallel over its batch and
channel dimensions (`rlx_to_linalg.parallel`), so its kernel is specialised to a chunk of
channels and called through `rlx_rt.parallel_call`.

The same emitter serves the blocked channel layout (`layout = "nchwc"`, x `[N, C/B, H, W,
B]` -> out `[N, C/B, OH, OW, B]`): the B channels of a block are one more, innermost,
unit-stride lane loop under every pixel, so each pixel combines a contiguous B-vector
(LLVM vectorizes the lane loop; a stride-2 window reads whole vectors, no strided loads).
The layout is read from the buffers' rank, so `LOWERINGS` and `NCHWC_KERNELS` register
the one emitter for both.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import is_unsigned
from rlx.dialects.rlx.window import Pool2dOp
from rlx.lowering.rlx_to_linalg.conv_common import tap_range
from rlx.lowering.rlx_to_linalg.kernel_builder import (
    Emitter,
    KernelBuilder,
    compute_type,
    elem,
    int_limits,
    is_float_t,
    shape,
)


def emit_pool2d(
    kb: KernelBuilder, op: Operation, ins: Sequence[SSAValue], outs: Sequence[SSAValue]
) -> None:
    """max (init -inf / int min) or avg (sum / number of non-padded elements) pooling;
    a rank-5 (NCHWc) x adds the trailing lane axis B as the innermost loop."""
    assert isinstance(op, Pool2dOp)
    x, out = ins[0], outs[0]
    kind = op.kind
    kh, kw = op.kernel
    (sh, sw), (pt, pl, _, _) = op.spatial()
    n_, c_, h, wd, *lanes = shape(x)  # lanes: [] (NCHW) or [B] (NCHWc)
    oh, ow = shape(out)[2:4]
    unsigned = is_unsigned(elem(op.operands[0]))
    ct = compute_type(elem(x))
    floaty = is_float_t(ct)
    if kind == "max":
        init = kb.const(float("-inf") if floaty else int_limits(ct, unsigned)[0], ct)
    else:
        init = kb.const(0.0, ct)
    in_place = ct == elem(out)
    row = None if in_place else kb.scratch([ow, *lanes], ct)

    def combine(acc: SSAValue, v: SSAValue) -> SSAValue:
        if kind == "avg":
            return kb.addf(acc, v)
        if floaty:
            return kb.maxf(acc, v)
        return kb.v(arith.MaxUIOp(acc, v) if unsigned else arith.MaxSIOp(acc, v))

    def window(o: SSAValue, stride: int, pad: int, k: int, size: int) -> SSAValue:
        """Non-padded elements of the window of output position `o` along one axis."""
        start = kb.subi(kb.imul(o, stride), kb.idx(pad))
        lo, hi = kb.imax(start, kb.idx(0)), kb.imin(kb.iadd(start, k), kb.idx(size))
        return kb.imax(kb.subi(hi, lo), kb.idx(0))

    with kb.nest([n_, c_, oh]) as (n, c, i):
        acc, at = (out, [n, c, i]) if row is None else (row, [])
        with kb.nest([ow, *lanes]) as jl:
            kb.store(init, acc, [*at, *jl])
        start = kb.subi(kb.imul(i, sh), kb.idx(pt))
        ih_lo = kb.imax(start, kb.idx(0))
        ih_hi = kb.imax(kb.imin(kb.iadd(start, kh), kb.idx(h)), ih_lo)
        with kb.loop(kw) as kj:
            lo, hi = tap_range(kb, kj, pl, wd, sw, ow)
            with kb.loop(ih_hi, lb=ih_lo) as ih, kb.loop(hi, lb=lo) as j:
                iw = kb.subi(kb.iadd(kb.imul(j, sw), kj), kb.idx(pl))
                with kb.nest(lanes) as lane:
                    v = kb.load_c(x, [n, c, ih, iw, *lane])
                    idx = [*at, j, *lane]
                    kb.store(combine(kb.load(acc, idx), v), acc, idx)
        if kind == "avg" or row is not None:
            rows = kb.subi(ih_hi, ih_lo)
            with kb.loop(ow) as j:
                cnt = None
                if kind == "avg":
                    cnt = kb.convert(kb.muli(rows, window(j, sw, pl, kw, wd)), ct)
                with kb.nest(lanes) as lane:
                    r = kb.load(acc, [*at, j, *lane])
                    if cnt is not None:
                        r = kb.divf(r, cnt)
                    kb.store_c(r, out, [n, c, i, j, *lane])


LOWERINGS: dict[type[Operation], Emitter] = {Pool2dOp: emit_pool2d}

NCHWC_KERNELS: dict[type[Operation], Emitter] = {Pool2dOp: emit_pool2d}
"""The fast entry of `layout.NCHWC` (installed by `registry`): the same emitter, lanes innermost."""
