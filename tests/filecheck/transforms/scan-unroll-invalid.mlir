// RUN: not rlx-opt %s --scan-unroll=-1 2>&1 | filecheck %s

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// CHECK: error: scan-unroll max-length must be >= 0, got -1
