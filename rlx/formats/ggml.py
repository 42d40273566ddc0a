"""GGML block quantisation (Q8_0, TQ2_0) in pure NumPy.

The packers are byte-identical to the ``gguf`` package's reference quantizers
(``gguf.quants.quantize``), which in turn match ``ggml-quants.c``; the unpackers are
identical to ``gguf.quants.dequantize``. The bake tool, the reference interpreter and
the compiler's dequant kernels all share these definitions, so every arithmetic step
below is performed in float32 exactly as gguf does it.

Layout: a weight ``w`` of shape ``[N, K]`` is packed row after row, each row cut into
``K / block`` consecutive blocks along K (``K % block == 0`` is required so blocks never
straddle rows). The result is a flat ``uint8`` array of ``N * K / block * bytes``.

Q8_0 (GGML type 8), 32 values in 34 bytes::

    [0:2]   d      f16 little-endian, d = amax / 127 (f32 division, then rounded to f16)
    [2:34]  qs[32] int8, q_j = roundf(x_j * id) with id = 1/d (0 if d == 0), computed in
                   f32, rounded half away from zero
    value_j = f32(qs[j]) * f32(d)

TQ2_0 (GGML type 35), 256 values in 66 bytes::

    [0:64]  qs[64] 2-bit codes, four per byte
    [64:66] d      f16 little-endian, d = amax (rounded to f16)
    code = roundf(x * id) + 1 in {0, 1, 2}, id = 1/d (0 if d == 0), computed in f32
    Within each 128-value half h (qs bytes h*32 .. h*32+31), value index
    h*128 + l*32 + m has code (qs[h*32 + m] >> 2l) & 3 for l in 0..3, m in 0..31.
    value = f32(code - 1) * f32(d)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BLOCK",
    "SCHEMES",
    "dequantize",
    "is_ternary",
    "packed_nbytes",
    "quantize",
    "ternary_blocks_ok",
]

BLOCK: dict[str, tuple[int, int]] = {"q8_0": (32, 34), "tq2_0": (256, 66)}
"""scheme -> (values per block, bytes per block)."""

SCHEMES: tuple[str, ...] = tuple(BLOCK)

_TQ_SHIFTS = np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)


def _scheme(scheme: str) -> str:
    s = scheme.strip().lower()
    if s not in BLOCK:
        raise ValueError(f"unknown GGML scheme {scheme!r}; accepted: {', '.join(SCHEMES)}")
    return s


def _roundf(n: np.ndarray) -> np.ndarray:
    """Round half away from zero, with gguf's exact f32 operation sequence."""
    a = np.abs(n)
    floored = np.floor(a)
    b = floored + np.floor(2 * (a - floored))
    return np.sign(n) * b


def _inverse(d: np.ndarray) -> np.ndarray:
    """f32 1/d, 0 where d == 0 (as ggml)."""
    with np.errstate(divide="ignore"):
        return np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)


def packed_nbytes(scheme: str, n: int, k: int) -> int:
    """Number of bytes ``quantize`` produces for an ``[n, k]`` weight."""
    block, nbytes = BLOCK[_scheme(scheme)]
    if k % block:
        raise ValueError(f"K={k} is not a multiple of the {scheme} block size {block}")
    return n * (k // block) * nbytes


def _blocks(w: np.ndarray, scheme: str) -> np.ndarray:
    """Validate ``w`` and return its f32 values as ``[n_blocks, block]``."""
    w = np.asarray(w)
    if w.ndim != 2:
        raise ValueError(f"expected a 2-D [N, K] weight, got shape {w.shape}")
    block, _ = BLOCK[scheme]
    k = w.shape[1]
    if k % block:
        raise ValueError(f"K={k} is not a multiple of the {scheme} block size {block}")
    return np.ascontiguousarray(w, dtype=np.float32).reshape(-1, block)


def _quantize_q8_0(blocks: np.ndarray) -> np.ndarray:
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    qs = _roundf(blocks * _inverse(d))
    d16 = d.astype(np.float16).view(np.uint8)
    return np.concatenate([d16, qs.astype(np.int8).view(np.uint8)], axis=1)


def _quantize_tq2_0(blocks: np.ndarray) -> np.ndarray:
    nb = blocks.shape[0]
    d = np.abs(blocks).max(axis=1, keepdims=True)
    qs = _roundf(blocks * _inverse(d))
    codes = (qs.astype(np.int8) + np.int8(1)).astype(np.uint8)
    codes = codes.reshape(nb, 2, 4, 32) << _TQ_SHIFTS
    packed = codes[:, :, 0] | codes[:, :, 1] | codes[:, :, 2] | codes[:, :, 3]
    d16 = d.astype(np.float16).view(np.uint8)
    return np.concatenate([packed.reshape(nb, 64), d16], axis=1)


def quantize(w: np.ndarray, scheme: str) -> np.ndarray:
    """Pack an ``[N, K]`` float weight into GGML blocks; returns flat ``uint8``.

    ``w`` is converted to float32 first (as gguf does). Raises ``ValueError`` when
    ``K`` is not a multiple of the block size or the scheme is unknown.
    """
    s = _scheme(scheme)
    blocks = _blocks(w, s)
    if blocks.shape[0] == 0:
        return np.zeros(0, dtype=np.uint8)
    out = _quantize_q8_0(blocks) if s == "q8_0" else _quantize_tq2_0(blocks)
    return np.ascontiguousarray(out).reshape(-1)


def dequantize(packed: np.ndarray, scheme: str, n: int, k: int) -> np.ndarray:
    """Unpack GGML blocks produced by ``quantize`` into float32 ``[n, k]``."""
    s = _scheme(scheme)
    block, nbytes = BLOCK[s]
    expected = packed_nbytes(s, n, k)
    raw = np.ascontiguousarray(packed).view(np.uint8).reshape(-1)
    if raw.size != expected:
        raise ValueError(f"{s}: [{n}, {k}] needs {expected} bytes, got {raw.size}")
    blocks = raw.reshape(-1, nbytes)
    nb = blocks.shape[0]
    if s == "q8_0":
        d = np.ascontiguousarray(blocks[:, :2]).view(np.float16).astype(np.float32)
        x = np.ascontiguousarray(blocks[:, 2:]).view(np.int8).astype(np.float32)
        out = x * d
    else:
        d = np.ascontiguousarray(blocks[:, 64:]).view(np.float16).astype(np.float32)
        qs = blocks[:, :64].reshape(nb, 2, 1, 32) >> _TQ_SHIFTS
        codes = (qs & 0x03).reshape(nb, block).astype(np.int8) - np.int8(1)
        out = d * codes.astype(np.float32)
    return out.reshape(n, k)


def is_ternary(w: np.ndarray) -> bool:
    """True when every element is exactly -1.0, 0.0 (either sign) or +1.0.

    This is the bake tool's trigger for the lossless TQ2_0 rewrite.
    """
    w = np.asarray(w)
    return bool(np.all((w == 0) | (w == 1) | (w == -1)))


def ternary_blocks_ok(w: np.ndarray) -> bool:
    """True when TQ2_0 packing of ``[N, K]`` ``w`` is lossless.

    Requires ``K % 256 == 0`` and, for every 256-value block of every row, that all
    non-zero values equal ``+d`` or ``-d`` where ``d`` (the block's amax) is finite and
    exactly representable in float16. Values are compared as given (float64 view), so
    an input that is not exactly float32-representable is rejected too.
    """
    w = np.asarray(w)
    if w.ndim != 2 or w.shape[1] % BLOCK["tq2_0"][0]:
        return False
    if w.size == 0:
        return True
    x = w.astype(np.float64).reshape(-1, BLOCK["tq2_0"][0])
    if not np.all(np.isfinite(x)):
        return False
    a = np.abs(x)
    d = a.max(axis=1, keepdims=True)
    with np.errstate(over="ignore"):
        d_exact = d.astype(np.float16).astype(np.float64) == d
    return bool(np.all(d_exact) and np.all((a == 0) | (a == d)))
