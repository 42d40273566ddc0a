"""Low-precision scaled formats (FP8/FP6/FP4 and custom fNeXmY) and scale layouts.

This is the normative NumPy definition of the ``scaled_quant`` codec shared by the
compiler, the reference interpreter and the bake tool.

Formats (``LowpFormat``): one code per ``uint8`` (low ``1+exp+mant`` bits). The sign bit is
bit ``exp+mant``. Exponent field 0 is subnormal: ``(mant/2^m) * 2^(1-bias)``; otherwise
``(1 + mant/2^m) * 2^(exp-bias)``. Specials by ``kind``:

* ``ocp_e4m3``  (f8e4m3): only S.1111.111 is NaN, no inf (max 448).
* ``ieee``      (f8e5m2): exponent all-ones is inf (mant 0) or NaN (max 57344).
* ``fnuz``      (f8e4m3fnuz, f8e5m2fnuz): code 0x80 is the single NaN, no -0, no inf.
* ``finite``    (f6e2m3, f6e3m2, f4e2m1, and every custom fNeXmY): every code is finite.

Encode: nearest finite code with the error measured in float64; a tie goes to the code
whose bit 0 is 0 (round-to-nearest-even). Magnitudes above max_finite (and +-inf)
saturate to +-max_finite; NaN encodes to code 0. Decision (the exhaustive-search spec
leaves the +0/-0 tie open): the sign bit follows ``signbit(x)``, so -0.0 and negative
values that round to zero give the -0 code where the format has one (as ml_dtypes does),
and +0 in FNUZ formats.

Scale layouts (``ScaleLayout``), for an operand ``x[R, K]`` with blocks along K:

* ``per_tensor``: f32 ``[1]``, s = f32(amax) / f32(max_finite) (one f32 division);
  1.0 when amax == 0.
* ``mx`` / ``mx/<B>`` (default B = 32): uint8 ``[R, ceil(K/B)]`` E8M0 bytes. s is the
  smallest power of two with ``amax <= s * max_finite`` (computed exactly in float64);
  byte = log2(s) + 127 clamped to 0..254; decode = 2^(byte-127), 0xFF = NaN. Decision:
  an all-zero block gets byte 127 (scale 1.0); a block containing NaN gets 0xFF;
  an infinite amax gets 254.
* ``nvfp4`` / ``nvfp4/<G>`` (default G = 16): uint8 ``[R, ceil(K/G)]`` f8e4m3 bytes,
  byte = encode_f8e4m3(f32(amax) / f32(max_finite)); an all-zero block encodes 1.0.
  A quotient <= 2^-10 (half the smallest e4m3 subnormal) encodes to 0, i.e. scale 0.

Quantize: code = encode(fmt, f32(x) / s) with an f32 division, or code 0 where s == 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np

__all__ = [
    "NAMED_FORMATS",
    "LowpFormat",
    "ScaleLayout",
    "custom",
    "decode",
    "decode_scale",
    "decode_table",
    "encode",
    "max_finite",
    "parse_format",
    "parse_layout",
    "quant_scale",
    "quantize",
    "scale_shape",
    "scaled_matmul",
]

FormatKind = Literal["ocp_e4m3", "ieee", "fnuz", "finite"]
LayoutKind = Literal["per_tensor", "mx", "nvfp4"]

_KINDS = ("ocp_e4m3", "ieee", "fnuz", "finite")


@dataclass(frozen=True)
class LowpFormat:
    """A sign/exponent/mantissa code format of at most 8 bits."""

    name: str
    exp_bits: int
    mant_bits: int
    bias: int
    kind: FormatKind

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown format kind {self.kind!r}; accepted: {_KINDS}")
        if self.exp_bits < 1 or self.mant_bits < 0 or self.bits > 8:
            raise ValueError(f"{self.name}: need exp_bits >= 1 and 1+exp+mant <= 8")

    @property
    def bits(self) -> int:
        """Total code width: sign + exponent + mantissa."""
        return 1 + self.exp_bits + self.mant_bits

    def __str__(self) -> str:
        return self.name


NAMED_FORMATS: dict[str, LowpFormat] = {
    f.name: f
    for f in (
        LowpFormat("f8e4m3", 4, 3, 7, "ocp_e4m3"),
        LowpFormat("f8e5m2", 5, 2, 15, "ieee"),
        LowpFormat("f8e4m3fnuz", 4, 3, 8, "fnuz"),
        LowpFormat("f8e5m2fnuz", 5, 2, 16, "fnuz"),
        LowpFormat("f6e2m3", 2, 3, 1, "finite"),
        LowpFormat("f6e3m2", 3, 2, 3, "finite"),
        LowpFormat("f4e2m1", 2, 1, 1, "finite"),
    )
}

_CUSTOM_RE = re.compile(r"f(\d+)e(\d+)m(\d+)")
_FORMAT_FORMS = f"{', '.join(NAMED_FORMATS)}, or a custom 'fNeXmY' with N == 1+X+Y <= 8 and X >= 1"


def custom(exp_bits: int, mant_bits: int) -> LowpFormat:
    """The all-finite custom format ``f{1+e+m}e{e}m{m}`` with bias 2^(e-1)-1."""
    n = 1 + exp_bits + mant_bits
    return LowpFormat(
        f"f{n}e{exp_bits}m{mant_bits}", exp_bits, mant_bits, 2 ** (exp_bits - 1) - 1, "finite"
    )


def parse_format(name: str | LowpFormat) -> LowpFormat:
    """Parse a format name (case-insensitive); hardware names map to named variants."""
    if isinstance(name, LowpFormat):
        return name
    s = name.strip().lower()
    if s in NAMED_FORMATS:
        return NAMED_FORMATS[s]
    m = _CUSTOM_RE.fullmatch(s)
    if m is not None:
        n, e, mant = (int(g) for g in m.groups())
        if e >= 1 and n == 1 + e + mant and n <= 8:
            return custom(e, mant)
    raise ValueError(f"unknown low-precision format {name!r}; accepted: {_FORMAT_FORMS}")


@cache
def _table(fmt: LowpFormat) -> np.ndarray:
    e, m = fmt.exp_bits, fmt.mant_bits
    codes = np.arange(1 << fmt.bits, dtype=np.int64)
    sign = (codes >> (e + m)) & 1
    exp = (codes >> m) & ((1 << e) - 1)
    mant = (codes & ((1 << m) - 1)).astype(np.float64) / (1 << m)
    mag = np.where(
        exp == 0,
        np.ldexp(mant, 1 - fmt.bias),
        np.ldexp(1.0 + mant, (exp - fmt.bias).astype(np.int32)),
    )
    if fmt.kind == "ocp_e4m3":
        mag[(codes & 0x7F) == 0x7F] = np.nan
    elif fmt.kind == "ieee":
        top = exp == (1 << e) - 1
        mag[top] = np.where(mant[top] == 0, np.inf, np.nan)
    elif fmt.kind == "fnuz":
        mag[1 << (fmt.bits - 1)] = np.nan
    val = np.where(sign == 1, -mag, mag)  # NaN codes with the sign bit give -NaN
    val.setflags(write=False)
    return val


def decode_table(fmt: str | LowpFormat) -> np.ndarray:
    """float64 value of every code ``0 .. 2^bits - 1`` (read-only, cached).

    Special codes decode to +-inf / NaN; NaN codes with the sign bit set are -NaN (as in
    ml_dtypes).
    """
    return _table(parse_format(fmt))


@cache
def _positive_grid(fmt: LowpFormat) -> np.ndarray:
    """Ascending finite non-negative values; index == code (codes 0..P-1)."""
    tab = _table(fmt)[: 1 << (fmt.bits - 1)]
    finite = np.isfinite(tab)
    p = int(np.argmin(finite)) if not finite.all() else finite.size
    grid = tab[:p].copy()
    assert np.all(np.diff(grid) > 0)
    grid.setflags(write=False)
    return grid


def max_finite(fmt: str | LowpFormat) -> float:
    """Largest finite value of the format."""
    return float(_positive_grid(parse_format(fmt))[-1])


def encode(fmt: str | LowpFormat, x: np.ndarray) -> np.ndarray:
    """Nearest-code encode (see the module docstring); returns ``uint8`` of x's shape.

    Equivalent to an exhaustive search over all finite codes, implemented with a
    binary search on the sorted non-negative grid.
    """
    f = parse_format(fmt)
    grid = _positive_grid(f)
    xf = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(xf), grid[-1])  # saturate (also +-inf)
    hi = np.clip(np.searchsorted(grid, a, side="left"), 1, grid.size - 1)
    lo = hi - 1
    err_lo = a - grid[lo]
    err_hi = grid[hi] - a
    take_hi = (err_hi < err_lo) | ((err_hi == err_lo) & (lo % 2 == 1))
    mag = np.where(take_hi, hi, lo)
    neg = np.signbit(xf)
    if f.kind == "fnuz":
        neg &= mag != 0
    code = mag | (neg.astype(np.int64) << (f.bits - 1))
    code = np.where(np.isnan(xf), 0, code)
    return code.astype(np.uint8)


def decode(fmt: str | LowpFormat, codes: np.ndarray) -> np.ndarray:
    """Decode ``codes`` to float32 (exact; NaN/inf for special codes)."""
    f = parse_format(fmt)
    c = np.asarray(codes)
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"codes must be an integer array, got {c.dtype}")
    if c.size and (c.min() < 0 or c.max() >= (1 << f.bits)):
        raise ValueError(f"{f}: codes must be in 0..{(1 << f.bits) - 1}")
    return _table(f)[c].astype(np.float32)


# --------------------------------------------------------------------------- layouts

_LAYOUT_FORMS = "'per_tensor', 'mx' (= 'mxfp8', 'block'), 'mx/<block>', 'nvfp4', 'nvfp4/<group>'"
_E4M3 = NAMED_FORMATS["f8e4m3"]


@dataclass(frozen=True)
class ScaleLayout:
    """How scales are laid out: one per tensor, or one per row per K-block."""

    kind: LayoutKind
    block: int = 0  # 0 for per_tensor

    def __post_init__(self) -> None:
        if self.kind == "per_tensor":
            if self.block != 0:
                raise ValueError("per_tensor has no block size")
        elif self.kind in ("mx", "nvfp4"):
            if self.block < 1:
                raise ValueError(f"{self.kind}: block size must be >= 1, got {self.block}")
        else:
            raise ValueError(f"unknown scale layout kind {self.kind!r}")

    def __str__(self) -> str:
        if self.kind == "per_tensor":
            return "per_tensor"
        default = 32 if self.kind == "mx" else 16
        return self.kind if self.block == default else f"{self.kind}/{self.block}"


def parse_layout(s: str | ScaleLayout) -> ScaleLayout:
    """Parse a scale-layout string (case-insensitive)."""
    if isinstance(s, ScaleLayout):
        return s
    t = s.strip().lower()
    if t == "per_tensor":
        return ScaleLayout("per_tensor")
    if t in ("mx", "mxfp8", "block"):
        return ScaleLayout("mx", 32)
    if t == "nvfp4":
        return ScaleLayout("nvfp4", 16)
    m = re.fullmatch(r"(mx|nvfp4)/(\d+)", t)
    if m is not None and int(m.group(2)) >= 1:
        return ScaleLayout("mx" if m.group(1) == "mx" else "nvfp4", int(m.group(2)))
    raise ValueError(f"unknown scale layout {s!r}; accepted: {_LAYOUT_FORMS}")


def scale_shape(layout: str | ScaleLayout, rows: int, k: int) -> tuple[int, ...]:
    """Shape of the scale tensor for an ``[rows, k]`` operand."""
    lay = parse_layout(layout)
    if lay.kind == "per_tensor":
        return (1,)
    return (rows, -(-k // lay.block))


def _as_2d(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{what} must be 2-D [rows, K], got shape {a.shape}")
    return a


def _block_amax(x: np.ndarray, block: int) -> np.ndarray:
    """f32 ``[R, ceil(K/block)]`` max |x| per block (zero padding at the tail)."""
    r, k = x.shape
    nb = -(-k // block)
    padded = np.zeros((r, nb * block), dtype=np.float32)
    padded[:, :k] = np.abs(x)
    return padded.reshape(r, nb, block).max(axis=2, initial=np.float32(0))


def quant_scale(x: np.ndarray, fmt: str | LowpFormat, layout: str | ScaleLayout) -> np.ndarray:
    """Scale tensor for ``x[R, K]`` (float32 [1] or uint8 [R, ceil(K/B)])."""
    f, lay = parse_format(fmt), parse_layout(layout)
    xf = _as_2d(x, "x").astype(np.float32, copy=False)
    mf = np.float32(max_finite(f))
    if lay.kind == "per_tensor":
        amax = np.max(np.abs(xf), initial=np.float32(0))
        s = np.float32(1) if amax == 0 else np.float32(amax / mf)
        return np.array([s], dtype=np.float32)
    amax = _block_amax(xf, lay.block)
    if lay.kind == "nvfp4":
        q = np.where(amax == 0, np.float32(1), amax / mf)
        return encode(_E4M3, q)
    # mx: smallest power of two s with amax <= s * max_finite. The f64 quotient of an
    # f32 and an <=8-bit-mantissa constant is a power of two iff the exact one is.
    q = amax.astype(np.float64) / float(mf)
    mant, ex = np.frexp(q)
    ceil_log2 = np.where(mant == 0.5, ex - 1, ex)
    byte = np.clip(ceil_log2 + 127, 0, 254)
    byte = np.where(q == 0, 127, byte)
    byte = np.where(np.isinf(q), 254, byte)
    byte = np.where(np.isnan(q), 255, byte)
    return byte.astype(np.uint8)


def _block_scales(scale: np.ndarray, lay: ScaleLayout, rows: int, k: int) -> tuple[np.ndarray, int]:
    """Decoded f32 scales ``[rows, n_blocks]`` and the block length along K."""
    sc = np.asarray(scale)
    if lay.kind == "per_tensor":
        if sc.size != 1:
            raise ValueError(f"per_tensor scale must have one element, got shape {sc.shape}")
        return np.full((rows, 1), sc.reshape(-1)[0], dtype=np.float32), max(k, 1)
    want = scale_shape(lay, rows, k)
    if sc.shape != want:
        raise ValueError(f"{lay} scale for [{rows}, {k}] must have shape {want}, got {sc.shape}")
    if sc.dtype != np.uint8:
        raise TypeError(f"{lay} scales are uint8 bytes, got {sc.dtype}")
    if lay.kind == "nvfp4":
        return decode(_E4M3, sc), lay.block
    e = sc.astype(np.int32) - 127
    vals = np.where(sc == 255, np.nan, np.ldexp(1.0, e)).astype(np.float32)
    return vals, lay.block


def decode_scale(scale: np.ndarray, layout: str | ScaleLayout, rows: int, k: int) -> np.ndarray:
    """Per-element float32 scale ``[rows, k]`` (each block's scale broadcast)."""
    vals, block = _block_scales(scale, parse_layout(layout), rows, k)
    return np.repeat(vals, block, axis=1)[:, :k]


def quantize(
    x: np.ndarray, scale: np.ndarray, fmt: str | LowpFormat, layout: str | ScaleLayout
) -> np.ndarray:
    """uint8 codes ``[R, K]``: encode(fmt, f32(x) / s), or 0 where s == 0."""
    xf = _as_2d(x, "x").astype(np.float32, copy=False)
    s = decode_scale(scale, layout, *xf.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = xf / s
    codes = encode(fmt, q)
    codes[s == 0] = 0
    return codes


def scaled_matmul(
    a_codes: np.ndarray,
    b_codes: np.ndarray,
    a_scale: np.ndarray,
    b_scale: np.ndarray,
    lhs_fmt: str | LowpFormat,
    rhs_fmt: str | LowpFormat,
    layout: str | ScaleLayout,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """TN scaled GEMM: ``out[i, j] = sum_blk sa(i,blk) sb(j,blk) sum_p a[i,p] b[j,p]``.

    Reference arithmetic: each block's code dot product is computed in float64 and
    rounded once to f32 (products of <=8-bit codes are exact in f64, and the sums are
    exact unless the exponent span exceeds 53 bits, so the order is immaterial in
    practice); then, per block in increasing K order and all in f32,
    ``acc = acc + (sa * sb) * partial``; finally ``acc + bias[j]`` in f32. PerTensor is
    a single block covering all of K.
    """
    lay = parse_layout(layout)
    a = _as_2d(a_codes, "a_codes")
    b = _as_2d(b_codes, "b_codes")
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise ValueError(f"K mismatch: a is {a.shape}, b is {b.shape}")
    sa, block = _block_scales(a_scale, lay, m, k)
    sb, _ = _block_scales(b_scale, lay, n, k)
    da = decode(lhs_fmt, a).astype(np.float64)
    db = decode(rhs_fmt, b).astype(np.float64)
    acc = np.zeros((m, n), dtype=np.float32)
    for blk in range(sa.shape[1]):
        sl = slice(blk * block, min((blk + 1) * block, k))
        partial = (da[:, sl] @ db[:, sl].T).astype(np.float32)
        acc = acc + (sa[:, blk, None] * sb[None, :, blk]) * partial
    if bias is not None:
        bv = np.asarray(bias, dtype=np.float32).reshape(-1)
        if bv.size != n:
            raise ValueError(f"bias must have {n} elements, got {bv.size}")
        acc = acc + bv[None, :]
    return acc
