// RUN: rlx-opt %s -p fusion --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'fusion{conv-input-scale=false}' --split-input-file | filecheck %s --check-prefix=OFF

// The `conv_input_scale` pattern of `fusion`: a convolution reading x * g, g per input
// channel and the same for every image (the squeeze-excite gate at batch 1), reads x
// with its weights scaled by g, when the weights are fewer than the activations.

// CHECK-LABEL: func.func @squeeze_excite
// CHECK:         %[[G:.*]] = rlx.conv2d %{{.*}}, %w2 {activation = "sigmoid"}
// CHECK-NEXT:    %[[W:.*]] = rlx.mul %wp, %[[G]] : (tensor<16x32x3x3xf32>, tensor<1x32x1x1xf32>) -> tensor<16x32x3x3xf32>
// CHECK-NEXT:    %[[P:.*]] = rlx.fused_conv2d_residual %x, %[[W]], %r {padding = array<i64: 1, 1, 1, 1>, activation = "relu"}
// CHECK-NEXT:    func.return %[[P]]
// OFF-LABEL:   func.func @squeeze_excite
// OFF:           rlx.mul %x,
func.func @squeeze_excite(%x: tensor<1x32x14x14xf32>, %w1: tensor<8x32x1x1xf32>, %w2: tensor<32x8x1x1xf32>, %wp: tensor<16x32x3x3xf32>, %r: tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32> {
  %m = rlx.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x32x14x14xf32>) -> tensor<1x32x1x1xf32>
  %s = rlx.conv2d %m, %w1 {activation = "silu"} : (tensor<1x32x1x1xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x1x1xf32>
  %g = rlx.conv2d %s, %w2 {activation = "sigmoid"} : (tensor<1x8x1x1xf32>, tensor<32x8x1x1xf32>) -> tensor<1x32x1x1xf32>
  %y = rlx.mul %g, %x : (tensor<1x32x1x1xf32>, tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %p = rlx.conv2d %y, %wp {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x32x14x14xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x14x14xf32>
  %a = rlx.add %p, %r : (tensor<1x16x14x14xf32>, tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %o = rlx.relu %a : (tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  func.return %o : tensor<1x16x14x14xf32>
}

// -----

// Not rewritten: a gate per image (batch 2), a scaled input read twice, a depthwise
// convolution, more weights than activations (a 2x2 map), a gate that is not per channel.
// CHECK-LABEL: func.func @negatives
// CHECK-COUNT-5: rlx.mul %x
func.func @negatives(%x: tensor<2x8x6x6xf32>, %g2: tensor<2x8x1x1xf32>, %g: tensor<1x8x1x1xf32>, %w: tensor<4x8x1x1xf32>,
                     %dw: tensor<8x1x3x3xf32>, %x4: tensor<1x8x2x2xf32>, %big: tensor<64x8x1x1xf32>, %gs: tensor<1x1x6x6xf32>)
    -> (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>, tensor<2x8x4x4xf32>, tensor<1x64x2x2xf32>, tensor<2x4x6x6xf32>) {
  %a = rlx.mul %x, %g2 : (tensor<2x8x6x6xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x6x6xf32>
  %ca = rlx.conv2d %a, %w : (tensor<2x8x6x6xf32>, tensor<4x8x1x1xf32>) -> tensor<2x4x6x6xf32>
  %b = rlx.mul %x, %g : (tensor<2x8x6x6xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x6x6xf32>
  %cb = rlx.conv2d %b, %w : (tensor<2x8x6x6xf32>, tensor<4x8x1x1xf32>) -> tensor<2x4x6x6xf32>
  %c = rlx.mul %x, %g : (tensor<2x8x6x6xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x6x6xf32>
  %cc = rlx.conv2d %c, %dw {groups = 8 : i64} : (tensor<2x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x4x4xf32>
  %d = rlx.mul %x4, %g : (tensor<1x8x2x2xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %cd = rlx.conv2d %d, %big : (tensor<1x8x2x2xf32>, tensor<64x8x1x1xf32>) -> tensor<1x64x2x2xf32>
  %e = rlx.mul %x, %gs : (tensor<2x8x6x6xf32>, tensor<1x1x6x6xf32>) -> tensor<2x8x6x6xf32>
  %ce = rlx.conv2d %e, %w : (tensor<2x8x6x6xf32>, tensor<4x8x1x1xf32>) -> tensor<2x4x6x6xf32>
  func.return %ca, %cb, %b, %cc, %cd, %ce : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>, tensor<2x8x4x4xf32>, tensor<1x64x2x2xf32>, tensor<2x4x6x6xf32>
}
