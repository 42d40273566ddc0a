"""Philox4x64-10 streams: parity with numpy.random.Philox and the documented recipes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlx.formats import philox

KEYS = [0, 1, 42, 2**63 + 12345, 2**64 - 1, philox.stream_key(42, 0x1234_5678_9ABC)]


def test_stream_key() -> None:
    assert philox.stream_key(42, 0) == 42
    assert philox.stream_key(0, 1) == philox.GOLDEN
    assert philox.stream_key(1, 2) == (1 + 2 * 0x9E3779B97F4A7C15) % 2**64
    assert philox.stream_key(-1, 0) == 2**64 - 1


@pytest.mark.parametrize("k", KEYS)
def test_block_function_matches_numpy(k: int) -> None:
    n_blocks = 9
    ref = np.random.Philox(key=k).random_raw(4 * n_blocks)
    # numpy increments the 256-bit counter before each block: block b uses counter b+1.
    ctr = np.zeros((n_blocks, 4), np.uint64)
    ctr[:, 0] = np.arange(1, n_blocks + 1, dtype=np.uint64)
    out = philox.philox4x64_block(ctr, (k, 0))
    assert out.dtype == np.uint64 and out.shape == (n_blocks, 4)
    np.testing.assert_array_equal(out.reshape(-1), ref)


def test_block_function_full_counter_and_key() -> None:
    # Counter carry and a 128-bit key, against numpy's own state machinery.
    key = (0x0123456789ABCDEF, 0xFEDCBA9876543210)
    bg = np.random.Philox(key=key[0] | (key[1] << 64))
    st = bg.state
    st["state"]["counter"] = np.array([2**64 - 1, 5, 2**64 - 1, 7], np.uint64)
    bg.state = st
    ref = bg.random_raw(8)
    ctr = np.array([[0, 6, 2**64 - 1, 7], [1, 6, 2**64 - 1, 7]], np.uint64)
    np.testing.assert_array_equal(philox.philox4x64_block(ctr, key).reshape(-1), ref)


def test_raw_words() -> None:
    k = philox.stream_key(7, 3)
    np.testing.assert_array_equal(
        philox.raw_words(7, 3, 10), np.random.Philox(key=k).random_raw(10)
    )
    assert philox.raw_words(7, 3, 0).shape == (0,)
    # a prefix of a longer stream
    np.testing.assert_array_equal(philox.raw_words(7, 3, 5), philox.raw_words(7, 3, 13)[:5])


def test_uniform_recipe_and_range() -> None:
    low, high = -2.0, 3.0
    v = philox.uniform(5, 9, (40, 25), low, high)
    assert v.dtype == np.float32 and v.shape == (40, 25)
    w = philox.raw_words(5, 9, 1000)
    u = ((w >> np.uint64(40)).astype(np.float32)) * np.float32(2.0**-24)
    span = np.float32(high) - np.float32(low)
    want = (u * span) + np.float32(low)
    np.testing.assert_array_equal(v.reshape(-1), want)
    assert v.min() >= low and v.max() < high
    assert abs(float(v.mean()) - 0.5) < 0.15
    v01 = philox.uniform(1, 2, 10000)
    assert v01.min() >= 0.0 and v01.max() < 1.0
    v64 = philox.uniform(5, 9, 7, low, high, dtype=np.float64)
    assert v64.dtype == np.float64


def test_determinism_and_offsets() -> None:
    a = philox.uniform(42, 1, 16)
    np.testing.assert_array_equal(a, philox.uniform(42, 1, 16))
    np.testing.assert_array_equal(philox.normal(42, 1, 16), philox.normal(42, 1, 16))
    for other in (philox.uniform(42, 2, 16), philox.uniform(43, 1, 16)):
        assert int(np.sum(a != other)) >= 14
    assert int(np.sum(philox.normal(42, 1, 16) != philox.normal(42, 2, 16))) >= 14


def test_normal_recipe() -> None:
    mean, std = 0.5, 2.0
    v = philox.normal(11, 4, (3, 5), mean, std)
    assert v.dtype == np.float32 and v.shape == (3, 5)
    w = philox.raw_words(11, 4, 30)
    for i in range(15):
        u1 = max(int(w[2 * i]) >> 40, 1) * 2.0**-24
        u2 = (int(w[2 * i + 1]) >> 40) * 2.0**-24
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        assert v.reshape(-1)[i] == np.float32(mean + std * z)
    v64 = philox.normal(11, 4, 15, mean, std, dtype=np.float64)
    assert v64.dtype == np.float64
    np.testing.assert_array_equal(v64.astype(np.float32), v.reshape(-1))


def test_normal_statistics() -> None:
    z = philox.normal(42, 7, 10000).astype(np.float64)
    assert abs(z.mean()) < 0.05
    assert abs(z.std() - 1.0) < 0.05
    assert np.all(np.isfinite(z))
