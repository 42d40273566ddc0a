"""Shapes and window arithmetic shared by the convolution kernels (direct and GEMM).

`ConvGeom` is one conv2d's geometry read from its buffers and attributes; `static_range`
and `tap_range` give, for one kernel tap, the output positions whose window reads inside
the input, so kernels never test bounds in their innermost loops (padding is never
materialized); `window_taps` gives, for one output position, the kernel taps that read
inside the input; `conv_operands` splits a conv kernel's input buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.window import Conv2dOp
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, shape


@dataclass(frozen=True)
class ConvGeom:
    """x [n, c, h, w] * w [f, cg, kh, kw] -> out [n, f, oh, ow] in `groups` groups."""

    n: int
    c: int
    h: int
    w: int
    f: int
    cg: int
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int
    sw: int
    pt: int
    pl: int
    pb: int
    pr: int
    dh: int
    dw: int
    groups: int

    @property
    def fg(self) -> int:
        """Filters per group."""
        return self.f // self.groups

    @property
    def macs(self) -> int:
        return self.n * self.f * self.oh * self.ow * self.cg * self.kh * self.kw

    @property
    def padded(self) -> bool:
        return max(self.pt, self.pl, self.pb, self.pr) > 0

    @property
    def pointwise(self) -> bool:
        """A 1×1, stride-1, unpadded convolution: the input planes are a GEMM operand."""
        return (self.kh, self.kw, self.sh, self.sw, self.pt, self.pl, self.pb, self.pr) == (
            1, 1, 1, 1, 0, 0, 0, 0,
        )  # fmt: skip

    @staticmethod
    def of(op: Conv2dOp, x: SSAValue, w: SSAValue, out: SSAValue) -> ConvGeom:
        n, c, h, wd = shape(x)
        f, cg, kh, kw = shape(w)
        _, _, oh, ow = shape(out)
        (sh, sw), (pt, pl, pb, pr), (dh, dw) = op.spatial()
        return ConvGeom(n, c, h, wd, f, cg, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr, dh, dw,
                        op.groups)  # fmt: skip


def conv_operands(
    op: Conv2dOp | FusedConv2dResidualOp, ins: Sequence[SSAValue]
) -> tuple[SSAValue, SSAValue, SSAValue | None, list[SSAValue]]:
    """(x, w, bias or None, extras) of a conv2d / fused_conv2d_residual's input buffers
    (`x, w[, residual][, bias]`); extras is `[residual]` or empty (the epilogue's buffers)."""
    residual = isinstance(op, FusedConv2dResidualOp)
    extras = [ins[2]] if residual else []
    rest = ins[3:] if residual else ins[2:]
    return ins[0], ins[1], (rest[0] if rest else None), extras


def static_range(tap_off: int, pad: int, size: int, stride: int, out: int) -> tuple[int, int]:
    """Output positions o with 0 <= o*stride + tap_off - pad < size, as [lo, hi)."""
    a = pad - tap_off
    lo = (max(a, 0) + stride - 1) // stride
    b = size - 1 + pad - tap_off + stride
    hi = min(out, max(b, 0) // stride)
    return lo, max(lo, hi)


def tap_range(
    kb: KernelBuilder, tap_off: SSAValue, pad: int, size: int, stride: int, out: int
) -> tuple[SSAValue, SSAValue]:
    """`static_range` of a tap offset known at run time (unsigned divisions of
    non-negative numerators)."""
    zero = kb.idx(0)
    a = kb.subi(kb.idx(pad), tap_off)  # o*stride >= a
    lo = kb.idiv(kb.iadd(kb.imax(a, zero), stride - 1), stride)
    b = kb.iadd(kb.subi(kb.idx(size - 1 + pad), tap_off), stride)  # o*stride <= b - stride
    hi = kb.imin(kb.idx(out), kb.idiv(kb.imax(b, zero), stride))
    return lo, hi


def window_taps(
    kb: KernelBuilder,
    start: SSAValue,
    dil: int | SSAValue,
    size: int | SSAValue,
    k: int | SSAValue,
) -> tuple[SSAValue, SSAValue]:
    """Taps t of a window starting at input position `start`, as [lo, hi) (hi < lo when
    none), with 0 <= start + t*dil < size: the kernel rows (or columns) of one output
    position that read inside the input, so padding is never read. `dil`, `size` and `k`
    may be constants or run-time values (a shape-generic kernel's geometry table)."""
    zero = kb.idx(0)

    def ceil_div(a: SSAValue) -> SSAValue:
        """ceil(max(a, 0) / dil): an unsigned division of a non-negative numerator."""
        a = kb.imax(a, zero)
        if isinstance(dil, int):
            return kb.idiv(kb.iadd(a, dil - 1), dil)
        return kb.v(arith.DivUIOp(kb.addi(a, kb.subi(dil, kb.idx(1))), dil))

    lo = ceil_div(kb.subi(zero, start))
    hi = kb.imin(kb.idx(k), ceil_div(kb.subi(kb.idx(size), start)))
    return lo, hi
