"""Philox4x64-10 random streams: the normative definition of RLX's RNG ops.

Everything here is bit-identical to ``numpy.random.Philox`` and is written so that the
code generator can reproduce each value exactly. All integer arithmetic is modulo 2^64.

1. Stream key. ``k = (seed + seed_offset * GOLDEN) mod 2^64`` with
   ``GOLDEN = 0x9E3779B97F4A7C15``. ``seed`` is the global RNG seed, ``seed_offset`` the
   per-op key. The Philox key is the two-word array ``key = [k, 0]``.

2. Block function ``philox4x64_block(ctr, key)`` (Random123 Philox4x64 with R = 10).
   ``ctr = [c0, c1, c2, c3]`` and ``key = [k0, k1]`` are uint64 words. Ten rounds; before
   every round except the first, ``k0 += W0`` and ``k1 += W1`` (so round r uses
   ``k0 + r*W0, k1 + r*W1`` for r = 0..9). One round::

       (hi0, lo0) = mulhilo(M0, c0)     # full 128-bit product, split into 64-bit halves
       (hi1, lo1) = mulhilo(M1, c2)
       c = [hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0]

   with ``M0 = 0xD2E7470EE14C6C93``, ``M1 = 0xCA5A826395121157``,
   ``W0 = 0x9E3779B97F4A7C15``, ``W1 = 0xBB67AE8584CAA73B``. The block's output is the
   final ``c``, in order ``c[0], c[1], c[2], c[3]``.

3. Raw stream. The counter is a 256-bit little-endian integer in four words (word 0
   least significant) that starts at 0 and is incremented (with carry) *before* each
   block is produced. So block ``b = 0, 1, 2, ...`` uses counter ``b + 1``, i.e.
   ``[b + 1, 0, 0, 0]`` for any realistic ``b``, and raw word ``w`` is output word
   ``w % 4`` of block ``w // 4``. ``raw_words(seed, seed_offset, n)`` equals
   ``numpy.random.Philox(key=k).random_raw(n)``. The stream restarts for every call (every
   execute), so the same (seed, seed_offset) always gives the same tensor.

4. ``uniform``: element i (row-major) uses raw word i. ``u = (word >> 40) * 2^-24`` (the
   top 24 bits; exact in f32, u in [0, 1)). With ``lo = f32(low)`` and
   ``span = f32(f32(high) - lo)`` (a constant, computed once), the value is
   ``f32(lo + f32(u * span))``: an f32 multiply, then an f32 add, never fused. For a
   float64 ``dtype`` the same three operations are done in f64; other float dtypes are
   computed in f32 and then cast.

5. ``normal`` (Box-Muller, cosine branch only): element i uses raw words 2i and 2i+1::

       u1 = max((w[2i] >> 40) * 2^-24, 2^-24)      # exact, in (0, 1)
       u2 = (w[2i+1] >> 40) * 2^-24                # exact, in [0, 1)
       r  = sqrt(-2.0 * log(u1))                   # f64; libm log, then sqrt
       t  = TWO_PI * u2                            # f64 multiply, TWO_PI = f64(2*pi)
       z  = r * cos(t)                             # f64; libm cos
       v  = mean + std * z                         # f64 multiply then add (no fma)
       out = f32(v)                                # one rounding (or v itself for f64)

   ``mean`` and ``std`` are converted to f64 first. log/sqrt/cos are the C library's
   (``math.log``, ``math.sqrt``, ``math.cos``; sqrt is correctly rounded everywhere),
   so JIT code that calls libm's f64 log and cos reproduces the bits. NumPy's own
   ``np.log``/``np.cos`` are deliberately not used: they may use SIMD approximations.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import DTypeLike

__all__ = [
    "GOLDEN",
    "M0",
    "M1",
    "TWO_PI",
    "W0",
    "W1",
    "normal",
    "philox4x64_block",
    "raw_words",
    "stream_key",
    "uniform",
]

GOLDEN = 0x9E3779B97F4A7C15
M0 = 0xD2E7470EE14C6C93
M1 = 0xCA5A826395121157
W0 = 0x9E3779B97F4A7C15
W1 = 0xBB67AE8584CAA73B
ROUNDS = 10
TWO_PI = 2.0 * math.pi
_MASK64 = (1 << 64) - 1
_U24 = 2.0**-24
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def stream_key(seed: int, seed_offset: int) -> int:
    """Per-op stream key: (seed + seed_offset * GOLDEN) mod 2^64."""
    return (int(seed) + int(seed_offset) * GOLDEN) & _MASK64


def _mulhilo(a: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hi, lo) 64-bit halves of the 128-bit product a*b, via 32-bit limbs."""
    a_lo, a_hi = np.uint64(a & 0xFFFFFFFF), np.uint64(a >> 32)
    b_lo, b_hi = b & _LO32, b >> _S32
    ll = a_lo * b_lo
    lh = a_lo * b_hi
    hl = a_hi * b_lo
    hh = a_hi * b_hi
    mid = (ll >> _S32) + (lh & _LO32) + (hl & _LO32)  # < 3 * 2^32, no overflow
    hi = hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
    lo = (mid << _S32) | (ll & _LO32)
    return hi, lo


def philox4x64_block(counter: np.ndarray, key: np.ndarray | tuple[int, int]) -> np.ndarray:
    """Philox4x64-10 of ``counter`` (uint64 ``[..., 4]``) under ``key`` ([k0, k1]).

    Returns uint64 ``[..., 4]``; vectorised over leading counter dimensions.
    """
    c = np.asarray(counter, dtype=np.uint64)
    if c.shape[-1:] != (4,):
        raise ValueError(f"counter must have a trailing dimension of 4, got {c.shape}")
    k0, k1 = (int(v) & _MASK64 for v in np.asarray(key, dtype=object).reshape(2))
    c0, c1, c2, c3 = (c[..., i].copy() for i in range(4))
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + W0) & _MASK64, (k1 + W1) & _MASK64
        hi0, lo0 = _mulhilo(M0, c0)
        hi1, lo1 = _mulhilo(M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def raw_words(seed: int, seed_offset: int, n: int) -> np.ndarray:
    """First ``n`` uint64 words of the stream (== numpy Philox(key=k).random_raw(n))."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    k = stream_key(seed, seed_offset)
    return np.asarray(np.random.Philox(key=k).random_raw(n), dtype=np.uint64)


def _unit24(words: np.ndarray) -> np.ndarray:
    """Top 24 bits of each word scaled to [0, 1), exact in float64 (and float32)."""
    return (words >> np.uint64(40)).astype(np.float64) * _U24


def _shape(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)


def uniform(
    seed: int,
    seed_offset: int,
    shape: int | tuple[int, ...],
    low: float = 0.0,
    high: float = 1.0,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Uniform values in [low, high): one raw word per element (see module docstring)."""
    shp = _shape(shape)
    out_dt = np.dtype(dtype)
    work = np.float64 if out_dt == np.float64 else np.float32
    u = _unit24(raw_words(seed, seed_offset, math.prod(shp))).astype(work)
    lo = work(low)
    span = work(work(high) - lo)
    prod = u * span
    val = prod + lo
    return val.reshape(shp).astype(out_dt, copy=False)


def _box_muller(u1: float, u2: float, mean: float, std: float) -> float:
    r = math.sqrt(-2.0 * math.log(u1))
    t = TWO_PI * u2
    z = r * math.cos(t)
    return mean + std * z


_box_muller_u = np.frompyfunc(_box_muller, 4, 1)


def normal(
    seed: int,
    seed_offset: int,
    shape: int | tuple[int, ...],
    mean: float = 0.0,
    std: float = 1.0,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Normal values via Box-Muller on two raw words per element (see module docstring)."""
    shp = _shape(shape)
    n = math.prod(shp)
    w = raw_words(seed, seed_offset, 2 * n).reshape(n, 2)
    u1 = np.maximum(_unit24(w[:, 0]), _U24)
    u2 = _unit24(w[:, 1])
    v = _box_muller_u(u1, u2, float(mean), float(std)).astype(np.float64)
    return v.reshape(shp).astype(np.dtype(dtype))
