// REQUIRES: avx512f
// RUN: rlx-opt %s --lower-to-llvm --emit=asm | filecheck %s

// asm-reduction.mlir on an AVX-512 host: the reassoc fastmath on the row sum lets LLVM
// vectorize the reduction: vector partial sums in zmm registers, then a horizontal add.

func.func @main(%x: tensor<8x64xf32>) -> tensor<8xf32> {
  %sq = rlx.mul %x, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %s = rlx.reduce %sq {kind = "sum", axes = array<i64: -1>} : (tensor<8x64xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}

// CHECK:     main:
// CHECK:       vmulps {{.*}}%zmm{{[0-9]+}}
// CHECK:       vaddps {{.*}}%zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// CHECK:       vextractf64x4 $1, %zmm{{[0-9]+}}, %ymm{{[0-9]+}}
