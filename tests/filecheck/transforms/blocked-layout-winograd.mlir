// prepare-weights: the Winograd weight transform U = G g Gᵀ of a blocked 3x3 stride-1 f32
// conv on a map of >= 49 pixels runs in @prepare when its weights are a param (one
// matmul by the constant G ⊗ G); the conv reads U (winograd = true). Weights computed in
// @main (an argument here) keep the blocked reorder in @main and the per-call transform;
// so does every conv with winograd-weights=false.
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true}' | filecheck %s
// RUN: env RLX_CONV_WINOGRAD=0 rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true}' | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' | filecheck %s --check-prefix=NOPREP
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true winograd-weights=false}' | filecheck %s --check-prefix=NOPREP

// CHECK-LABEL: func.func @prepare() -> tensor<16x2x2x8x8xf32> attributes {rlx.prepare_for = "main"} {
// CHECK:         %[[W1:.*]] = rlx.param "w1" : tensor<16x16x3x3xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.reshape %[[W1]] : (tensor<16x16x3x3xf32>) -> tensor<2x8x2x8x3x3xf32>
// CHECK-NEXT:    %[[K:.*]] = rlx.constant dense<{{.*}}> : tensor<16x9xf32>
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %[[R]] {permutation = array<i64: 4, 5, 0, 2, 3, 1>} : (tensor<2x8x2x8x3x3xf32>) -> tensor<3x3x2x2x8x8xf32>
// CHECK-NEXT:    %[[G:.*]] = rlx.reshape %[[T]] : (tensor<3x3x2x2x8x8xf32>) -> tensor<9x256xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.matmul %[[K]], %[[G]] : (tensor<16x9xf32>, tensor<9x256xf32>) -> tensor<16x256xf32>
// CHECK-NEXT:    %[[U:.*]] = rlx.reshape %[[M]] : (tensor<16x256xf32>) -> tensor<16x2x2x8x8xf32>
// CHECK-NEXT:    func.return %[[U]]
// CHECK-LABEL: func.func @main(%x: tensor<1x16x8x8xf32>, %wa: tensor<16x16x3x3xf32>, %winograd_w0: tensor<16x2x2x8x8xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"})
// CHECK-NOT:     rlx.matmul
// CHECK:         rlx.conv2d %{{.*}}, %winograd_w0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc", winograd = true} : (tensor<1x2x8x8x8xf32>, tensor<16x2x2x8x8xf32>)
// CHECK:         %[[R:.*]] = rlx.reshape %wa
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %[[R]]
// CHECK-NEXT:    rlx.conv2d %{{.*}}, %[[T]] {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>)
// CHECK-NOT:     winograd
// OFF-NOT:       rlx.matmul
// OFF-NOT:       winograd
// NOPREP-NOT:    winograd
func.func @main(%x: tensor<1x16x8x8xf32>, %wa: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = rlx.param "w1" : tensor<16x16x3x3xf32>
  %a = rlx.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = rlx.conv2d %a, %wa {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %b : tensor<1x16x8x8xf32>
}
