"""rlx.weights.load against files written by the formats' own libraries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlx import weights
from rlx.formats import ggml


def test_npz_and_safetensors_roundtrip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    w = {
        "layer.0.weight": rng.standard_normal((4, 3)).astype(np.float32),
        "b": np.arange(3, dtype=np.float32),
    }
    for suffix in (".npz", ".safetensors"):
        path = tmp_path / f"w{suffix}"
        weights.save(path, w)
        got = weights.load(path)
        assert set(got) == set(w)
        for k in w:
            np.testing.assert_array_equal(got[k], w[k])


def test_gguf_dense_and_packed(tmp_path: Path) -> None:
    import gguf

    rng = np.random.default_rng(1)
    dense = rng.standard_normal((3, 5)).astype(np.float32)
    wq = rng.standard_normal((4, 64)).astype(np.float32)
    tern = rng.integers(-1, 2, size=(2, 256)).astype(np.float32)
    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_tensor("dense", dense)
    q8 = gguf.quants.quantize(wq, gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("wq", q8, raw_shape=q8.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    tq = gguf.quants.quantize(tern, gguf.GGMLQuantizationType.TQ2_0)
    writer.add_tensor("tern", tq, raw_shape=tq.shape, raw_dtype=gguf.GGMLQuantizationType.TQ2_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    got = weights.load(path)
    np.testing.assert_array_equal(got["dense"], dense)
    p = got["wq"]
    assert isinstance(p, weights.PackedWeight) and (p.scheme, p.n, p.k) == ("q8_0", 4, 64)
    np.testing.assert_array_equal(p.data, ggml.quantize(wq, "q8_0"))
    t = got["tern"]
    assert isinstance(t, weights.PackedWeight) and t.scheme == "tq2_0"
    np.testing.assert_array_equal(ggml.dequantize(t.data, "tq2_0", 2, 256), tern)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.npz", None, "not found"),
        ("w.bin", b"xx", "unsupported weight file"),
        ("bad.npz", b"not a zip", "cannot read weight file"),
        ("bad.safetensors", b"\x08\x00\x00\x00\x00\x00\x00\x00{}", "cannot read weight file"),
        ("bad.gguf", b"GGUF\x03\x00", "cannot read weight file"),
    ],
)
def test_bad_files(tmp_path: Path, name: str, content: bytes | None, message: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        weights.load(path)


def test_rank_zero_arrays_stay_rank_zero(tmp_path: Path) -> None:
    """np.ascontiguousarray makes a 0-d array 1-d; saved weights keep their shape."""
    for suffix in (".npz", ".safetensors"):
        path = tmp_path / f"w{suffix}"
        weights.save(path, {"s": np.array(1.5, np.float32), "v": np.arange(3, dtype=np.float32)})
        got = weights.load(path)
        assert np.asarray(got["s"]).shape == () and float(np.asarray(got["s"])) == 1.5
        assert np.asarray(got["v"]).shape == (3,)
