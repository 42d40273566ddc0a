// The blocked-layout pass (docs/layout.md): regions with >= min-convs blockable convs run in
// NCHWc; conversions only at the region edges; arguments and results stay NCHW.
// RUN: rlx-opt %s -p 'blocked-layout{block=16}' | filecheck %s
// RUN: rlx-opt %s -p 'blocked-layout{block=16 narrow-convs=false}' | filecheck %s --check-prefix=NONARROW
// RUN: rlx-opt %s -p 'blocked-layout{block=8 min-convs=3 narrow-convs=false}' | filecheck %s --check-prefix=MIN3
// RUN: rlx-opt %s --blocked-layout=block=8 --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: rlx-opt %s -p 'blocked-layout{block=16},canonicalize' | rlx-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: rlx-opt %s -p 'blocked-layout{fold-weights=false}' | filecheck %s --check-prefix=NOFOLD
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' --check-equivalence > /dev/null

// DUMP: IR Dump After blocked-layout
// DUMP: rlx.conv2d %{{.*}} layout = "nchwc"} : (tensor<1x3x8x8x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<16xf32>) -> tensor<1x2x8x8x8xf32>
// ROUNDTRIP-LABEL: func.func @resnet
// ROUNDTRIP: rlx.fused_conv2d_residual {{.*}}layout = "nchwc"

// CHECK-LABEL: func.func @resnet
// CHECK-NEXT:    %[[X1:.*]] = rlx.reshape %x : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8x1xf32>
// CHECK-NEXT:    %[[R0:.*]] = rlx.reshape %w0 : (tensor<16x3x3x3xf32>) -> tensor<1x16x3x1x3x3xf32>
// CHECK-NEXT:    %[[W0:.*]] = rlx.transpose %[[R0]] {permutation = array<i64: 0, 2, 4, 5, 3, 1>} : (tensor<1x16x3x1x3x3xf32>) -> tensor<1x3x3x3x1x16xf32>
// CHECK-NEXT:    %[[X:.*]] = rlx.conv2d %[[X1]], %[[W0]], %b0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<1x3x8x8x1xf32>, tensor<1x3x3x3x1x16xf32>, tensor<16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %[[P:.*]] = rlx.pool2d %[[X]] {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<1x1x8x8x16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %[[R1:.*]] = rlx.reshape %w1 : (tensor<16x16x3x3xf32>) -> tensor<1x16x1x16x3x3xf32>
// CHECK-NEXT:    %[[W1:.*]] = rlx.transpose %[[R1]] {permutation = array<i64: 0, 2, 4, 5, 3, 1>} : (tensor<1x16x1x16x3x3xf32>) -> tensor<1x1x3x3x16x16xf32>
// CHECK-NEXT:    %[[C1:.*]] = rlx.conv2d %[[P]], %[[W1]] {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"}
// CHECK-NEXT:    %[[R2:.*]] = rlx.reshape %w2
// CHECK-NEXT:    %[[W2:.*]] = rlx.transpose %[[R2]]
// CHECK-NEXT:    %[[C2:.*]] = rlx.fused_conv2d_residual %[[C1]], %[[W2]], %[[P]], %b2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<1x1x4x4x16xf32>, tensor<1x1x3x3x16x16xf32>, tensor<1x1x4x4x16xf32>, tensor<16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.reduce %[[C2]] {kind = "mean", axes = array<i64: 2, 3>} : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x16xf32>
// CHECK-NEXT:    %m = rlx.reshape %[[M]] : (tensor<1x1x16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT:    func.return %m
// NONARROW-LABEL: func.func @resnet
// NONARROW-NEXT:    %c0 = rlx.conv2d %x, %w0, %b0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
// NONARROW-NEXT:    %[[X:.*]] = rlx.to_nchwc %c0 {block = 16 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x1x8x8x16xf32>
// NONARROW-NEXT:    %[[P:.*]] = rlx.pool2d %[[X]] {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<1x1x8x8x16xf32>) -> tensor<1x1x4x4x16xf32>
// MIN3-LABEL: func.func @resnet
// MIN3-NOT:     nchwc
// MIN3:         func.return
// ResNet basic block: the stem (3 channels) reads x blocked by 1 (a reshape) and writes
// the blocked result: one region, no to_nchwc (narrow-convs=false: the stem stays NCHW
// and its result is converted).
func.func @resnet(%x: tensor<1x3x8x8xf32>, %w0: tensor<16x3x3x3xf32>, %b0: tensor<16xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x3x3xf32>, %b2: tensor<16xf32>) -> tensor<1x16xf32> {
  %c0 = rlx.conv2d %x, %w0, %b0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %p = rlx.pool2d %c0 {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %c1 = rlx.conv2d %p, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %c2 = rlx.fused_conv2d_residual %c1, %w2, %p, %b2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>, tensor<1x16x4x4xf32>, tensor<16xf32>) -> tensor<1x16x4x4xf32>
  %m = rlx.reduce %c2 {kind = "mean", axes = array<i64: 2, 3>} : (tensor<1x16x4x4xf32>) -> tensor<1x16xf32>
  func.return %m : tensor<1x16xf32>
}

// CHECK-LABEL: func.func @mobilenet
// CHECK-NEXT:    %[[X:.*]] = rlx.to_nchwc %x {block = 8 : i64} : (tensor<2x16x6x6xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK:         %[[A:.*]] = rlx.conv2d %[[X]], %{{.*}} {layout = "nchwc"} : (tensor<2x2x6x6x8xf32>, tensor<2x2x1x1x8x8xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK-NEXT:    %[[S:.*]] = rlx.reshape %s : (tensor<1x16x1x1xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %[[B:.*]] = rlx.add %[[A]], %[[S]] : (tensor<2x2x6x6x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK-NEXT:    %[[C:.*]] = rlx.relu %[[B]] : (tensor<2x2x6x6x8xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK-NEXT:    %[[RD:.*]] = rlx.reshape %wd : (tensor<16x1x3x3xf32>) -> tensor<2x8x1x1x3x3xf32>
// CHECK-NEXT:    %[[WD:.*]] = rlx.transpose %[[RD]] {permutation = array<i64: 0, 2, 4, 5, 3, 1>} : (tensor<2x8x1x1x3x3xf32>) -> tensor<2x1x3x3x1x8xf32>
// CHECK-NEXT:    %[[D:.*]] = rlx.conv2d %[[C]], %[[WD]] {{{.*}}groups = 16 : i64, activation = "clip", {{.*}}layout = "nchwc"} : (tensor<2x2x6x6x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK-NEXT:    %[[G:.*]] = rlx.reduce %[[D]] {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x2x6x6x8xf32>) -> tensor<2x2x1x1x8xf32>
// CHECK-NEXT:    %[[E:.*]] = rlx.mul %[[D]], %[[G]] : (tensor<2x2x6x6x8xf32>, tensor<2x2x1x1x8xf32>) -> tensor<2x2x6x6x8xf32>
// CHECK:         %[[F:.*]] = rlx.conv2d %[[E]], %{{.*}} {layout = "nchwc"} : (tensor<2x2x6x6x8xf32>, tensor<1x2x1x1x8x8xf32>) -> tensor<2x1x6x6x8xf32>
// CHECK-NEXT:    %f = rlx.from_nchwc %[[F]] : (tensor<2x1x6x6x8xf32>) -> tensor<2x8x6x6xf32>
// CHECK-NEXT:    func.return %f
// CHECK-NOT:     rlx.from_nchwc
// MIN3-LABEL: func.func @mobilenet
// MIN3:         rlx.to_nchwc %x {block = 8 : i64}
// MobileNet: 1x1, depthwise 3x3 (weight [C/B, 1, KH, KW, 1, B]), 1x1; a per-channel
// bias add and relu6 between them; squeeze-excitation (global mean kept, mul).
func.func @mobilenet(%x: tensor<2x16x6x6xf32>, %w1: tensor<16x16x1x1xf32>, %wd: tensor<16x1x3x3xf32>, %w2: tensor<8x16x1x1xf32>, %s: tensor<1x16x1x1xf32>) -> tensor<2x8x6x6xf32> {
  %a = rlx.conv2d %x, %w1 : (tensor<2x16x6x6xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x6x6xf32>
  %b = rlx.add %a, %s : (tensor<2x16x6x6xf32>, tensor<1x16x1x1xf32>) -> tensor<2x16x6x6xf32>
  %c = rlx.relu %b : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %d = rlx.conv2d %c, %wd {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, activation = "clip", clip = array<f64: 0.0, 6.0>} : (tensor<2x16x6x6xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x6x6xf32>
  %g = rlx.reduce %d {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x16x6x6xf32>) -> tensor<2x16x1x1xf32>
  %e = rlx.mul %d, %g : (tensor<2x16x6x6xf32>, tensor<2x16x1x1xf32>) -> tensor<2x16x6x6xf32>
  %f = rlx.conv2d %e, %w2 : (tensor<2x16x6x6xf32>, tensor<8x16x1x1xf32>) -> tensor<2x8x6x6xf32>
  func.return %f : tensor<2x8x6x6xf32>
}

// CHECK-LABEL: func.func @concat_pad
// CHECK-NEXT:    %[[X:.*]] = rlx.to_nchwc %x {block = 8 : i64} : (tensor<1x8x4x4xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK:         %[[A:.*]] = rlx.conv2d %[[X]], %{{.*}} {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"}
// CHECK-NEXT:    %[[C:.*]] = rlx.concat %[[X]], %[[A]] {axis = 1 : i64} : (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %z = rlx.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[F:.*]] = rlx.broadcast_to %z : (tensor<f32>) -> tensor<1x2x1x4x8xf32>
// CHECK-NEXT:    %[[P:.*]] = rlx.concat %[[F]], %[[C]], %[[F]] {axis = 2 : i64} : (tensor<1x2x1x4x8xf32>, tensor<1x2x4x4x8xf32>, tensor<1x2x1x4x8xf32>) -> tensor<1x2x6x4x8xf32>
// CHECK:         %[[Y:.*]] = rlx.conv2d %[[P]], %{{.*}} {padding = array<i64: 0, 1, 0, 1>, layout = "nchwc"} : (tensor<1x2x6x4x8xf32>, tensor<1x2x3x3x8x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %y = rlx.from_nchwc %[[Y]]
// CHECK-NEXT:    func.return %y
// DenseNet-like channel concat and an explicit zero pad (concat of fills on H).
func.func @concat_pad(%x: tensor<1x8x4x4xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x16x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %a = rlx.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %c = rlx.concat %x, %a {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  %z = rlx.constant dense<0.0> : tensor<f32>
  %f = rlx.broadcast_to %z : (tensor<f32>) -> tensor<1x16x1x4xf32>
  %p = rlx.concat %f, %c, %f {axis = 2 : i64} : (tensor<1x16x1x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x1x4xf32>) -> tensor<1x16x6x4xf32>
  %y = rlx.conv2d %p, %w2 {padding = array<i64: 0, 1, 0, 1>} : (tensor<1x16x6x4xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @flatten
// CHECK:         rlx.conv2d
// CHECK-NEXT:    %[[B:.*]] = rlx.conv2d %{{.*}}, %{{.*}} {layout = "nchwc"} : (tensor<1x1x2x2x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x2x2x8xf32>
// CHECK-NEXT:    %b = rlx.from_nchwc %[[B]] : (tensor<1x1x2x2x8xf32>) -> tensor<1x8x2x2xf32>
// CHECK-NEXT:    %r = rlx.reshape %b : (tensor<1x8x2x2xf32>) -> tensor<1x32xf32>
// A conv feeding a reshape (a classifier's flatten) keeps an rlx.from_nchwc before it.
func.func @flatten(%x: tensor<1x8x2x2xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x32xf32> {
  %a = rlx.conv2d %x, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %b = rlx.conv2d %a, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %r = rlx.reshape %b : (tensor<1x8x2x2xf32>) -> tensor<1x32xf32>
  func.return %r : tensor<1x32xf32>
}

// CHECK-LABEL: func.func @constant_weights
// CHECK-NEXT:    %[[W:.*]] = rlx.constant dense<5.000000e-01> : tensor<1x1x1x1x8x8xf32>
// CHECK-NOT:     rlx.transpose
// CHECK:         rlx.conv2d %{{.*}}, %[[W]] {layout = "nchwc"}
// CHECK-NEXT:    rlx.conv2d %{{.*}}, %[[W]] {layout = "nchwc"}
// NOFOLD-LABEL: func.func @constant_weights
// NOFOLD:         rlx.transpose
// Constant weights: the reorder is folded into a blocked constant.
func.func @constant_weights(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32> {
  %w = rlx.constant dense<0.5> : tensor<8x8x1x1xf32>
  %a = rlx.conv2d %x, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %b = rlx.conv2d %a, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  func.return %b : tensor<1x8x2x2xf32>
}

// Nearest 2x upsampling (an imported Resize: gathers on H and W), a crop (slice of H, W) and
// a fused elementwise region with a per-channel operand.
// CHECK-LABEL: func.func @resize_crop
// CHECK:         %[[A:.*]] = rlx.conv2d %{{.*}}, %[[W:.*]] {layout = "nchwc"} : (tensor<1x1x3x3x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x3x3x8xf32>
// CHECK:         %[[H:.*]] = rlx.gather %[[A]], %i {axis = 2 : i64} : (tensor<1x1x3x3x8xf32>, tensor<6xi64>) -> tensor<1x1x6x3x8xf32>
// CHECK-NEXT:    %[[V:.*]] = rlx.gather %[[H]], %i {axis = 3 : i64} : (tensor<1x1x6x3x8xf32>, tensor<6xi64>) -> tensor<1x1x6x6x8xf32>
// CHECK-NEXT:    %[[C:.*]] = rlx.slice %[[V]] {starts = array<i64: 0, 0, 1, 1, 0>, limits = array<i64: 1, 1, 5, 5, 8>, strides = array<i64: 1, 1, 1, 1, 1>} : (tensor<1x1x6x6x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = rlx.reshape %s : (tensor<8x1x1xf32>) -> tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.elementwise_region %[[C]], %[[S]] : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32> {
// CHECK:         rlx.conv2d %[[R]], %[[W]] {layout = "nchwc"}
// CHECK-NEXT:    rlx.from_nchwc
func.func @resize_crop(%x: tensor<1x8x3x3xf32>, %w: tensor<8x8x1x1xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %a = rlx.conv2d %x, %w : (tensor<1x8x3x3xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x3x3xf32>
  %i = rlx.constant dense<[0, 0, 1, 1, 2, 2]> : tensor<6xi64>
  %h = rlx.gather %a, %i {axis = 2 : i64} : (tensor<1x8x3x3xf32>, tensor<6xi64>) -> tensor<1x8x6x3xf32>
  %v = rlx.gather %h, %i {axis = -1 : i64} : (tensor<1x8x6x3xf32>, tensor<6xi64>) -> tensor<1x8x6x6xf32>
  %c = rlx.slice %v {starts = array<i64: 0, 0, 1, 1>, limits = array<i64: 1, 8, 5, 5>} : (tensor<1x8x6x6xf32>) -> tensor<1x8x4x4xf32>
  %r = rlx.elementwise_region %c, %s : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    %t = math.tanh %m : f32
    rlx.yield %t : f32
  }
  %y = rlx.conv2d %r, %w : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @negative
// CHECK-NOT:     nchwc
// CHECK:         func.return %b, %e
// Not blocked: channels not a multiple of 8; a grouped (not depthwise) conv; a single conv.
func.func @negative(%x: tensor<1x12x4x4xf32>, %w: tensor<12x12x1x1xf32>, %y: tensor<1x16x4x4xf32>, %wg: tensor<16x8x1x1xf32>, %w1: tensor<16x16x1x1xf32>) -> (tensor<1x12x4x4xf32>, tensor<1x16x4x4xf32>) {
  %a = rlx.conv2d %x, %w : (tensor<1x12x4x4xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x4x4xf32>
  %b = rlx.conv2d %a, %w : (tensor<1x12x4x4xf32>, tensor<12x12x1x1xf32>) -> tensor<1x12x4x4xf32>
  %c = rlx.conv2d %y, %wg {groups = 2 : i64} : (tensor<1x16x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  %d = rlx.relu %c : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e = rlx.conv2d %d, %w1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %b, %e : tensor<1x12x4x4xf32>, tensor<1x16x4x4xf32>
}

// ConvNeXt-like: each depthwise conv feeds channels-last ops (transposes) and the
// residual adds read their results back: 7 full-size conversions for 2 convs, not blocked.
// CHECK-LABEL: func.func @convnext
// CHECK-NOT:     nchwc
// CHECK:         func.return
func.func @convnext(%x: tensor<1x8x4x4xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %d1 = rlx.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %t1 = rlx.transpose %d1 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %b1 = rlx.transpose %t1 {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %r1 = rlx.add %b1, %x : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %d2 = rlx.conv2d %r1, %w {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %t2 = rlx.transpose %d2 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %b2 = rlx.transpose %t2 {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %r2 = rlx.add %b2, %r1 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %d3 = rlx.conv2d %r2, %w {padding = array<i64: 1, 1, 1, 1>, groups = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %t3 = rlx.transpose %d3 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %b3 = rlx.transpose %t3 {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %r3 = rlx.add %b3, %r2 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %r3 : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @blocks
// CHECK-NEXT:    rlx.to_nchwc %x {block = 16 : i64} : (tensor<1x32x2x2xf32>) -> tensor<1x2x2x2x16xf32>
// CHECK:         rlx.to_nchwc %v {block = 8 : i64} : (tensor<1x24x2x2xf32>) -> tensor<1x3x2x2x8xf32>
// MIN3-LABEL: func.func @blocks
// MIN3-NOT:     nchwc
// Blocks: 24 channels take B = 8 whatever the block option; 32 take 16 with block=16.
func.func @blocks(%x: tensor<1x32x2x2xf32>, %w: tensor<32x32x1x1xf32>, %v: tensor<1x24x2x2xf32>, %u: tensor<24x24x1x1xf32>) -> (tensor<1x32x2x2xf32>, tensor<1x24x2x2xf32>) {
  %a = rlx.conv2d %x, %w : (tensor<1x32x2x2xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x2x2xf32>
  %b = rlx.conv2d %a, %w : (tensor<1x32x2x2xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x2x2xf32>
  %c = rlx.conv2d %v, %u : (tensor<1x24x2x2xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x2x2xf32>
  %d = rlx.conv2d %c, %u : (tensor<1x24x2x2xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x2x2xf32>
  func.return %b, %d : tensor<1x32x2x2xf32>, tensor<1x24x2x2xf32>
}

// CHECK-LABEL: func.func @pooled
// CHECK:         %[[C:.*]] = rlx.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<2x1x4x4x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<2x1x4x4x16xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.reduce %[[C]] {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x1x4x4x16xf32>) -> tensor<2x1x1x1x16xf32>
// CHECK-NEXT:    %p = rlx.reshape %[[M]] : (tensor<2x1x1x1x16xf32>) -> tensor<2x16x1x1xf32>
// CHECK-NEXT:    func.return %p
// A pooled conv (reduce = "mean", the fused global pool) runs as the blocked conv and
// the blocked mean; its [N, F, 1, 1] result is the blocked mean reshaped.
func.func @pooled(%x: tensor<2x16x4x4xf32>, %w1: tensor<16x16x1x1xf32>, %w2: tensor<16x16x3x3xf32>) -> tensor<2x16x1x1xf32> {
  %c = rlx.conv2d %x, %w1 : (tensor<2x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x4x4xf32>
  %p = rlx.conv2d %c, %w2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", reduce = "mean"} : (tensor<2x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x1x1xf32>
  func.return %p : tensor<2x16x1x1xf32>
}
