// RUN: not rlx-opt %s --precision=f8 2>&1 | filecheck %s --check-prefix=PREC
// RUN: not rlx-opt %s --precision='policy=fastest' 2>&1 | filecheck %s --check-prefix=POLICY
// RUN: not rlx-opt %s --precision-policy 2>&1 | filecheck %s --check-prefix=NOPOLICY
// RUN: not rlx-opt %s -p 'precision{policy=custom custom="matmul=f8"}' 2>&1 | filecheck %s --check-prefix=CUSTOM
// RUN: not rlx-opt %s -p 'precision{policy=custom custom="scaled_matmul=f16"}' 2>&1 | filecheck %s --check-prefix=PINNED
// RUN: not rlx-opt %s -p 'precision{policy=auto-mixed custom="matmul=f16"}' 2>&1 | filecheck %s --check-prefix=MIXED

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %n : tensor<4xf32>
}

// PREC: error: unknown precision 'f8'; expected one of f32, f16, bf16
// POLICY: error: unknown precision policy 'fastest'; expected one of always-f32, always-f16, always-bf16, auto-mixed, auto-mixed-conservative, auto-mixed-bf16, custom
// NOPOLICY: error: precision-policy needs a policy name
// CUSTOM: error: malformed custom precision entry 'matmul=f8': expected OP=TYPE
// PINNED: error: custom precision: 'scaled_matmul' is not a retypable rlx op or an op class
// MIXED: error: option 'custom' needs policy=custom, got policy=auto-mixed
