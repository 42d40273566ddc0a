// RUN: rlx-opt %s -p 'kernel-dispatch{force-common-kinds=dequant_matmul}' | filecheck %s --check-prefix=QUANT

// GGML q8_0 blocks decode through lookup tables (rlx has no bit ops): blocks, f16 scale
// from its two bytes, int8 codes, d·code, then x @ Wᵀ.
// QUANT-LABEL: func.func @dequant
// QUANT:       %[[B:.*]] = rlx.reshape %p : (tensor<68xui8>) -> tensor<2x34xui8>
// QUANT:       rlx.gather {{.*}} : (tensor<256xf32>, tensor<2x1xui8>) -> tensor<2x1xf32>
// QUANT:       %[[Q:.*]] = rlx.slice %[[B]] {starts = array<i64: 0, 2>, limits = array<i64: 2, 34>}
// QUANT:       rlx.gather {{.*}}, %[[Q]] : (tensor<256xf32>, tensor<2x32xui8>) -> tensor<2x32xf32>
// QUANT:       %[[W:.*]] = rlx.mul {{.*}} : (tensor<2x1xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
// QUANT:       %[[T:.*]] = rlx.transpose %[[W]] {permutation = array<i64: 1, 0>}
// QUANT:       rlx.matmul %x, %[[T]] : (tensor<3x32xf32>, tensor<32x2xf32>) -> tensor<3x2xf32>
// QUANT-NOT:   rlx.dequant_matmul
func.func @dequant(%x: tensor<3x32xf32>, %p: tensor<68xui8>) -> tensor<3x2xf32> {
  %y = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 2 : i64, k = 32 : i64} : (tensor<3x32xf32>, tensor<68xui8>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
