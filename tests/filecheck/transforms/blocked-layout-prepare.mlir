// prepare-weights (cache_param_invariant): the reorders of param weights -- plain params and
// values @prepare already computes -- move into @prepare; @main reads blocked prepared args.
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true}' | filecheck %s
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' | filecheck %s --check-prefix=INMAIN

// CHECK-LABEL: func.func @prepare() -> (tensor<16x16x1x1xf32>, tensor<2x2x3x3x8x8xf32>, tensor<2x2x1x1x8x8xf32>) attributes {rlx.prepare_for = "main"} {
// CHECK:         %[[W1:.*]] = rlx.param "w1" : tensor<16x16x3x3xf32>
// CHECK-NEXT:    %[[R1:.*]] = rlx.reshape %[[W1]] : (tensor<16x16x3x3xf32>) -> tensor<2x8x2x8x3x3xf32>
// CHECK-NEXT:    %[[T1:.*]] = rlx.transpose %[[R1]]
// CHECK-NEXT:    %[[R2:.*]] = rlx.reshape %w2s
// CHECK-NEXT:    %[[T2:.*]] = rlx.transpose %[[R2]]
// CHECK-NEXT:    func.return %w2s, %[[T1]], %[[T2]]
// CHECK-LABEL: func.func @main(%x: tensor<1x16x6x6xf32>, %prep0: tensor<16x16x1x1xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}, %blocked_w1: tensor<2x2x3x3x8x8xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_1"}, %blocked_w2: tensor<2x2x1x1x8x8xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_2"})
// CHECK-NOT:     rlx.transpose
// CHECK:         rlx.conv2d %{{.*}}, %blocked_w1 {{{.*}}layout = "nchwc"}
// CHECK-NEXT:    rlx.conv2d %{{.*}}, %blocked_w2 {layout = "nchwc"}
// INMAIN-LABEL: func.func @main
// INMAIN:         rlx.transpose
func.func @main(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w1 = rlx.param "w1" : tensor<16x16x3x3xf32>
  %w2 = rlx.param "w2" : tensor<16x16x1x1xf32>
  %s = rlx.param "s" : tensor<16x1x1x1xf32>
  %w2s = rlx.mul %w2, %s : (tensor<16x16x1x1xf32>, tensor<16x1x1x1xf32>) -> tensor<16x16x1x1xf32>
  %a = rlx.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %b = rlx.conv2d %a, %w2s : (tensor<1x16x6x6xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x6x6xf32>
  func.return %b : tensor<1x16x6x6xf32>
}
