"""Reference interpreter: rlx.pack_rhs (a zero-padded relayout) and rlx.packed_matmul
against NumPy."""

from __future__ import annotations

import numpy as np

from rlx.interpreter import run


def test_pack_rhs_layout_and_packed_matmul() -> None:
    text = """
func.func @main(%x: tensor<3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>) -> (tensor<2x4x3xf32>, tensor<3x5xf32>) {
  %p = rlx.pack_rhs %w {width = 3 : i64} : (tensor<4x5xf32>) -> tensor<2x4x3xf32>
  %y = rlx.packed_matmul %x, %p, %b {n = 5 : i64, activation = "relu"} : (tensor<3x4xf32>, tensor<2x4x3xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  func.return %p, %y : tensor<2x4x3xf32>, tensor<3x5xf32>
}
"""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 5), (5,)))
    p, y = run(text, [x, w, b])
    want = np.zeros((2, 4, 3), np.float32)
    for q in range(2):
        for k in range(4):
            for c in range(3):
                if q * 3 + c < 5:
                    want[q, k, c] = w[k, q * 3 + c]
    np.testing.assert_array_equal(p, want)
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-6, atol=1e-6)
