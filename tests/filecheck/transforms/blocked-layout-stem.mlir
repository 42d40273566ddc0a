// The stem form of blocked-layout (docs/layout.md): a conv whose input channels are not a
// multiple of 8 reads x blocked by 1 ([N, C, H, W, 1], a reshape: no copy) and writes the
// blocked result; no to_nchwc of its output.
// RUN: rlx-opt %s -p 'blocked-layout{block=16}' | filecheck %s
// RUN: rlx-opt %s -p 'blocked-layout{block=16 narrow-convs=false}' | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: rlx-opt %s -p 'blocked-layout{block=16}' | rlx-opt | filecheck %s --check-prefix=ROUNDTRIP
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' --check-equivalence > /dev/null

// DUMP: IR Dump After blocked-layout
// DUMP: rlx.conv2d %{{.*}} {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu", layout = "nchwc"} : (tensor<2x3x9x9x1xf32>, tensor<4x3x3x3x1x8xf32>, tensor<32xf32>) -> tensor<2x4x5x5x8xf32>
// ROUNDTRIP-LABEL: func.func @efficientnet_stem
// ROUNDTRIP: rlx.conv2d {{.*}}layout = "nchwc"} : (tensor<2x3x9x9x1xf32>

// CHECK-LABEL: func.func @efficientnet_stem
// CHECK-NEXT:    %[[X:.*]] = rlx.reshape %x : (tensor<2x3x9x9xf32>) -> tensor<2x3x9x9x1xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.reshape %w0 : (tensor<32x3x3x3xf32>) -> tensor<2x16x3x1x3x3xf32>
// CHECK-NEXT:    %[[W:.*]] = rlx.transpose %[[R]] {permutation = array<i64: 0, 2, 4, 5, 3, 1>} : (tensor<2x16x3x1x3x3xf32>) -> tensor<2x3x3x3x1x16xf32>
// CHECK-NEXT:    %[[S:.*]] = rlx.conv2d %[[X]], %[[W]], %b0 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu", layout = "nchwc"} : (tensor<2x3x9x9x1xf32>, tensor<2x3x3x3x1x16xf32>, tensor<32xf32>) -> tensor<2x2x5x5x16xf32>
// CHECK-NOT:     rlx.to_nchwc
// CHECK:         rlx.conv2d %[[S]], %{{.*}} {{{.*}}groups = 32 : i64{{.*}}layout = "nchwc"}
// CHECK:         rlx.from_nchwc
// CHECK-NEXT:    func.return
// OFF-LABEL: func.func @efficientnet_stem
// OFF-NEXT:    %[[S:.*]] = rlx.conv2d %x, %w0, %b0 {{.*}} : (tensor<2x3x9x9xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>) -> tensor<2x32x5x5xf32>
// OFF-NEXT:    rlx.to_nchwc %[[S]] {block = 16 : i64}
// EfficientNet / MobileNet stem: 3 -> 32 3x3/2 + silu, then a depthwise and a 1x1 conv.
func.func @efficientnet_stem(%x: tensor<2x3x9x9xf32>, %w0: tensor<32x3x3x3xf32>, %b0: tensor<32xf32>, %wd: tensor<32x1x3x3xf32>, %w1: tensor<16x32x1x1xf32>) -> tensor<2x16x5x5xf32> {
  %s = rlx.conv2d %x, %w0, %b0 {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu"} : (tensor<2x3x9x9xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>) -> tensor<2x32x5x5xf32>
  %d = rlx.conv2d %s, %wd {padding = array<i64: 1, 1, 1, 1>, groups = 32 : i64, activation = "silu"} : (tensor<2x32x5x5xf32>, tensor<32x1x3x3xf32>) -> tensor<2x32x5x5xf32>
  %y = rlx.conv2d %d, %w1 : (tensor<2x32x5x5xf32>, tensor<16x32x1x1xf32>) -> tensor<2x16x5x5xf32>
  func.return %y : tensor<2x16x5x5xf32>
}

// CHECK-LABEL: func.func @shared_input
// CHECK-NEXT:    %[[X:.*]] = rlx.reshape %x : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6x1xf32>
// CHECK-NOT:     rlx.reshape %x
// CHECK:         rlx.conv2d %[[X]], %{{.*}} {layout = "nchwc"} : (tensor<1x4x6x6x1xf32>, tensor<1x4x1x1x1x8xf32>) -> tensor<1x1x6x6x8xf32>
// CHECK:         rlx.fused_conv2d_residual %[[X]], %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<1x4x6x6x1xf32>, tensor<1x4x3x3x1x8xf32>, tensor<1x1x6x6x8xf32>) -> tensor<1x1x6x6x8xf32>
// Two narrow convs of one input share its reshape; one takes the other's result as its
// residual (B = 8: 8 filters).
func.func @shared_input(%x: tensor<1x4x6x6xf32>, %wa: tensor<8x4x1x1xf32>, %wb: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %a = rlx.conv2d %x, %wa : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %b = rlx.fused_conv2d_residual %x, %wb, %a {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %b : tensor<1x8x6x6xf32>
}

// CHECK-LABEL: func.func @negative
// CHECK-NOT:     nchwc
// CHECK:         func.return
// OFF-LABEL: func.func @negative
// Not narrow: 12 filters (not a multiple of 8); a 1x1 output map (a squeeze-excitation
// conv: the NCHW pointwise kernel); a grouped conv; integers. The last three feed a
// blockable conv, which alone is no region (min-convs = 2).
func.func @negative(%x: tensor<1x3x6x6xf32>, %w12: tensor<12x3x3x3xf32>, %v: tensor<1x4x1x1xf32>, %w16: tensor<16x4x1x1xf32>, %wq: tensor<16x16x1x1xf32>, %g: tensor<1x6x4x4xf32>, %wg: tensor<16x3x1x1xf32>, %i: tensor<1x3x4x4xi32>, %wi: tensor<8x3x1x1xi32>, %wj: tensor<8x8x1x1xi32>) -> (tensor<1x12x4x4xf32>, tensor<1x16x1x1xf32>, tensor<1x16x4x4xf32>, tensor<1x8x4x4xi32>) {
  %a = rlx.conv2d %x, %w12 : (tensor<1x3x6x6xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x4x4xf32>
  %s = rlx.conv2d %v, %w16 : (tensor<1x4x1x1xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x1x1xf32>
  %t = rlx.conv2d %s, %wq : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %c = rlx.conv2d %g, %wg {groups = 2 : i64} : (tensor<1x6x4x4xf32>, tensor<16x3x1x1xf32>) -> tensor<1x16x4x4xf32>
  %e = rlx.conv2d %c, %wq : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %k = rlx.conv2d %i, %wi : (tensor<1x3x4x4xi32>, tensor<8x3x1x1xi32>) -> tensor<1x8x4x4xi32>
  %l = rlx.conv2d %k, %wj : (tensor<1x8x4x4xi32>, tensor<8x8x1x1xi32>) -> tensor<1x8x4x4xi32>
  func.return %a, %t, %e, %l : tensor<1x12x4x4xf32>, tensor<1x16x1x1xf32>, tensor<1x16x4x4xf32>, tensor<1x8x4x4xi32>
}
