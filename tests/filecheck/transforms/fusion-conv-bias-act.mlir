// RUN: rlx-opt %s -p fusion --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'fusion{conv-bias-act=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'fusion{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

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
