"""GGML Q8_0 / TQ2_0 packing must be byte-identical to the gguf reference."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf import quants as gq  # noqa: E402

from rlx.formats import ggml

QTYPE = {"q8_0": QT.Q8_0, "tq2_0": QT.TQ2_0}


def _check_against_gguf(w: np.ndarray, scheme: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.float32)
    n, k = w.shape
    packed = ggml.quantize(w, scheme)
    ref = gq.quantize(w, QTYPE[scheme])
    assert packed.dtype == np.uint8
    assert packed.shape == (n * k // ggml.BLOCK[scheme][0] * ggml.BLOCK[scheme][1],)
    np.testing.assert_array_equal(packed, ref.reshape(-1))
    out = ggml.dequantize(packed, scheme, n, k)
    assert out.dtype == np.float32 and out.shape == (n, k)
    np.testing.assert_array_equal(out, gq.dequantize(ref, QTYPE[scheme]))
    return out


def _ternary(rng: np.random.Generator, n: int, k: int, d: np.ndarray | float) -> np.ndarray:
    t = rng.integers(-1, 2, size=(n, k)).astype(np.float32)
    return t * np.float32(d) if np.isscalar(d) else t * d


@pytest.mark.parametrize("scheme", ["q8_0", "tq2_0"])
@pytest.mark.parametrize("scale", [1.0, 1e-3, 37.5])
def test_random_matches_gguf(scheme: str, scale: float) -> None:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((6, 512)) * scale).astype(np.float32)
    _check_against_gguf(w, scheme)


@pytest.mark.parametrize("scheme", ["q8_0", "tq2_0"])
def test_ternary_all_zero_and_ties_match_gguf(scheme: str) -> None:
    rng = np.random.default_rng(1)
    k = 512
    d = np.float32(0.375)
    tern = _ternary(rng, 3, k, d)
    zeros = np.zeros((2, k), np.float32)
    # Q8_0 ties: amax 127 -> d = 1, id = 1, x = m + .5 exactly.
    q8_ties = np.tile(np.arange(-15.5, 16.5, 1.0, dtype=np.float32), (1, k // 32))
    q8_ties[0, ::32] = 127.0
    # TQ2_0 ties: amax 2 -> id = .5, x = +-1 gives exactly +-.5.
    tq_ties = rng.choice(np.array([-1.0, 1.0, 0.0], np.float32), size=(1, k))
    tq_ties[0, ::256] = 2.0
    tq_ties[0, 1::256] = -2.0
    mixed = rng.standard_normal((1, k)).astype(np.float32)
    mixed[0, :256] = 0.0  # one all-zero block inside a non-zero row
    w = np.concatenate([tern, zeros, q8_ties, tq_ties, mixed])
    _check_against_gguf(w, scheme)


def test_tq2_0_layout_by_hand() -> None:
    codes = np.arange(256) % 3  # element i gets code i % 3
    d = np.float32(0.5)
    w = ((codes - 1) * d).astype(np.float32)[None, :]
    packed = ggml.quantize(w, "tq2_0")
    assert packed.size == 66
    assert packed[64:].view(np.float16)[0] == np.float16(0.5)
    qs = packed[:64]
    for j in (0, 32):
        for lane in range(4):
            for m in range(32):
                assert (qs[j + m] >> (2 * lane)) & 3 == codes[j * 4 + lane * 32 + m]


def test_q8_0_layout_by_hand() -> None:
    w = np.zeros((1, 32), np.float32)
    w[0, 0], w[0, 1], w[0, 2] = 127.0, -2.5, 1.4
    packed = ggml.quantize(w, "q8_0")
    assert packed[:2].view(np.float16)[0] == np.float16(1.0)
    np.testing.assert_array_equal(packed[2:5].view(np.int8), [127, -3, 1])


def test_ternary_blocks_round_trip_exact() -> None:
    rng = np.random.default_rng(2)
    k = 768
    # per-block d, all f16-exact (incl. a subnormal f16 and a large one)
    d = np.array([1.0, 0.375, 2.0**-20, 1024.0, 3.0, 0.0], np.float32)
    w = np.concatenate([_ternary(rng, 1, 256, d[i]) for i in range(len(d))], axis=1).reshape(2, k)
    assert ggml.ternary_blocks_ok(w)
    out = _check_against_gguf(w, "tq2_0")
    np.testing.assert_array_equal(out, w)

    unit = _ternary(rng, 4, 256, 1.0)
    unit[0, 0] = -0.0
    assert ggml.is_ternary(unit) and ggml.ternary_blocks_ok(unit)
    np.testing.assert_array_equal(
        ggml.dequantize(ggml.quantize(unit, "tq2_0"), "tq2_0", 4, 256), unit
    )


def test_ternary_blocks_rejects() -> None:
    rng = np.random.default_rng(3)
    not_f16 = _ternary(rng, 1, 256, 0.1)
    not_f16[0, 0] = 0.1
    assert not ggml.ternary_blocks_ok(not_f16)
    three_levels = _ternary(rng, 1, 256, 1.0)
    three_levels[0, 5] = 0.5
    assert not ggml.ternary_blocks_ok(three_levels)
    assert not ggml.is_ternary(three_levels)
    assert not ggml.ternary_blocks_ok(np.ones((1, 128), np.float32))  # K % 256 != 0
    nan = np.ones((1, 256), np.float32)
    nan[0, 3] = np.nan
    assert not ggml.ternary_blocks_ok(nan) and not ggml.is_ternary(nan)
    assert not ggml.is_ternary(np.full((2, 2), 2.0))


def test_errors() -> None:
    with pytest.raises(ValueError, match=r"K=48.*32"):
        ggml.quantize(np.zeros((2, 48), np.float32), "q8_0")
    with pytest.raises(ValueError, match=r"K=320.*256"):
        ggml.quantize(np.zeros((1, 320), np.float32), "tq2_0")
    with pytest.raises(ValueError, match="q8_0, tq2_0"):
        ggml.quantize(np.zeros((1, 32), np.float32), "q4_0")
    with pytest.raises(ValueError, match="2-D"):
        ggml.quantize(np.zeros(32, np.float32), "q8_0")
    with pytest.raises(ValueError, match="bytes"):
        ggml.dequantize(np.zeros(33, np.uint8), "q8_0", 1, 32)
    assert ggml.packed_nbytes("tq2_0", 3, 512) == 3 * 2 * 66
