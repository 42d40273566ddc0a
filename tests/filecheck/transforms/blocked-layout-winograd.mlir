// prepare-weights: the Winograd weight transform U = G g Gᵀ of a blocked 3x3 stride-1 f32
// conv on a map of >= 49 pixels runs in @prepare when its weights are a param (G over
// kh, then over kw, with the per-call kernel's operations: the same bits); the conv reads
// U (winograd = true). Weights computed in @main (an argument here) keep the blocked
// reorder in @main and the per-call transform; so does every conv with
// winograd-weights=false. blocked-layout-winograd-limits.mlir: the kernel's scratch limits.
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true}' | filecheck %s
// RUN: env RLX_CONV_WINOGRAD=0 rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true}' | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'blocked-layout{block=8}' | filecheck %s --check-prefix=NOPREP
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=8 prepare-weights=true winograd-weights=false}' | filecheck %s --check-prefix=NOPREP

// CHECK-LABEL: func.func @prepare() -> tensor<16x2x2x8x8xf32> attributes {rlx.prepare_for = "main"} {
// CHECK:         %[[W1:.*]] = rlx.param "w1" : tensor<16x16x3x3xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.reshape %[[W1]] : (tensor<16x16x3x3xf32>) -> tensor<2x8x2x8x3x3xf32>
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %[[R]] {permutation = array<i64: 4, 5, 0, 2, 3, 1>} : (tensor<2x8x2x8x3x3xf32>) -> tensor<3x3x2x2x8x8xf32>
// CHECK-NEXT:    %[[G:.*]] = rlx.reshape %[[T]] : (tensor<3x3x2x2x8x8xf32>) -> tensor<3x3x256xf32>
// G over kh, as the kernel's per-call transform: (g0, ½((g0 + g2) + g1), ½((g0 + g2) - g1), g2)
// CHECK-NEXT:    %[[S:.*]] = rlx.constant dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[G0:.*]] = rlx.slice %[[G]] {starts = array<i64: 0, 0, 0>, limits = array<i64: 1, 3, 256>}
// CHECK-NEXT:    %[[G1:.*]] = rlx.slice %[[G]] {starts = array<i64: 1, 0, 0>, limits = array<i64: 2, 3, 256>}
// CHECK-NEXT:    %[[G2:.*]] = rlx.slice %[[G]] {starts = array<i64: 2, 0, 0>, limits = array<i64: 3, 3, 256>}
// CHECK-NEXT:    %[[PM:.*]] = rlx.elementwise_region %[[G0]], %[[G1]], %[[G2]], %[[S]] : {{.*}} -> tensor<2x3x256xf32> {
// CHECK-NEXT:    ^bb0(%[[A0:.*]]: f32, %[[A1:.*]]: f32, %[[A2:.*]]: f32, %[[SG:.*]]: f32):
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[A0]], %[[A2]] : f32
// CHECK-NEXT:      %[[T1:.*]] = arith.mulf %[[A1]], %[[SG]] : f32
// CHECK-NEXT:      %[[V:.*]] = arith.addf %[[SUM]], %[[T1]] : f32
// CHECK-NEXT:      %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[V]], %[[HALF]] : f32
// CHECK-NEXT:      rlx.yield %[[Y]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[A:.*]] = rlx.concat %[[G0]], %[[PM]], %[[G2]] {axis = 0 : i64} : {{.*}} -> tensor<4x3x256xf32>
// then over kw
// CHECK-NEXT:    rlx.constant {{.*}} : tensor<1x2x1xf32>
// CHECK-NEXT:    %[[K0:.*]] = rlx.slice %[[A]] {starts = array<i64: 0, 0, 0>, limits = array<i64: 4, 1, 256>}
// CHECK:         %[[B:.*]] = rlx.concat {{.*}} {axis = 1 : i64} : {{.*}} -> tensor<4x4x256xf32>
// CHECK-NEXT:    %[[U:.*]] = rlx.reshape %[[B]] : (tensor<4x4x256xf32>) -> tensor<16x2x2x8x8xf32>
// CHECK-NEXT:    func.return %[[U]]
// CHECK-LABEL: func.func @main(%x: tensor<1x16x8x8xf32>, %wa: tensor<16x16x3x3xf32>, %winograd_w0: tensor<16x2x2x8x8xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"})
// CHECK-NOT:     rlx.concat
// CHECK:         rlx.conv2d %{{.*}}, %winograd_w0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc", winograd = true} : (tensor<1x2x8x8x8xf32>, tensor<16x2x2x8x8xf32>)
// CHECK:         %[[R:.*]] = rlx.reshape %wa
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %[[R]]
// CHECK-NEXT:    rlx.conv2d %{{.*}}, %[[T]] {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>)
// CHECK-NOT:     winograd
// OFF-NOT:       rlx.concat
// OFF-NOT:       winograd
// NOPREP-NOT:    winograd
func.func @main(%x: tensor<1x16x8x8xf32>, %wa: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = rlx.param "w1" : tensor<16x16x3x3xf32>
  %a = rlx.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %b = rlx.conv2d %a, %wa {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  func.return %b : tensor<1x16x8x8xf32>
}
