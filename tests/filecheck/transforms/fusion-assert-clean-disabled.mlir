// RUN: rlx-opt %s -p 'fusion{assert-clean=true matmul-bias-act=false}' --split-input-file --verify-diagnostics
// RUN: rlx-opt %s -p 'fusion{assert-clean=true target=none}' --split-input-file --verify-diagnostics

// A disabled pattern leaves a fusable chain behind, which assert-clean reports.

func.func @left_unfused(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}matmul + bias left unfused → enable the matmul-bias-act pattern}}
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  func.return %a : tensor<2x16xf32>
}
