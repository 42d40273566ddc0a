// RUN: rlx-opt %s -p 'fusion' | filecheck %s

// rlx.attention whose q, k, v are [B, S, H, D] tensors transposed [0, 2, 1, 3] reads them
// in place (layout = "bshd"); the transpose of its output back to [B, S, H, D] is
// absorbed too. Without an output transpose one is emitted (when >= 2 copies go).
// Not done when it removes no more copies than it adds, for other permutations, or when
// an operand is not such a transpose.

// CHECK-LABEL: func.func @absorbed
// CHECK-NEXT:    %o = rlx.attention %q4, %k4, %v4, %m {mask_kind = "bias", layout = "bshd"} : (tensor<2x5x3x4xf32>, tensor<2x7x1x4xf32>, tensor<2x7x1x6xf32>, tensor<2x1x1x7xf32>) -> tensor<2x5x3x6xf32>
// CHECK-NEXT:    func.return %o : tensor<2x5x3x6xf32>
func.func @absorbed(%q4: tensor<2x5x3x4xf32>, %k4: tensor<2x7x1x4xf32>, %v4: tensor<2x7x1x6xf32>, %m: tensor<2x1x1x7xf32>) -> tensor<2x5x3x6xf32> {
  %q = rlx.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x3x4xf32>) -> tensor<2x3x5x4xf32>
  %k = rlx.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x7x1x4xf32>) -> tensor<2x1x7x4xf32>
  %v = rlx.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x7x1x6xf32>) -> tensor<2x1x7x6xf32>
  %a = rlx.attention %q, %k, %v, %m {mask_kind = "bias"} : (tensor<2x3x5x4xf32>, tensor<2x1x7x4xf32>, tensor<2x1x7x6xf32>, tensor<2x1x1x7xf32>) -> tensor<2x3x5x6xf32>
  %o = rlx.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x3x5x6xf32>) -> tensor<2x5x3x6xf32>
  func.return %o : tensor<2x5x3x6xf32>
}

// CHECK-LABEL: func.func @output_transposed_back
// CHECK-NEXT:    %[[A:.*]] = rlx.attention %x, %y, %y {mask_kind = "causal", layout = "bshd"} : (tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>, tensor<1x6x2x4xf32>) -> tensor<1x6x2x4xf32>
// CHECK-NEXT:    %a = rlx.transpose %[[A]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32>
// CHECK-NEXT:    func.return %a
func.func @output_transposed_back(%x: tensor<1x6x2x4xf32>, %y: tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32> {
  %t = rlx.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32>
  %u = rlx.transpose %y {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32>
  %a = rlx.attention %t, %u, %u {mask_kind = "causal"} : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  func.return %a : tensor<1x2x6x4xf32>
}

// One shared transpose: one copy removed and one added, no gain; not done either when
// the transpose is also returned (it stays) and the output is not transposed.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:    %t = rlx.transpose %x
// CHECK-NEXT:    %a = rlx.attention %t, %t, %t {mask_kind = "causal"} : (
func.func @shared(%x: tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32> {
  %t = rlx.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32>
  %a = rlx.attention %t, %t, %t {mask_kind = "causal"} : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  func.return %a : tensor<1x2x6x4xf32>
}

// CHECK-LABEL: func.func @no_gain
// CHECK-NEXT:    %t = rlx.transpose %x
// CHECK-NEXT:    %a = rlx.attention %t, %t, %t : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
func.func @no_gain(%x: tensor<1x6x2x4xf32>) -> (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) {
  %t = rlx.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x4xf32>) -> tensor<1x2x6x4xf32>
  %a = rlx.attention %t, %t, %t : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
  func.return %a, %t : tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>
}

// v is not a transpose; q's permutation is not [0, 2, 1, 3]: both untouched.
// CHECK-LABEL: func.func @not_heads
// CHECK-NEXT:    %t = rlx.transpose
// CHECK-NEXT:    %a = rlx.attention %t, %t, %v : (
// CHECK-NEXT:    %o = rlx.transpose %a
// CHECK-NEXT:    %u = rlx.transpose %y {permutation = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT:    %b = rlx.attention %u, %t, %t : (
// CHECK-NOT:     layout
func.func @not_heads(%x: tensor<1x6x6x4xf32>, %v: tensor<1x6x6x4xf32>, %y: tensor<1x6x4x4xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x4x4xf32>) {
  %t = rlx.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %a = rlx.attention %t, %t, %v : (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %o = rlx.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %u = rlx.transpose %y {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %b = rlx.attention %u, %t, %t : (tensor<1x6x4x4xf32>, tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) -> tensor<1x6x4x4xf32>
  func.return %o, %b : tensor<1x6x6x4xf32>, tensor<1x6x4x4xf32>
}
