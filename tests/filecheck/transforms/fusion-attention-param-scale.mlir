// RUN: rlx-opt %s -p 'fusion' | filecheck %s

// The scores divided (or multiplied) by a one-element scale that is not a constant (an
// ONNX initializer imported as rlx.param, unknown until set_params): the scale moves onto
// q, before its [0, 2, 1, 3] transpose, so the transposes are still absorbed (bshd).

// CHECK-LABEL: func.func @param_scale
// CHECK:         %[[S:.*]] = rlx.param "scale" : tensor<f32>
// CHECK:         %[[Q:.*]] = rlx.div %q4, %[[S]] : (tensor<1x5x2x4xf32>, tensor<f32>) -> tensor<1x5x2x4xf32>
// CHECK:         rlx.attention %[[Q]], %k4, %v4 {scale = 1.000000e+00 : f64, mask_kind = "none", layout = "bshd"}
// CHECK-NOT:     rlx.softmax
func.func @param_scale(%q4: tensor<1x5x2x4xf32>, %k4: tensor<1x5x2x4xf32>, %v4: tensor<1x5x2x4xf32>) -> tensor<1x5x2x4xf32> {
  %s = rlx.param "scale" : tensor<f32>
  %q = rlx.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %kt = rlx.transpose %k4 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x4x5xf32>
  %v = rlx.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %sc = rlx.matmul %q, %kt : (tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x5x5xf32>
  %d = rlx.div %sc, %s : (tensor<1x2x5x5xf32>, tensor<f32>) -> tensor<1x2x5x5xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %o = rlx.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  %r = rlx.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x2x5x4xf32>) -> tensor<1x5x2x4xf32>
  func.return %r : tensor<1x5x2x4xf32>
}

// A [1, 1, 1, 1] param scale multiplying [B, H, S, D] scores: flattened to a scalar, q * s.
// CHECK-LABEL: func.func @param_scale_mul
// CHECK:         %[[F:.*]] = rlx.reshape %s : (tensor<1x1x1x1xf32>) -> tensor<f32>
// CHECK:         %[[Q:.*]] = rlx.mul %q, %[[F]]
// CHECK:         rlx.attention %[[Q]], %k, %v {scale = 1.000000e+00 : f64, mask_kind = "none"} :
func.func @param_scale_mul(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = rlx.param "scale" : tensor<1x1x1x1xf32>
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
  %sc = rlx.matmul %q, %kt : (tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x5x5xf32>
  %d = rlx.mul %s, %sc : (tensor<1x1x1x1xf32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %o = rlx.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return %o : tensor<1x2x5x4xf32>
}

// A scale that is not one element (per key: a mask, not a scale) is not fused.
// CHECK-LABEL: func.func @per_key_scale
// CHECK:         rlx.softmax
// CHECK-NOT:     rlx.attention
func.func @per_key_scale(%q: tensor<1x2x5x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = rlx.param "scale" : tensor<1x1x1x5xf32>
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x4xf32>) -> tensor<1x2x4x5xf32>
  %sc = rlx.matmul %q, %kt : (tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x5x5xf32>
  %d = rlx.mul %sc, %s : (tensor<1x2x5x5xf32>, tensor<1x1x1x5xf32>) -> tensor<1x2x5x5xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  %o = rlx.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x5x4xf32>
  func.return %o : tensor<1x2x5x4xf32>
}
