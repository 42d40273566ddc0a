"""Compiler bugs the hostile-ONNX fuzzer (`tools/fuzz/fuzz_onnx.py`) found, as small rlx
graphs: values checked against NumPy, bad data raising the run-time error, guard pages.

* A fused `rlx.elementwise_region` with an integer division or `math.ipowi` (ONNX
  `Pow(int64, Cast(float))` fuses into one) was an internal error in LLVM code generation:
  the region's yielded values were read before the checked-op guard replaced them.
* A conv with 0 output channels (an ONNX weight of dim 0) divided by zero in the lowering:
  an op whose results are all empty gets no kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from guarded_memory import guarded_run

import rlx
from rlx.errors import IntegerDivisionError, IntegerPowError


def _region(body: str, shape_x: str = "3") -> str:
    return f"""func.func @main(%x: tensor<{shape_x}xi64>, %y: tensor<3xi64>) -> tensor<3xi64> {{
  %z = rlx.elementwise_region %y, %x : (tensor<3xi64>, tensor<{shape_x}xi64>) -> tensor<3xi64> {{
  ^bb0(%0: i64, %1: i64):
    {body}
    rlx.yield %r : i64
  }}
  func.return %z : tensor<3xi64>
}}
"""


POW = "%t = arith.addi %0, %0 : i64\n    %r = math.ipowi %1, %t : i64"
DIV = "%r = arith.divsi %1, %0 : i64"


@pytest.mark.parametrize("shape_x", ["3", "1"])
def test_region_with_integer_pow(shape_x: str) -> None:
    g = rlx.compile(_region(POW, shape_x))
    x = np.array([3, -2, 5][: int(shape_x)], np.int64)
    y = np.array([0, 1, 2], np.int64)
    np.testing.assert_array_equal(g.run(x, y)[0], np.broadcast_to(x, 3) ** (2 * y))
    with pytest.raises(IntegerPowError, match=r"negative exponent \(-2\)"):
        g.run(x, np.array([0, -1, 2], np.int64))
    outs, status = guarded_run(g, [x, y], "end")
    assert status is not None and not status[0]
    np.testing.assert_array_equal(outs[0], np.broadcast_to(x, 3) ** (2 * y))


def test_region_with_integer_division() -> None:
    g = rlx.compile(_region(DIV))
    x, y = np.array([7, -7, 9], np.int64), np.array([2, 2, -4], np.int64)
    np.testing.assert_array_equal(g.run(x, y)[0], [3, -3, -2])  # truncating, as arith.divsi
    with pytest.raises(IntegerDivisionError, match=r"division by zero \(dividend -7\)"):
        g.run(x, np.array([2, 0, 1], np.int64))
    with pytest.raises(IntegerDivisionError, match="overflow"):
        g.run(np.array([0, 0, -(2**63)], np.int64), np.array([1, 1, -1], np.int64))


CONV0 = """func.func @main(%x: tensor<2x4x1x11xf32>, %w: tensor<0x1x1x4xf32>) -> (tensor<2x0x1x8xf32>, tensor<2x4x1x11xf32>) {
  %c = rlx.conv2d %x, %w {groups = 4 : i64} : (tensor<2x4x1x11xf32>, tensor<0x1x1x4xf32>) -> tensor<2x0x1x8xf32>
  %e = rlx.exp %x : (tensor<2x4x1x11xf32>) -> tensor<2x4x1x11xf32>
  func.return %c, %e : tensor<2x0x1x8xf32>, tensor<2x4x1x11xf32>
}
"""


@pytest.mark.parametrize("side", ["end", "start"])
def test_conv_with_no_output_channels(side: str) -> None:
    g = rlx.compile(CONV0)
    x = np.linspace(-1, 1, 88, dtype=np.float32).reshape(2, 4, 1, 11)
    w = np.zeros((0, 1, 1, 4), np.float32)
    c, e = g.run(x, w)
    assert c.shape == (2, 0, 1, 8)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
    outs, _ = guarded_run(g, [x, w], side)
    np.testing.assert_allclose(outs[1], np.exp(x), rtol=1e-6)
