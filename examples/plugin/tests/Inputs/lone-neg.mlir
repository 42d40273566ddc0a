// A pass error raised in a rewrite pattern is located at the op being rewritten, so
// --verify-diagnostics matches it like a verifier error.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{lone rlx.neg: nothing to fold}}
  %a = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
