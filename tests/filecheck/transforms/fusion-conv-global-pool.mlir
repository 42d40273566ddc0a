// RUN: rlx-opt %s -p fusion --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'fusion{conv-global-pool=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'fusion{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: rlx-opt %s -p 'fusion{report=true conv-global-pool=false}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT-OFF

// The `conv_global_pool` pattern of `fusion`: a mean over H, W (ONNX GlobalAveragePool)
// whose operand is a convolution it alone reads becomes the convolution with
// reduce = "mean" (result [N, F, 1, 1]), after conv_bias_act has fused the epilogue.

// REPORT: conv_global_pool @ {{.*}}fusion-conv-global-pool.mlir:{{[0-9]+}}:3 (rlx.reduce) — convolution under a global mean has several users
// REPORT-NOT: conv_global_pool
// REPORT-OFF: conv_global_pool @ {{.*}}fusion-conv-global-pool.mlir:{{[0-9]+}}:3 (rlx.reduce) — global mean left unfused
// REPORT-OFF: conv_global_pool @ {{.*}}fusion-conv-global-pool.mlir:{{[0-9]+}}:3 (rlx.reduce) — global mean left unfused

// CHECK-LABEL: func.func @bias_relu_pool
// CHECK-NEXT:    %[[B:.*]] = rlx.reshape %b : (tensor<16x1x1xf32>) -> tensor<16xf32>
// CHECK-NEXT:    %[[C:.*]] = rlx.conv2d %x, %w, %[[B]] {activation = "relu", reduce = "mean"} : (tensor<2x8x9x7xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x1x1xf32>
// CHECK-NEXT:    func.return %[[C]]
// OFF-LABEL:   func.func @bias_relu_pool
// OFF:           rlx.conv2d %x, %w, %{{.*}} {activation = "relu"} :
// OFF-NEXT:      rlx.reduce
func.func @bias_relu_pool(%x: tensor<2x8x9x7xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x1x1xf32>) -> tensor<2x16x1x1xf32> {
  %c = rlx.conv2d %x, %w : (tensor<2x8x9x7xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x7x5xf32>
  %a = rlx.add %c, %b : (tensor<2x16x7x5xf32>, tensor<16x1x1xf32>) -> tensor<2x16x7x5xf32>
  %r = rlx.relu %a : (tensor<2x16x7x5xf32>) -> tensor<2x16x7x5xf32>
  %m = rlx.reduce %r {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x16x7x5xf32>) -> tensor<2x16x1x1xf32>
  func.return %m : tensor<2x16x1x1xf32>
}

// -----

// A residual convolution with a clip, negative axes, keepdims = false: the pooled
// convolution and a reshape to [N, F].
// CHECK-LABEL: func.func @residual_flat
// CHECK-NEXT:    %[[C:.*]] = rlx.fused_conv2d_residual %x, %w, %r {activation = "clip", clip = array<f64: {{.*}}>, reduce = "mean"} : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[F:.*]] = rlx.reshape %[[C]] : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    func.return %[[F]]
func.func @residual_flat(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x1x1xf32>, %r: tensor<1x4x5x5xf32>) -> tensor<1x4xf32> {
  %c = rlx.fused_conv2d_residual %x, %w, %r {activation = "clip", clip = array<f64: 0.0, 6.0>} : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %m = rlx.reduce %c {kind = "mean", axes = array<i64: -1, -2>, keepdims = false} : (tensor<1x4x5x5xf32>) -> tensor<1x4xf32>
  func.return %m : tensor<1x4xf32>
}

// -----

// Not fused: a convolution with two users (squeeze-excite: the mean and the gate's mul
// read it), a mean over other axes, a max, an integer convolution.
// CHECK-LABEL: func.func @negatives
// CHECK-NOT:     reduce = "mean"
// CHECK-COUNT-4: rlx.reduce
func.func @negatives(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x1x1xf32>, %xi: tensor<1x4x5x5xi32>, %wi: tensor<4x4x1x1xi32>)
    -> (tensor<1x4x1x1xf32>, tensor<1x4x5x5xf32>, tensor<1x1x5x1xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi32>) {
  %c = rlx.conv2d %x, %w : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %m = rlx.reduce %c {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x5x5xf32>) -> tensor<1x4x1x1xf32>
  %g = rlx.mul %c, %m : (tensor<1x4x5x5xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %d = rlx.conv2d %x, %w : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %o = rlx.reduce %d {kind = "mean", axes = array<i64: 1, 3>, keepdims = true} : (tensor<1x4x5x5xf32>) -> tensor<1x1x5x1xf32>
  %e = rlx.conv2d %x, %w : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %p = rlx.reduce %e {kind = "max", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x5x5xf32>) -> tensor<1x4x1x1xf32>
  %i = rlx.conv2d %xi, %wi : (tensor<1x4x5x5xi32>, tensor<4x4x1x1xi32>) -> tensor<1x4x5x5xi32>
  %q = rlx.reduce %i {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x4x5x5xi32>) -> tensor<1x4x1x1xi32>
  func.return %m, %g, %o, %p, %q : tensor<1x4x1x1xf32>, tensor<1x4x5x5xf32>, tensor<1x1x5x1xf32>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi32>
}
