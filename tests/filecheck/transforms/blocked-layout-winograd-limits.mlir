// prepare-weights prepares U only for the convs the Winograd kernel then takes: the same
// plan (rlx.conv_plan.winograd_tile) decides in the pass and in the lowering. A VGG-style
// 3x3 256 -> 256 conv on a 56x56 map is refused by the kernel's scratch limits (its
// transformed input row, 16 · 256 · twp f32 >= 16 · 256 · 28 = 114688 > V_ELEMENTS, on
// every ISA) and keeps its 3x3 blocked weights; the 64 -> 256 conv before it gets U.
// RUN: rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=16 prepare-weights=true}' | filecheck %s
// RUN: env RLX_GEMM_ISA=avx2 rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=16 prepare-weights=true}' | filecheck %s
// RUN: env RLX_GEMM_ISA=generic rlx-opt %s -p 'hoist-param-invariant,blocked-layout{block=16 prepare-weights=true}' | filecheck %s

// CHECK-LABEL: func.func @prepare()
// CHECK-SAME:    -> (tensor<16x16x4x16x16xf32>, tensor<16x16x3x3x16x16xf32>)
// CHECK-LABEL: func.func @main(
// CHECK:         rlx.conv2d %{{.*}}, %winograd_w0, %b1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc", winograd = true} : (tensor<1x4x56x56x16xf32>, tensor<16x16x4x16x16xf32>, tensor<256xf32>)
// CHECK:         rlx.conv2d %{{.*}}, %blocked_w1 {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<1x16x56x56x16xf32>, tensor<16x16x3x3x16x16xf32>)
// CHECK-NOT:     winograd = true
func.func @main(%x: tensor<1x64x56x56xf32>) -> tensor<1x256x56x56xf32> {
  %w1 = rlx.param "w1" : tensor<256x64x3x3xf32>
  %b1 = rlx.param "b1" : tensor<256xf32>
  %w2 = rlx.param "w2" : tensor<256x256x3x3xf32>
  %a = rlx.conv2d %x, %w1, %b1 {padding = array<i64: 1, 1, 1, 1>, activation = "relu"} : (tensor<1x64x56x56xf32>, tensor<256x64x3x3xf32>, tensor<256xf32>) -> tensor<1x256x56x56xf32>
  %b = rlx.conv2d %a, %w2 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x256x56x56xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32>
  func.return %b : tensor<1x256x56x56xf32>
}
