"""`CompileOptions(quant_param_bindings=...)` (issue 16 item 4): a dict of packed GGUF
tensors (`PackedWeight`, as `rlx.weights.load` of a .gguf gives), raw uint8 block bytes
(what `rlx.formats.ggml.quantize` returns; the scheme is the consuming op's) or a path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlx
from rlx import interpreter
from rlx.formats import ggml
from rlx.weights import PackedWeight, load, save

TEXT = """
func.func @main(%x: tensor<2x64xf32> {rlx.name = "x"}) -> tensor<2x32xf32> {
  %p = rlx.param "p" : tensor<2176xui8>
  %y = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 32 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<2176xui8>) -> tensor<2x32xf32>
  func.return %y : tensor<2x32xf32>
}
"""
RNG = np.random.default_rng(4)
WQ = ggml.quantize(RNG.standard_normal((32, 64)).astype(np.float32), "q8_0")
X = RNG.standard_normal((2, 64)).astype(np.float32)


@pytest.fixture(scope="module")
def want() -> np.ndarray:
    return interpreter.run(TEXT, [X], {"p": WQ})[0]


@pytest.mark.parametrize(
    "value",
    [PackedWeight("q8_0", 32, 64, WQ), WQ, WQ.tobytes(), bytearray(WQ.tobytes())],
    ids=["PackedWeight", "uint8-array", "bytes", "bytearray"],
)
def test_dict_bindings(value: object, want: np.ndarray) -> None:
    g = rlx.compile(TEXT, rlx.CompileOptions(quant_param_bindings={"p": value}))
    assert g.params == {}
    np.testing.assert_allclose(g.run(X)[0], want, rtol=1e-5, atol=1e-6)


def test_npz_path_keeps_scheme_and_shape(tmp_path: Path, want: np.ndarray) -> None:
    path = tmp_path / "q.npz"
    save(path, {"p": PackedWeight("q8_0", 32, 64, WQ)})
    back = load(path)["p"]
    assert isinstance(back, PackedWeight) and (back.scheme, back.n, back.k) == ("q8_0", 32, 64)
    g = rlx.compile(TEXT, rlx.CompileOptions(quant_param_bindings=path))
    np.testing.assert_allclose(g.run(X)[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("value", "msg"),
    [
        (WQ[:-1], "param 'p': 2175 bytes of packed data, q8_0 [32, 64] needs 2176"),
        (
            PackedWeight("q8_0", 64, 32, WQ),
            "bound to a q8_0 [64, 32] tensor, rlx.dequant_matmul expects q8_0 [32, 64]",
        ),
        (
            WQ.astype(np.float32),
            "expected a PackedWeight or 2176 raw uint8 bytes of q8_0 blocks, got float32 array",
        ),
    ],
)
def test_bad_bindings_name_the_param(value: object, msg: str) -> None:
    with pytest.raises(ValueError) as e:
        rlx.compile(TEXT, rlx.CompileOptions(quant_param_bindings={"p": value}))
    assert msg in str(e.value)
