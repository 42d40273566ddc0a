// RUN: not rlx-opt %s --hoist-param-invariant 2>&1 | filecheck %s

func.func @prepare() -> tensor<4xf32> {
  %w = rlx.param "w" : tensor<4xf32>
  func.return %w : tensor<4xf32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = rlx.param "w" : tensor<4xf32>
  %e = rlx.exp %w : (tensor<4xf32>) -> tensor<4xf32>
  %a = rlx.add %x, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// CHECK: error: hoist-param-invariant: the module already has a function @prepare
