// RUN: rlx-opt %s --fold-batch-norm --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'fold-batch-norm{fold-constants=false}' --split-input-file | filecheck %s --check-prefix=NOFOLD
// RUN: rlx-opt %s --fold-batch-norm --check-equivalence --split-input-file > /dev/null

// An inference batch norm as the ONNX importer writes it, after a grouped, strided conv
// with a bias: the weights become w * s (per filter), the bias (b - mean) * s + beta.
// CHECK-LABEL: func.func @batch_norm_params
// CHECK:         %[[S4:.*]] = rlx.reshape %s : (tensor<6x1x1xf32>) -> tensor<6x1x1x1xf32>
// CHECK-NEXT:    %[[W:.*]] = rlx.mul %w, %[[S4]] : (tensor<6x2x3x3xf32>, tensor<6x1x1x1xf32>)
// CHECK:         %[[B:.*]] = rlx.add %{{.*}}, %{{.*}} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %{{.*}} = rlx.conv2d %x, %[[W]], %[[B]] {strides = array<i64: 2, 2>, groups = 2 : i64}
// CHECK-NOT:     rlx.sub %{{.*}} : (tensor<2x6x4x4xf32>
// CHECK:         func.return
func.func @batch_norm_params(%x: tensor<2x4x9x9xf32>) -> tensor<2x6x4x4xf32> {
  %w = rlx.param "w" : tensor<6x2x3x3xf32>
  %b = rlx.param "b" : tensor<6xf32>
  %mean = rlx.param "mean" : tensor<6xf32>
  %var = rlx.param "var" : tensor<6xf32>
  %g = rlx.param "gamma" : tensor<6xf32>
  %beta = rlx.param "beta" : tensor<6xf32>
  %c = rlx.conv2d %x, %w, %b {strides = array<i64: 2, 2>, groups = 2} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x4x4xf32>
  %m3 = rlx.reshape %mean : (tensor<6xf32>) -> tensor<6x1x1xf32>
  %v3 = rlx.reshape %var : (tensor<6xf32>) -> tensor<6x1x1xf32>
  %g3 = rlx.reshape %g : (tensor<6xf32>) -> tensor<6x1x1xf32>
  %be3 = rlx.reshape %beta : (tensor<6xf32>) -> tensor<6x1x1xf32>
  %eps = rlx.constant dense<1.0e-05> : tensor<6x1x1xf32>
  %ve = rlx.add %v3, %eps : (tensor<6x1x1xf32>, tensor<6x1x1xf32>) -> tensor<6x1x1xf32>
  %inv = rlx.rsqrt %ve : (tensor<6x1x1xf32>) -> tensor<6x1x1xf32>
  %s = rlx.mul %inv, %g3 : (tensor<6x1x1xf32>, tensor<6x1x1xf32>) -> tensor<6x1x1xf32>
  %d = rlx.sub %c, %m3 : (tensor<2x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<2x6x4x4xf32>
  %y = rlx.mul %d, %s : (tensor<2x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<2x6x4x4xf32>
  %z = rlx.add %y, %be3 : (tensor<2x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<2x6x4x4xf32>
  func.return %z : tensor<2x6x4x4xf32>
}

// -----

// x * s + t with constants after a depthwise conv without a bias: folded to constants
// (scale [1, F, 1, 1], shift a scalar); the division form too: ((c·s)/2 + 1)/2.
// CHECK-LABEL: func.func @depthwise_constants
// CHECK-DAG:     %[[W:.*]] = rlx.constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00, 1.000000e+00], [1.000000e+00, 1.000000e+00]]], {{\[}}{{\[}}[3.000000e+00, 3.000000e+00]
// CHECK-DAG:     %[[B:.*]] = rlx.constant dense<5.000000e-01> : tensor<2xf32>
// CHECK:         rlx.conv2d %x, %[[W]], %[[B]] {groups = 2 : i64}
// CHECK-NOT:     rlx.mul
// CHECK-NOT:     rlx.add
// NOFOLD-LABEL:  func.func @depthwise_constants
// NOFOLD:        rlx.mul %w, %{{.*}} : (tensor<2x1x2x2xf32>, tensor<2x1x1x1xf32>)
// NOFOLD:        rlx.div %{{.*}} : (tensor<2x1x2x2xf32>, tensor<2x1x1x1xf32>)
// NOFOLD:        rlx.conv2d %x, %{{.*}}, %{{.*}} {groups = 2 : i64}
func.func @depthwise_constants(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x4x4xf32> {
  %w = rlx.constant dense<1.0> : tensor<2x1x2x2xf32>
  %s = rlx.constant dense<[[[[4.0]], [[12.0]]]]> : tensor<1x2x1x1xf32>
  %t = rlx.constant dense<1.0> : tensor<f32>
  %two = rlx.constant dense<2.0> : tensor<1xf32>
  %c = rlx.conv2d %x, %w {groups = 2} : (tensor<1x2x5x5xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x4x4xf32>
  %y = rlx.mul %s, %c : (tensor<1x2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %u = rlx.div %y, %two : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32>
  %z = rlx.add %u, %t : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %h = rlx.div %z, %two : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32>
  func.return %h : tensor<1x2x4x4xf32>
}

// -----

// Not folded: a scale computed from an input, a scale broadcast over the width axis, a
// conv result with two users, a conv with an activation, the conv on the right of a
// division, an integer conv.
// CHECK-LABEL: func.func @negative
// CHECK-COUNT-6: rlx.conv2d %x, %w {{(:|{)}}
// CHECK:         rlx.mul %c0, %sx
// CHECK:         rlx.mul %c1, %sw
// CHECK:         rlx.mul %c2, %k
// CHECK:         rlx.add %c2, %k
// CHECK:         rlx.mul %c3, %k
// CHECK:         rlx.div %k, %c4
func.func @negative(%x: tensor<1x2x5x5xf32>, %sx: tensor<2x1x1xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = rlx.param "w" : tensor<2x2x2x2xf32>
  %k = rlx.param "k" : tensor<2x1x1xf32>
  %sw = rlx.param "sw" : tensor<4xf32>
  %c0 = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %c1 = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %c2 = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %c3 = rlx.conv2d %x, %w {activation = "relu"} : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %c4 = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %c5 = rlx.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<2x2x2x2xf32>) -> tensor<1x2x4x4xf32>
  %y0 = rlx.mul %c0, %sx : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y1 = rlx.mul %c1, %sw : (tensor<1x2x4x4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
  %m2 = rlx.mul %c2, %k : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %a2 = rlx.add %c2, %k : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y2 = rlx.add %m2, %a2 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y3 = rlx.mul %c3, %k : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y4 = rlx.div %k, %c4 : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %y0, %y1, %y2, %y3, %y4, %c5 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// An integer convolution is left alone.
// CHECK-LABEL: func.func @integer
// CHECK:         rlx.mul %c, %k
func.func @integer(%x: tensor<1x1x3x3xi32>) -> tensor<1x2x2x2xi32> {
  %w = rlx.param "w" : tensor<2x1x2x2xi32>
  %k = rlx.param "k" : tensor<2x1x1xi32>
  %c = rlx.conv2d %x, %w : (tensor<1x1x3x3xi32>, tensor<2x1x2x2xi32>) -> tensor<1x2x2x2xi32>
  %y = rlx.mul %c, %k : (tensor<1x2x2x2xi32>, tensor<2x1x1xi32>) -> tensor<1x2x2x2xi32>
  func.return %y : tensor<1x2x2x2xi32>
}
