// The canonicalization patterns of rlx.to_nchwc / rlx.from_nchwc: a conversion pair of the
// same block cancels; a change of block (8 -> 4) stays.
// RUN: rlx-opt %s --canonicalize | filecheck %s

// CHECK-LABEL: func.func @pairs
// CHECK-NEXT:    %[[C:.*]] = rlx.from_nchwc %y : (tensor<1x2x5x5x8xf32>) -> tensor<1x16x5x5xf32>
// CHECK-NEXT:    %[[E:.*]] = rlx.to_nchwc %[[C]] {block = 4 : i64} : (tensor<1x16x5x5xf32>) -> tensor<1x4x5x5x4xf32>
// CHECK-NEXT:    func.return %x, %y, %[[E]] : tensor<1x16x5x5xf32>, tensor<1x2x5x5x8xf32>, tensor<1x4x5x5x4xf32>
func.func @pairs(%x: tensor<1x16x5x5xf32>, %y: tensor<1x2x5x5x8xf32>) -> (tensor<1x16x5x5xf32>, tensor<1x2x5x5x8xf32>, tensor<1x4x5x5x4xf32>) {
  %a = rlx.to_nchwc %x {block = 8 : i64} : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
  %b = rlx.from_nchwc %a : (tensor<1x2x5x5x8xf32>) -> tensor<1x16x5x5xf32>
  %c = rlx.from_nchwc %y : (tensor<1x2x5x5x8xf32>) -> tensor<1x16x5x5xf32>
  %d = rlx.to_nchwc %c {block = 8 : i64} : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
  %e = rlx.to_nchwc %c {block = 4 : i64} : (tensor<1x16x5x5xf32>) -> tensor<1x4x5x5x4xf32>
  func.return %b, %d, %e : tensor<1x16x5x5xf32>, tensor<1x2x5x5x8xf32>, tensor<1x4x5x5x4xf32>
}
