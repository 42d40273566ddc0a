// REQUIRES: avx2
// RUN: rlx-opt %s --lower-to-llvm --emit=asm | filecheck %s

// Host assembly (LLVM O3 for this CPU): the broadcast add and the relu loops are
// vectorized with 256-bit AVX registers (the kernels are inlined into @main).

func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = rlx.relu %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}

// CHECK:     main:
// CHECK:       vaddps {{.*}}%ymm{{[0-9]+}}
// CHECK:       vmaxps {{.*}}%ymm{{[0-9]+}}
// CHECK-NOT:   {{^[[:space:]]*}}addss
