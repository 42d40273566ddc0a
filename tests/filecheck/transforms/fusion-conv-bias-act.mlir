// RUN: rlx-opt %s -p fusion --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'fusion{conv-bias-act=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'fusion{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: rlx-opt %s -p 'fusion{report=true elementwise-region=false}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=CLIP

// REPORT: conv_bias_act @ {{.*}}fusion-conv-bias-act.mlir:{{[0-9]+}}:3 (rlx.conv2d) — conv2d has several users
// REPORT: conv_bias_act @ {{.*}}fusion-conv-bias-act.mlir:{{[0-9]+}}:3 (rlx.tanh) — activation not fusable into conv2d (rlx.tanh)

// The `conv_bias_act` pattern of `fusion`: a per-channel bias add and an activation become
// attributes of rlx.conv2d (the lowering applies them per output block).

// CHECK-LABEL: func.func @bias_relu
// CHECK-NEXT:    %[[B:.*]] = rlx.reshape %b : (tensor<16x1x1xf32>) -> tensor<16xf32>
// CHECK-NEXT:    %[[C:.*]] = rlx.conv2d %x, %w, %[[B]] {activation = "relu"}
// CHECK-NEXT:    func.return %[[C]]
// OFF-LABEL:   func.func @bias_relu
// OFF:           rlx.add
// OFF:           rlx.relu
func.func @bias_relu(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32> {
  %c = rlx.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a = rlx.add %b, %c : (tensor<16x1x1xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %r = rlx.relu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %r : tensor<1x16x8x8xf32>
}

// -----

// A convolution that has its bias absorbs the activation alone; [1, F, 1, 1] biases too.
// CHECK-LABEL: func.func @activations
// CHECK-NEXT:    rlx.conv2d %x, %w, %b {activation = "hard_swish"}
// CHECK:         rlx.reshape %b4 : (tensor<1x16x1x1xf32>) -> tensor<16xf32>
// CHECK-NEXT:    rlx.conv2d %x, %w, %{{.*}} {activation = "silu"}
// CHECK-NOT:     rlx.add
func.func @activations(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>, %b4: tensor<1x16x1x1xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %c = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %h = rlx.hard_swish %c : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %d = rlx.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a = rlx.add %d, %b4 : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %s = rlx.silu %a : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %h, %s : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// Negative: two users of the convolution, a bias that is not per channel, an activation
// the op cannot apply (tanh), and integer convolutions are left alone.
// CHECK-LABEL: func.func @near_misses
// CHECK:         rlx.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
// CHECK:         rlx.add
// CHECK:         rlx.add
// CHECK:         rlx.tanh
// CHECK:         rlx.relu
// CHECK-NOT:     activation =
func.func @near_misses(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %full: tensor<1x16x8x8xf32>, %bw: tensor<16xf32>, %xi: tensor<1x8x10x10xi32>, %wi: tensor<16x8x3x3xi32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xi32>) {
  %c = rlx.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a = rlx.add %c, %full : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %a2 = rlx.add %c, %c : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %d = rlx.conv2d %x, %w, %bw : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %t = rlx.tanh %d : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %ci = rlx.conv2d %xi, %wi : (tensor<1x8x10x10xi32>, tensor<16x8x3x3xi32>) -> tensor<1x16x8x8xi32>
  %ri = rlx.relu %ci : (tensor<1x16x8x8xi32>) -> tensor<1x16x8x8xi32>
  func.return %a, %a2, %t, %ri : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xi32>
}

// -----

// A per-channel bias, then a residual of the result's type, then relu: one
// rlx.fused_conv2d_residual (operands x, w, residual, bias).
// CHECK-LABEL: func.func @residual_relu
// CHECK-NEXT:    %[[B:.*]] = rlx.reshape %b : (tensor<16x1x1xf32>) -> tensor<16xf32>
// CHECK-NEXT:    %[[C:.*]] = rlx.fused_conv2d_residual %x, %w, %r, %[[B]] {activation = "relu"}
// CHECK-NEXT:    func.return %[[C]]
// OFF-LABEL:   func.func @residual_relu
// OFF-NEXT:      rlx.conv2d %x, %w :
// OFF-NOT:       fused_conv2d_residual
func.func @residual_relu(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16x1x1xf32>, %r: tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %c = rlx.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a = rlx.add %c, %b : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %s = rlx.add %r, %a : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = rlx.relu %s : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}

// -----

// Clip by scalar constants (ONNX Clip: max then min) and relu then min are the `clip`
// activation (relu6 = clip [0, 6]); a residual without an activation fuses too.
// CHECK-LABEL: func.func @clips
// CHECK:         rlx.conv2d %x, %w, %b {activation = "clip", clip = array<f64: 0.000000e+00, 6.000000e+00>}
// CHECK:         rlx.conv2d %x, %w, %b {activation = "clip", clip = array<f64: -1.000000e+00, 2.500000e-01>}
// CHECK:         rlx.fused_conv2d_residual %x, %w, %r, %b : (
// CHECK-NOT:     rlx.max
// CHECK-NOT:     rlx.min
// CHECK-NOT:     rlx.add
func.func @clips(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>, %r: tensor<1x16x8x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %zero = rlx.constant dense<0.0> : tensor<f32>
  %six = rlx.constant dense<6.0> : tensor<f32>
  %lo = rlx.constant dense<-1.0> : tensor<1x1x1x1xf32>
  %hi = rlx.constant dense<0.25> : tensor<f32>
  %c = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %m = rlx.relu %c : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = rlx.min %m, %six : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %d = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %n = rlx.max %lo, %d : (tensor<1x1x1x1xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %z = rlx.min %n, %hi : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %e = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %s = rlx.add %e, %r : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %y, %z, %s : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// Negative: a clip bound that is not a constant, an add that broadcasts (neither a bias
// nor a residual), min before max, and a clip whose min exceeds its max keep their ops.
// REPORT: conv_bias_act @ {{.*}}fusion-conv-bias-act.mlir:{{[0-9]+}}:3 (rlx.conv2d) — add is neither a per-channel bias nor a residual
// (Without elementwise regions, which absorb the max/min chains, the clips are reported.)
// CLIP: conv_bias_act @ {{.*}}:{{[0-9]+}}:3 (rlx.max) — clip not fusable into conv2d (rlx.max)
// CLIP: conv_bias_act @ {{.*}}:{{[0-9]+}}:3 (rlx.conv2d) — add is neither a per-channel bias nor a residual
// CLIP: conv_bias_act @ {{.*}}:{{[0-9]+}}:3 (rlx.min) — clip not fusable into conv2d (rlx.min)
// CLIP: conv_bias_act @ {{.*}}:{{[0-9]+}}:3 (rlx.max) — clip not fusable into conv2d (rlx.max)
// CHECK-LABEL: func.func @clip_misses
// CHECK-NOT:     activation =
// CHECK-NOT:     fused_conv2d_residual
func.func @clip_misses(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>, %t: tensor<f32>, %row: tensor<1x16x1x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %six = rlx.constant dense<6.0> : tensor<f32>
  %big = rlx.constant dense<9.0> : tensor<f32>
  %c = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %m = rlx.max %c, %t : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %y = rlx.min %m, %six : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %d = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %a = rlx.add %d, %row : (tensor<1x16x8x8xf32>, tensor<1x16x1x8xf32>) -> tensor<1x16x8x8xf32>
  %e = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %n = rlx.min %e, %six : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %z = rlx.max %n, %big : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %f = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %p = rlx.max %f, %big : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  %q = rlx.min %p, %six : (tensor<1x16x8x8xf32>, tensor<f32>) -> tensor<1x16x8x8xf32>
  func.return %y, %a, %z, %q : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// silu as ONNX exports it, x * sigmoid(x), is the `silu` activation; a mul by the
// sigmoid of another value is not.
// CHECK-LABEL: func.func @swish
// CHECK-NEXT:    %[[Y:.*]] = rlx.conv2d %x, %w, %b {activation = "silu"}
// CHECK-NEXT:    %[[D:.*]] = rlx.conv2d %x, %w, %b :
// CHECK-NOT:     activation =
// CHECK:         func.return %[[Y]]
func.func @swish(%x: tensor<1x8x10x10xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>, %o: tensor<1x16x8x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) {
  %c = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %s = rlx.sigmoid %c : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = rlx.mul %s, %c : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %d = rlx.conv2d %x, %w, %b : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %t = rlx.sigmoid %o : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %z = rlx.mul %d, %t : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %y, %z : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
}
