// RUN: not rlx-opt %s --fold-batch-norm 2>&1 | filecheck %s
// RUN: not rlx-opt %s -p 'fold-batch-norm{fold-constants=maybe}' 2>&1 | filecheck %s --check-prefix=OPT

// Malformed IR is reported at the op, before the pass touches it (no traceback).
// CHECK: fold-batch-norm-invalid.mlir:10:3: error: {{.*}}rlx.conv2d{{.*}} result #0 has type
// CHECK-NOT: Traceback
// OPT: error: invalid options for pass {{.*}}fold-batch-norm{{.*}}: {{.*}}expected bool
func.func @bad(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x2x2xf32>) -> tensor<1x4x4x4xf32> {
  %k = rlx.constant dense<2.0> : tensor<4x1x1xf32>
  %c = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<4x2x2x2xf32>) -> tensor<1x4x5x5xf32>
  %y = rlx.mul %c, %k : (tensor<1x4x5x5xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
