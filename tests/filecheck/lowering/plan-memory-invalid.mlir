// RUN: not rlx-opt %s -p 'convert-rlx-to-linalg,plan-memory{alignment=48}' 2>&1 | filecheck %s --check-prefix=ALIGN
// RUN: not rlx-opt %s -p plan-memory 2>&1 | filecheck %s --check-prefix=TENSOR

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %z = rlx.exp %y : (tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}

// ALIGN: plan-memory: alignment must be a power of two, got 48
// TENSOR: plan-memory: @main still works on tensors; run convert-rlx-to-linalg first
