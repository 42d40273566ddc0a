// RUN: python -c "import numpy as np; np.savez('%t.npz', w=np.arange(6, dtype=np.float32).reshape(2, 3), unused=np.zeros(1, np.float32))"
// RUN: rlx-opt %s --bind-params=%t.npz | filecheck %s
// RUN: rlx-opt %s -p 'bind-params{path="%t.npz"},constant-folding' | filecheck %s --check-prefix=FOLD

// A bound param becomes a constant holding the weights; an unbound one stays a param.
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = rlx.param "w" : tensor<2x3xf32>
  %s = rlx.param "scale" : tensor<3xf32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %tt = rlx.transpose %t {permutation = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %m = rlx.matmul %x, %tt : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %y = rlx.mul %m, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %w = rlx.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00, 5.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT: %s = rlx.param "scale" : tensor<3xf32>
// CHECK-NOT: rlx.param "w"

// Weight-only compute (the double transpose) folds away once the weight is bound.
// FOLD-LABEL: func.func @main
// FOLD-NOT: rlx.transpose
// FOLD: rlx.matmul %x, %{{.*}} : (tensor<4x2xf32>, tensor<2x3xf32>)
