// RUN: rlx-opt %s --legalize=add --split-input-file --verify-diagnostics
// RUN: not rlx-opt %s --legalize=add,matmull 2>&1 | filecheck %s --check-prefix=BADKIND
// RUN: not rlx-opt %s '--legalize=add matmul' 2>&1 | filecheck %s --check-prefix=SPACE

// No decomposition for conv2d / cumsum: the error names each kind with its count and
// points at the first offending op.
func.func @no_rewrite(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{legalization failed: 2 op kinds not supported by the backend: rlx.conv2d (2 ops), rlx.cumsum (1 op); hint: claim the kind in supported-ops}}
  %a = rlx.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  %b = rlx.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  %c = rlx.cumsum %a : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %d = rlx.add %c, %b : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %d : tensor<1x1x2x2xf32>
}

// -----

// A decomposition whose primitive ops are not claimed either: the error points at the
// op that was decomposed.
func.func @partial(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{legalization failed: 4 op kinds not supported by the backend: rlx.div (1 op), rlx.exp (1 op), rlx.reduce (2 ops), rlx.sub (1 op)}}
  %s = rlx.softmax %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// BADKIND: unknown op kind in supported-ops 'matmull' (did you mean 'matmul'?)
// SPACE: unknown op kind in supported-ops 'add matmul'
