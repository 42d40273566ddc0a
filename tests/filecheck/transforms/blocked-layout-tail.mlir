// blocked-layout: a region's block is the largest dividing every channel count of it, but a
// tail that alone holds it narrower (SqueezeNet's 1000-way classifier conv and its relu)
// is left NCHW so that the rest runs at the full block; ops of such channel counts that
// feed the rest (or more than a quarter of the convs) keep the whole region at the
// narrower block.
// RUN: rlx-opt %s -p 'blocked-layout{block=16}' | filecheck %s
// RUN: rlx-opt %s -p 'blocked-layout{block=16}' --check-equivalence > /dev/null

// CHECK-LABEL: func.func @tail
// CHECK:         %[[X:.*]] = rlx.to_nchwc %x {block = 16 : i64} : (tensor<1x16x8x8xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK:         rlx.conv2d %[[X]], %{{.*}} layout = "nchwc"} : (tensor<1x1x8x8x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-COUNT-2: layout = "nchwc"} : (tensor<1x1x8x8x16xf32>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK-NEXT:    %[[N:.*]] = rlx.from_nchwc %{{.*}} : (tensor<1x1x8x8x16xf32>) -> tensor<1x16x8x8xf32>
// CHECK-NEXT:    %c3 = rlx.conv2d %[[N]], %w3 {activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x8x8xf32>
// CHECK-NEXT:    %m = rlx.pool2d %c3 {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x24x8x8xf32>) -> tensor<1x24x4x4xf32>
// CHECK-NEXT:    func.return %m
func.func @tail(%x: tensor<1x16x8x8xf32>, %w0: tensor<16x16x3x3xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<16x16x3x3xf32>, %w3: tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32> {
  %c0 = rlx.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c1 = rlx.conv2d %c0, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c2 = rlx.conv2d %c1, %w2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c3 = rlx.conv2d %c2, %w3 {activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x8x8xf32>
  %m = rlx.pool2d %c3 {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x24x8x8xf32>) -> tensor<1x24x4x4xf32>
  func.return %m : tensor<1x24x4x4xf32>
}

// The 24-channel conv feeds the rest: one region at block 8.
// CHECK-LABEL: func.func @middle
// CHECK:         rlx.to_nchwc %x {block = 8 : i64}
// CHECK-NOT:     block = 16
// CHECK-NOT:     rlx.conv2d {{.*}}tensor<1x24x8x8xf32>
// CHECK:         func.return
func.func @middle(%x: tensor<1x16x8x8xf32>, %w0: tensor<24x16x1x1xf32>, %w1: tensor<16x24x1x1xf32>, %w2: tensor<16x16x3x3xf32>, %w3: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %c0 = rlx.conv2d %x, %w0 {activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x8x8xf32>
  %c1 = rlx.conv2d %c0, %w1 {activation = "relu"} : (tensor<1x24x8x8xf32>, tensor<16x24x1x1xf32>) -> tensor<1x16x8x8xf32>
  %c2 = rlx.conv2d %c1, %w2 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c3 = rlx.conv2d %c2, %w3 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %c3 : tensor<1x16x8x8xf32>
}

// The narrow tail holds 2 of 4 convs (more than a quarter): one region at block 8.
// CHECK-LABEL: func.func @heavy_tail
// CHECK:         rlx.to_nchwc %x {block = 8 : i64}
// CHECK-NOT:     block = 16
// CHECK:         func.return
func.func @heavy_tail(%x: tensor<1x16x8x8xf32>, %w0: tensor<16x16x3x3xf32>, %w1: tensor<16x16x3x3xf32>, %w2: tensor<24x16x1x1xf32>, %w3: tensor<24x24x1x1xf32>) -> tensor<1x24x8x8xf32> {
  %c0 = rlx.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c1 = rlx.conv2d %c0, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %c2 = rlx.conv2d %c1, %w2 {activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x8x8xf32>
  %c3 = rlx.conv2d %c2, %w3 {activation = "relu"} : (tensor<1x24x8x8xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x8x8xf32>
  func.return %c3 : tensor<1x24x8x8xf32>
}
