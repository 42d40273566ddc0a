"""Common-IR decompositions of the quantized matmuls (`scaled_matmul`, `dequant_matmul`).

rlx has no bit operations, so every decoder is a 256-entry lookup table applied with
`rlx.gather` on the ui8 codes: low-precision codes and E8M0/E4M3 block scales through
their decode tables, GGML f16 block scales as `P[hi] + Q[hi]·lo` of their two bytes, int8
and 2-bit ternary codes through per-byte tables. The arithmetic then follows the reference
kernels step by step, so the decompositions are bit-exact against the native ops.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import DYN, shape_of, tensor
from rlx.formats import lowp
from rlx.transforms.expansion import Expansion


def _table(e: Expansion, values: np.ndarray) -> SSAValue:
    """A 256-entry f32 lookup table (codes past the format's range decode to NaN)."""
    t = np.full(256, np.nan, np.float32)
    t[: values.size] = values.astype(np.float32)
    return e.const(t, f32, (256,))


def scaled_matmul(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """Decode codes and block scales with `gather` lookup tables, then the reference's
    blockwise TN product: acc += (sa[:, blk] · sb[:, blk]ᵀ) · (a_blk @ b_blkᵀ), in f32."""

    a, b, sa, sb, *bias = op.operands
    lay = lowp.parse_layout(op.scale_layout or "per_tensor")
    (m, k), n = shape_of(a.type), shape_of(b.type)[0]
    e = Expansion()
    da = e.emit("gather", _table(e, lowp.decode_table(str(op.lhs_format))), a)
    db = e.emit("gather", _table(e, lowp.decode_table(str(op.rhs_format))), b)

    def tr(x: SSAValue) -> SSAValue:
        return e.emit("transpose", x, permutation=[1, 0])

    def cols(x: SSAValue, lo: int, hi: int) -> SSAValue:
        return e.emit("slice", x, starts=[0, lo], limits=[shape_of(x.type)[0], hi])

    if lay.kind == "per_tensor":
        out = e.mul(e.mul(sa, sb), e.emit("matmul", da, tr(db)))
    else:
        if DYN in (m, n, k):
            return None
        if lay.kind == "nvfp4":
            scales = lowp.decode_table("f8e4m3")
        else:
            codes = np.arange(256)
            scales = np.where(codes == 255, np.nan, np.ldexp(1.0, codes - 127))
        ta = e.emit("gather", _table(e, scales), sa)
        tb = e.emit("gather", _table(e, scales), sb)
        out = None
        for blk in range(-(-k // lay.block)):
            lo, hi = blk * lay.block, min((blk + 1) * lay.block, k)
            partial = e.emit("matmul", cols(da, lo, hi), tr(cols(db, lo, hi)))
            term = e.mul(e.mul(cols(ta, blk, blk + 1), tr(cols(tb, blk, blk + 1))), partial)
            out = term if out is None else e.add(out, term)
        assert out is not None
    return e.ops, e.add(out, bias[0]) if bias else out


def _f16_tables() -> tuple[np.ndarray, np.ndarray]:
    """P, Q with f16(bytes lo, hi) == P[hi] + Q[hi]·lo (exact in f32; inf/NaN in P)."""
    hi = np.arange(256)
    sign = np.where(hi >= 128, -1.0, 1.0)
    exp = (hi >> 2) & 31
    unit = np.where(exp == 0, 2.0**-24, np.ldexp(1.0, exp - 25))  # weight of one lo step
    top = np.where(exp == 0, 0.0, np.ldexp(1.0, exp - 15)) + (hi & 3) * 256 * unit
    p = np.where(exp == 31, np.where(hi & 3, np.nan, np.inf), top)
    return sign * p, sign * np.where(exp == 31, 0.0, unit)


def _f16_scale(e: Expansion, blocks: SSAValue, at: int) -> SSAValue:
    """The f16 little-endian scale at byte `at` of each block row, as f32 [nb, 1]."""
    p, q = _f16_tables()
    nb = shape_of(blocks.type)[0]
    lo = e.emit("slice", blocks, starts=[0, at], limits=[nb, at + 1])
    hi = e.emit("slice", blocks, starts=[0, at + 1], limits=[nb, at + 2])
    lo_f = e.emit("gather", _table(e, np.arange(256.0)), lo)
    return e.add(
        e.emit("gather", _table(e, p), hi), e.mul(e.emit("gather", _table(e, q), hi), lo_f)
    )


def dequant_matmul(op: Operation) -> tuple[list[Operation], SSAValue] | None:
    """x @ Wᵀ with W [n, k] unpacked from q8_0 / tq2_0 blocks (values = d · code, f32)."""
    x, packed = op.operands
    scheme, n, k = op.scheme, op.n, op.k
    if n is None or k is None or DYN in shape_of(x.type):
        return None
    e = Expansion()
    block, nbytes = (32, 34) if scheme == "q8_0" else (256, 66)
    nb = n * k // block
    blocks = e.emit("reshape", packed, result_type=_ui8_type(packed, (nb, nbytes)))
    if scheme == "q8_0":
        d = _f16_scale(e, blocks, 0)
        qs = e.emit("slice", blocks, starts=[0, 2], limits=[nb, 34])
        codes = e.emit("gather", _table(e, np.arange(256).astype(np.int8).astype(np.float64)), qs)
    else:
        d = _f16_scale(e, blocks, 64)
        pieces = []
        for h in range(2):
            qs = e.emit("slice", blocks, starts=[0, 32 * h], limits=[nb, 32 * h + 32])
            for shift in range(0, 8, 2):
                tab = ((np.arange(256) >> shift) & 3) - 1.0
                pieces.append(e.emit("gather", _table(e, tab), qs))
        codes = e.emit("concat", *pieces, axis=1)
    w = e.mul(d, codes)
    if shape_of(w.type) != (n, k):
        w = e.emit("reshape", w, result_type=_f32_type((n, k)))
    return e.ops, e.emit("matmul", x, e.emit("transpose", w, permutation=[1, 0]))


def _ui8_type(v: SSAValue, shape: tuple[int, ...]) -> object:

    return tensor(shape, v.type.element_type)  # type: ignore[attr-defined]


def _f32_type(shape: tuple[int, ...]) -> object:

    return tensor(shape, f32)
