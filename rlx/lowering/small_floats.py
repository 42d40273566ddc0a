"""Floats narrower than 16 bits (fp8, fp6, fp4): code tables and the rounding rule.

Why: LLVM has no fp8 types, so generated code keeps such values as one byte (the code)
and computes in f32. Decoding is a 256-entry f32 table; encoding an f32 is the rounding
of ml_dtypes' `astype` (round to nearest, ties to the even code; overflow gives what
ml_dtypes gives for inf: inf, NaN or the largest finite value; NaN and zero signs as in
ml_dtypes). Everything here is derived from ml_dtypes' own tables, so one mechanism serves
every format; `encode_model` is the NumPy statement of the rule that `expand_small_floats`
emits as code (tests compare both with ml_dtypes).

`Spec.grid[k]` are the finite non-negative values of codes 0..P-1 in increasing order
(code k holds grid[k] in every supported format); `mids[k]` the midpoint between grid[k]
and grid[k+1], with grid[P] = max + the top binade's spacing (the first value past the
largest finite one); a magnitude rounding past mids[P-1], and inf, give the overflow
code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import builtin
from xdsl.ir import Attribute

NUMPY_NAMES: dict[type[Attribute], str] = {
    builtin.Float8E4M3FNType: "float8_e4m3fn",
    builtin.Float8E5M2Type: "float8_e5m2",
    builtin.Float8E4M3FNUZType: "float8_e4m3fnuz",
    builtin.Float8E5M2FNUZType: "float8_e5m2fnuz",
    builtin.Float8E4M3Type: "float8_e4m3",
    builtin.Float8E3M4Type: "float8_e3m4",
    builtin.Float8E4M3B11FNUZType: "float8_e4m3b11fnuz",
    builtin.Float8E8M0FNUType: "float8_e8m0fnu",
    builtin.Float6E2M3FNType: "float6_e2m3fn",
    builtin.Float6E3M2FNType: "float6_e3m2fn",
    builtin.Float4E2M1FNType: "float4_e2m1fn",
}
"""Every float type narrower than 16 bits that code generation supports (one byte each)."""


def is_small_float(t: Attribute) -> bool:
    return type(t) in NUMPY_NAMES


@dataclass(frozen=True)
class Spec:
    """The code tables of one format."""

    name: str
    bits: int
    signed: bool
    decode: np.ndarray
    """f32 value of every byte 0..255 (the code in the low `bits` bits)."""
    grid: np.ndarray
    mids: np.ndarray
    overflow: int
    nan_pos: int
    nan_neg: int
    neg_zero: bool
    """Whether the format has -0 (otherwise a negative value rounding to 0 gives +0)."""
    zero_code: int
    """The code of 0.0 (the NaN code in formats without zero)."""
    ties_up: bool
    """Ties round to the larger magnitude (E8M0: ml_dtypes rounds its exponent-only
    format so) instead of to the even code."""

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1) if self.signed else 0


def _codes(dt: np.dtype, values: np.ndarray) -> np.ndarray:
    return np.asarray(values, np.float32).astype(dt).view(np.uint8).astype(np.int64)


@functools.cache
def spec(name: str) -> Spec:
    """The tables of ml_dtypes format `name` ("float8_e4m3fn", ...)."""
    import ml_dtypes  # here, not at import: it costs ~0.7 s of CPU (rlx.dtypes)

    dt = np.dtype(getattr(ml_dtypes, name))
    bits = int(ml_dtypes.finfo(dt).bits)
    n = 1 << bits
    codes = np.arange(256, dtype=np.uint8)
    decode = (codes & (n - 1)).astype(np.uint8).view(dt).astype(np.float32)
    signed = bool(np.signbit(np.array([-1.0], np.float32).astype(dt).astype(np.float32))[0])
    half = n // 2 if signed else n
    pos = decode[:half]
    finite = int(np.argmax(~np.isfinite(pos))) if not np.isfinite(pos).all() else half
    grid = pos[:finite].astype(np.float64)
    assert np.all(np.diff(grid) > 0), f"{name}: codes are not ordered by value"
    # the next value past the largest: one more step in its binade; an exponent-only
    # format (E8M0: consecutive values differ by a factor 2) doubles instead
    step = grid[-1] - grid[-2]
    top = 2 * grid[-1] if grid[-1] == 2 * grid[-2] else grid[-1] + step
    mids = ((grid + np.append(grid[1:], top)) / 2).astype(np.float32)
    assert np.all(mids.astype(np.float64) == (grid + np.append(grid[1:], top)) / 2)
    inf, nan = _codes(dt, [np.inf, -np.inf]), _codes(dt, [np.nan, -np.nan])
    zeros = _codes(dt, [0.0, -0.0])
    sign_bit = 1 << (bits - 1) if signed else 0
    k = np.arange(len(grid) - 1)
    ties = _codes(dt, mids[:-1])
    ties_up = bool(np.all(ties == k + 1))
    assert ties_up or np.all(ties == np.where(k % 2 == 1, k + 1, k)), f"{name}: tie rule"
    return Spec(
        name, bits, signed, decode, grid, mids, int(inf[0]), int(nan[0]), int(nan[1]),
        bool(signed and zeros[1] == sign_bit), int(zeros[0]), ties_up,
    )  # fmt: skip


def encode_model(s: Spec, x: np.ndarray) -> np.ndarray:
    """The codes of f32 values `x`: what the generated code computes (NumPy, vectorised)."""
    x = np.asarray(x, np.float32)
    a = np.abs(x)
    p = len(s.mids)
    pos = np.searchsorted(s.mids, a, side="left")  # number of mids < a
    tie = (pos < p) & (s.mids[np.minimum(pos, p - 1)] == a)
    pick = np.where(tie & (s.ties_up | (pos % 2 == 1)), pos + 1, pos)
    mag = np.where((pick >= p) | np.isinf(a), s.overflow, pick)
    neg = np.signbit(x)
    if s.signed:
        keep_sign = (mag != 0) | s.neg_zero
        code = np.where(neg & keep_sign, mag | s.sign_bit, mag)
    else:
        code = np.where(neg & (a > 0), s.nan_pos, mag)  # negative: NaN
    if s.zero_code != 0:
        code = np.where(a == 0, s.zero_code, code)
    code = np.where(np.isnan(x), np.where(neg, s.nan_neg, s.nan_pos), code)
    return code.astype(np.uint8)
