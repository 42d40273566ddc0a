// REQUIRES: avx2
// RUN: rlx-opt %s --lower-to-llvm --emit=asm | filecheck %s

// Host assembly (LLVM O3 for this CPU): the broadcast add and the relu loops are
// vectorized with 256-bit (or, on an AVX-512 host, 512-bit) registers (the kernels and
// their shape-generic workers are inlined into @main, the sizes folded from the table).

func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = rlx.relu %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}

// CHECK:     main:
// CHECK:       vaddps {{.*}}%ymm{{[0-9]+}}
// CHECK:       vmaxps {{.*}}%{{[yz]}}mm{{[0-9]+}}
// CHECK-NOT:   {{^[[:space:]]*}}addss
