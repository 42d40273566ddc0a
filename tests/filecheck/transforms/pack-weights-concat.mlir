// RUN: rlx-opt %s --split-input-file -p 'pack-weights{width=16}' | filecheck %s
// RUN: env RLX_BLAS=1 rlx-opt %s --split-input-file -p 'pack-weights{width=16}' | filecheck %s --check-prefix=BLAS

// The merged q/k/v projection of `shared_input_matmul` (made after hoist-param-invariant):
// the weight concat is packed in @prepare and the bias concat moves there too, so @main
// copies no weight at run time. With RLX_BLAS=1 nothing is packed, but both concats move.
func.func @main(%x: tensor<8x64xf32>) -> tensor<8x192xf32> {
  %wq = rlx.param "wq" : tensor<64x64xf32>
  %wk = rlx.param "wk" : tensor<64x64xf32>
  %wv = rlx.param "wv" : tensor<64x64xf32>
  %w = rlx.concat %wq, %wk, %wv {axis = -1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x192xf32>
  %bq = rlx.param "bq" : tensor<64xf32>
  %bk = rlx.param "bk" : tensor<64xf32>
  %bv = rlx.param "bv" : tensor<64xf32>
  %b = rlx.concat %bq, %bk, %bv {axis = 0 : i64} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<192xf32>
  %y = rlx.fused_matmul_bias_act %x, %w, %b {activation = "none"} : (tensor<8x64xf32>, tensor<64x192xf32>, tensor<192xf32>) -> tensor<8x192xf32>
  func.return %y : tensor<8x192xf32>
}
// CHECK:      func.func @prepare() -> (tensor<12x64x16xf32>, tensor<192xf32>)
// CHECK:        %w = rlx.concat %wq, %wk, %wv {axis = -1 : i64}
// CHECK-NEXT:   %0 = rlx.pack_rhs %w {width = 16 : i64}
// CHECK:        %b = rlx.concat %bq, %bk, %bv {axis = 0 : i64}
// CHECK-NEXT:   func.return %0, %b : tensor<12x64x16xf32>, tensor<192xf32>
// CHECK:      func.func @main(%x: tensor<8x64xf32>, %packed0: {{.*}} {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}, %prep1: tensor<192xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_1"})
// CHECK-NOT:    rlx.concat
// CHECK-NOT:    rlx.param
// CHECK:        rlx.packed_matmul %x, %packed0, %prep1 {n = 192 : i64, activation = "none"}
// BLAS:       func.func @prepare() -> (tensor<64x192xf32>, tensor<192xf32>)
// BLAS:         %w = rlx.concat %wq, %wk, %wv
// BLAS:         %b = rlx.concat %bq, %bk, %bv
// BLAS-NEXT:    func.return %w, %b
// BLAS:       func.func @main(%x: tensor<8x64xf32>, %prep0: tensor<64x192xf32> {{.*}}, %prep1: tensor<192xf32>
// BLAS-NOT:     rlx.concat
// BLAS:         rlx.fused_matmul_bias_act %x, %prep0, %prep1

// -----

// Negative: a concat that reads an input (or an op of @main that is not a layout op) stays
// in @main; a bias concat of a matmul too small to pack still moves (weights only).
func.func @main(%x: tensor<8x64xf32>, %e: tensor<8xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<2x4xf32>) {
  %a = rlx.param "a" : tensor<8xf32>
  %c = rlx.concat %a, %e {axis = 0 : i64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  %n = rlx.neg %a : (tensor<8xf32>) -> tensor<8xf32>
  %d = rlx.concat %a, %n {axis = 0 : i64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  %w = rlx.param "w" : tensor<64x2xf32>
  %b0 = rlx.param "b0" : tensor<2xf32>
  %b1 = rlx.param "b1" : tensor<2xf32>
  %b = rlx.concat %b0, %b1 {axis = 0 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  %xs = rlx.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 64>} : (tensor<8x64xf32>) -> tensor<2x64xf32>
  %w2 = rlx.concat %w, %w {axis = -1 : i64} : (tensor<64x2xf32>, tensor<64x2xf32>) -> tensor<64x4xf32>
  %y = rlx.fused_matmul_bias_act %xs, %w2, %b {activation = "none"} : (tensor<2x64xf32>, tensor<64x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %c, %d, %y : tensor<16xf32>, tensor<16xf32>, tensor<2x4xf32>
}
// CHECK:      // -----
// CHECK:      func.func @prepare() -> (tensor<4xf32>, tensor<64x4xf32>)
// CHECK:        %b = rlx.concat %b0, %b1
// CHECK:        %w2 = rlx.concat %w{{.*}}, %w
// CHECK-NEXT:   func.return %b, %w2
// CHECK:      func.func @main
// CHECK:        %c = rlx.concat %a, %e
// CHECK:        %d = rlx.concat %a, %n
// CHECK-NOT:    rlx.concat
// CHECK:        rlx.fused_matmul_bias_act %xs, %prep1, %prep0
