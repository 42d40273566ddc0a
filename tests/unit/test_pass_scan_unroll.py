"""scan-unroll: the unrolled graph computes exactly what the scan computes (reference
interpreter, bit-exact: the same ops run in the same order), and scans longer than
max-length, dynamic ones, or all of them with max-length 0, stay."""

from __future__ import annotations

import numpy as np
import pytest
from graphgen import apply, op_names, parse
from xdsl.utils.exceptions import PassFailedException

from rlx.interpreter import run
from rlx.transforms.scan_unroll import ScanUnroll

CUMSUM = """
func.func @main(%init: tensor<3xf32>, %xs: tensor<5x3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  %c, %ys = rlx.scan (%init) over (%xs) {length = 5 : i64} : (tensor<3xf32>), (tensor<5x3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  ^bb0(%carry: tensor<3xf32>, %x: tensor<3xf32>):
    %n = rlx.add %carry, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n, %n : tensor<3xf32>, tensor<3xf32>
  }
  func.return %c, %ys : tensor<3xf32>, tensor<5x3xf32>
}
"""

# Two carries (h: [2], s: scalar), two xs ([4,2] and [4,2,3]), two per-step outputs.
TWO = """
func.func @main(%h0: tensor<2xf32>, %s0: tensor<f32>, %a: tensor<4x2xf32>, %b: tensor<4x2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<f32>, tensor<4x2xf32>, tensor<4x2x2xf32>) {
  %h, %s, %y1, %y2 = rlx.scan (%h0, %s0) over (%a, %b) {length = 4 : i64} : (tensor<2xf32>, tensor<f32>), (tensor<4x2xf32>, tensor<4x2x3xf32>) -> (tensor<2xf32>, tensor<f32>, tensor<4x2xf32>, tensor<4x2x2xf32>) {
  ^bb0(%hc: tensor<2xf32>, %sc: tensor<f32>, %at: tensor<2xf32>, %bt: tensor<2x3xf32>):
    %m = rlx.matmul %bt, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %r = rlx.reduce %m {kind = "sum", axes = array<i64: 1>} : (tensor<2x2xf32>) -> tensor<2xf32>
    %t = rlx.tanh %r : (tensor<2xf32>) -> tensor<2xf32>
    %u = rlx.mul %hc, %at : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %hn = rlx.add %u, %t : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %q = rlx.reduce %hn {kind = "sum", axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
    %sn = rlx.add %sc, %q : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %hn, %sn, %u, %m : tensor<2xf32>, tensor<f32>, tensor<2xf32>, tensor<2x2xf32>
  }
  func.return %h, %s, %y1, %y2 : tensor<2xf32>, tensor<f32>, tensor<4x2xf32>, tensor<4x2x2xf32>
}
"""


def _inputs(text: str, seed: int = 0) -> list[np.ndarray]:
    m = parse(text)
    rng = np.random.default_rng(seed)
    f = m.body.block.first_op
    return [
        rng.uniform(-1, 1, tuple(a.type.get_shape())).astype(np.float32)  # type: ignore[union-attr]
        for a in f.body.block.args  # type: ignore[union-attr]
    ]


@pytest.mark.parametrize("text", [CUMSUM, TWO], ids=["cumsum5", "two_carries_two_xs"])
def test_unrolled_matches_scan(text: str) -> None:
    inputs = _inputs(text)
    want = run(parse(text), inputs)
    m = apply(ScanUnroll(), parse(text))
    assert "rlx.scan" not in op_names(m)
    got = run(m, inputs)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_cumsum_is_five_chained_adds() -> None:
    names = op_names(apply(ScanUnroll(), parse(CUMSUM)))
    assert names.count("rlx.add") == 5 and names.count("rlx.concat") == 1
    inputs = _inputs(CUMSUM)
    c, ys = run(apply(ScanUnroll(), parse(CUMSUM)), inputs)
    np.testing.assert_allclose(ys, inputs[0] + np.cumsum(inputs[1], axis=0), atol=1e-6)


@pytest.mark.parametrize("max_length", [0, 4])
def test_long_or_disabled_scans_stay(max_length: int) -> None:
    m = apply(ScanUnroll(max_length=max_length), parse(CUMSUM))
    assert op_names(m).count("rlx.scan") == 1


def test_dynamic_scan_stays() -> None:
    text = CUMSUM.replace("tensor<3xf32>", "tensor<?xf32>").replace("5x3", "5x?")
    assert op_names(apply(ScanUnroll(), parse(text))).count("rlx.scan") == 1


def test_length_one_has_no_concat() -> None:
    text = CUMSUM.replace("5x3", "1x3").replace("length = 5", "length = 1")
    inputs = _inputs(text)
    m = apply(ScanUnroll(), parse(text))
    assert "rlx.concat" not in op_names(m)
    for a, b in zip(run(m, inputs), run(parse(text), inputs), strict=True):
        np.testing.assert_array_equal(a, b)


def test_negative_max_length() -> None:
    with pytest.raises(PassFailedException, match="max-length must be >= 0"):
        apply(ScanUnroll(max_length=-1), parse(CUMSUM))
