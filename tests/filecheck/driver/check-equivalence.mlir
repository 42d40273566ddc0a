// RUN: rlx-opt %s --canonicalize --dce --fusion --kernel-dispatch --check-equivalence | filecheck %s
// RUN: rlx-opt %s --precision=bf16 --check-equivalence | filecheck %s --check-prefix=BF16
// RUN: rlx-opt %s --canonicalize --check-equivalence --check-equivalence-seed=7 --split-input-file --verify-diagnostics

// --check-equivalence runs the reference interpreter on seeded random inputs (indices in
// range for gathers, positive values for log) before and after every pass; correct passes
// pass, and passes that change numerics on purpose (precision) declare their tolerance.

// CHECK-LABEL: func.func @main
// BF16-LABEL:  func.func @main
func.func @main(%t: tensor<5x8xf32>, %i: tensor<3xi64>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %g = rlx.gather %t, %i {axis = 0 : i64} : (tensor<5x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  %m = rlx.matmul %g, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %a = rlx.add %m, %b : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %e = rlx.exp %a : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %l = rlx.log %e : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %r = rlx.gelu %l : (tensor<3x8xf32>) -> tensor<3x8xf32>
  func.return %r : tensor<3x8xf32>
}
