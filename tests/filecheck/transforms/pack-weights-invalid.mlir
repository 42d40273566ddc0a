// RUN: not rlx-opt %s -p 'pack-weights{width=-1}' 2>&1 | filecheck %s --check-prefix=WIDTH
// RUN: not rlx-opt %s --pack-weights 2>&1 | filecheck %s --check-prefix=OTHER

// A @prepare that belongs to another function cannot be extended.
func.func @prepare() -> tensor<4xf32> attributes {rlx.prepare_for = "other"} {
  %w = rlx.param "u" : tensor<4xf32>
  func.return %w : tensor<4xf32>
}
func.func @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w = rlx.param "w" : tensor<64x64xf32>
  %y = rlx.matmul %x, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}

// WIDTH: pack-weights: width must be >= 0, got -1
// OTHER: pack-weights: the module has a @prepare of another function
