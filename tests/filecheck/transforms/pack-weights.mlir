// RUN: rlx-opt %s --split-input-file -p 'pack-weights{width=16}' | filecheck %s

// A param weight of a fused matmul: packed once in a new @prepare; @main reads the panels
// as a prepared argument and keeps the bias and activation; the param leaves @main.
func.func @main(%x: tensor<8x64xf32>) -> tensor<8x72xf32> {
  %w = rlx.param "w" : tensor<64x72xf32>
  %b = rlx.param "b" : tensor<72xf32>
  %y = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<8x64xf32>, tensor<64x72xf32>, tensor<72xf32>) -> tensor<8x72xf32>
  func.return %y : tensor<8x72xf32>
}
// CHECK:      func.func @prepare() -> tensor<5x64x16xf32> attributes {rlx.prepare_for = "main"} {
// CHECK-NEXT:   %w = rlx.param "w" : tensor<64x72xf32>
// CHECK-NEXT:   %0 = rlx.pack_rhs %w {width = 16 : i64} : (tensor<64x72xf32>) -> tensor<5x64x16xf32>
// CHECK-NEXT:   func.return %0 : tensor<5x64x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.func @main(%x: tensor<8x64xf32>, %packed0: tensor<5x64x16xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}) -> tensor<8x72xf32> {
// CHECK-NEXT:   %b = rlx.param "b" : tensor<72xf32>
// CHECK-NEXT:   %y = rlx.packed_matmul %x, %packed0, %b {n = 72 : i64, activation = "gelu"} : (tensor<8x64xf32>, tensor<5x64x16xf32>, tensor<72xf32>) -> tensor<8x72xf32>
// CHECK-NEXT:   func.return %y : tensor<8x72xf32>

// -----

// A weight @prepare already computes (hoist-param-invariant ran first) is packed there,
// after it, as a new output; a weight two matmuls share (a bf16 one here) is packed once.
func.func @prepare() -> tensor<64x64xf32> attributes {rlx.prepare_for = "main"} {
  %w = rlx.param "w" : tensor<64x64xf32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %t : tensor<64x64xf32>
}
func.func @main(%x: tensor<2x9x64xf32>, %h: tensor<16x64xbf16>, %prep0: tensor<64x64xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}) -> (tensor<2x9x64xf32>, tensor<16x32xbf16>) {
  %y = rlx.matmul %x, %prep0 : (tensor<2x9x64xf32>, tensor<64x64xf32>) -> tensor<2x9x64xf32>
  %v = rlx.param "v" : tensor<64x32xbf16>
  %a = rlx.matmul %h, %v : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  %c = rlx.matmul %h, %v : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  %s = rlx.add %a, %c : (tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<16x32xbf16>
  func.return %y, %s : tensor<2x9x64xf32>, tensor<16x32xbf16>
}
// CHECK:      func.func @prepare() -> (tensor<64x64xf32>, tensor<4x64x16xf32>, tensor<2x64x16xf32>)
// CHECK:        %t = rlx.transpose %w
// CHECK-NEXT:   %0 = rlx.pack_rhs %t {width = 16 : i64} : (tensor<64x64xf32>) -> tensor<4x64x16xf32>
// CHECK-NEXT:   %v = rlx.param "v" : tensor<64x32xbf16>
// CHECK-NEXT:   %1 = rlx.pack_rhs %v {width = 16 : i64} : (tensor<64x32xbf16>) -> tensor<2x64x16xf32>
// CHECK-NEXT:   func.return %t, %0, %1
// CHECK:      func.func @main({{.*}}%packed1: tensor<4x64x16xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_1"}, %packed2: tensor<2x64x16xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_2"})
// CHECK-NEXT:   %y = rlx.packed_matmul %x, %packed1 {n = 64 : i64, activation = "none"} : (tensor<2x9x64xf32>, tensor<4x64x16xf32>) -> tensor<2x9x64xf32>
// CHECK-NEXT:   %a = rlx.packed_matmul %h, %packed2 {n = 32 : i64, activation = "none"}
// CHECK-NEXT:   %c = rlx.packed_matmul %h, %packed2 {n = 32 : i64, activation = "none"}

// -----

// Negative: a weight computed in @main from an input, a weight that is an input, a
// small matmul (< 32^3 multiply-adds), an integer one and a batched weight keep
// rlx.matmul; no @prepare appears.
func.func @main(%x: tensor<8x64xf32>, %u: tensor<64x64xf32>, %i: tensor<8x64xi32>) -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x32xf32>, tensor<8x64xi32>, tensor<3x8x64xf32>) {
  %w = rlx.param "w" : tensor<64x64xf32>
  %wu = rlx.add %w, %u : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %a = rlx.matmul %x, %wu : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %b = rlx.matmul %x, %u : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %s = rlx.param "s" : tensor<64x32xf32>
  %c = rlx.matmul %x, %s : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %wi = rlx.param "wi" : tensor<64x64xi32>
  %d = rlx.matmul %i, %wi : (tensor<8x64xi32>, tensor<64x64xi32>) -> tensor<8x64xi32>
  %wb = rlx.param "wb" : tensor<3x64x64xf32>
  %e = rlx.matmul %x, %wb : (tensor<8x64xf32>, tensor<3x64x64xf32>) -> tensor<3x8x64xf32>
  func.return %a, %b, %c, %d, %e : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x32xf32>, tensor<8x64xi32>, tensor<3x8x64xf32>
}
// CHECK-NOT:  @prepare
// CHECK-NOT:  rlx.pack_rhs
// CHECK-NOT:  rlx.packed_matmul

// -----

// The concatenated weight of `shared_input_matmul` (q/k/v): the concat of a prepared value
// and a param moves into @prepare and is packed there; @main keeps no copy of it.
func.func @prepare() -> tensor<64x32xf32> attributes {rlx.prepare_for = "main"} {
  %w = rlx.param "w" : tensor<32x64xf32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<32x64xf32>) -> tensor<64x32xf32>
  func.return %t : tensor<64x32xf32>
}
func.func @main(%x: tensor<8x64xf32>, %prep0: tensor<64x32xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}) -> tensor<8x64xf32> {
  %v = rlx.param "v" : tensor<64x32xf32>
  %c = rlx.concat %prep0, %v {axis = -1 : i64} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x64xf32>
  %y = rlx.matmul %x, %c : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}
// CHECK:      // -----
// CHECK:      func.func @prepare() -> (tensor<64x32xf32>, tensor<4x64x16xf32>)
// CHECK:        %t = rlx.transpose %w
// CHECK-NEXT:   %v = rlx.param "v" : tensor<64x32xf32>
// CHECK-NEXT:   %c = rlx.concat %t, %v {axis = -1 : i64}
// CHECK-NEXT:   %0 = rlx.pack_rhs %c {width = 16 : i64} : (tensor<64x64xf32>) -> tensor<4x64x16xf32>
// CHECK-NEXT:   func.return %t, %0
// CHECK:      func.func @main
// CHECK-NOT:    rlx.concat
// CHECK-NOT:    rlx.param
// CHECK:        rlx.packed_matmul %x, %packed1
