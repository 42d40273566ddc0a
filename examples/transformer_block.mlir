// A small pre-norm transformer encoder block: seq 16, hidden 64, 4 heads of 16, FFN 256.
//
//   h = x + Wo(attention(split_heads(Wq ln1(x)), split_heads(Wk ln1(x)), split_heads(Wv ln1(x))))
//   y = h + W2(gelu(W1 ln2(h) + b1)) + b2
//
// Params: ln1.gamma, ln1.beta, wq, bq, wk, bk, wv, bv, wo, bo, ln2.gamma, ln2.beta,
// w1, b1, w2, b2 (weights are [in, out]). Heads are split as [16,64] -> [1,16,4,16] ->
// transpose [1,4,16,16] (batch, heads, seq, head_dim), as rlx.attention expects.
//
//   rlx-run examples/transformer_block.mlir --bench 20
func.func @main(%x: tensor<16x64xf32> {rlx.name = "x"}) -> tensor<16x64xf32> {
  // ---- attention sub-block
  %g1 = rlx.param "ln1.gamma" : tensor<64xf32>
  %be1 = rlx.param "ln1.beta" : tensor<64xf32>
  %n1 = rlx.layer_norm %x, %g1, %be1 {epsilon = 1.0e-05 : f64} : (tensor<16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<16x64xf32>

  %wq = rlx.param "wq" : tensor<64x64xf32>
  %bq = rlx.param "bq" : tensor<64xf32>
  %wk = rlx.param "wk" : tensor<64x64xf32>
  %bk = rlx.param "bk" : tensor<64xf32>
  %wv = rlx.param "wv" : tensor<64x64xf32>
  %bv = rlx.param "bv" : tensor<64xf32>
  %q0 = rlx.matmul %n1, %wq : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %q1 = rlx.add %q0, %bq : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %k0 = rlx.matmul %n1, %wk : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %k1 = rlx.add %k0, %bk : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %v0 = rlx.matmul %n1, %wv : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %v1 = rlx.add %v0, %bv : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>

  %q2 = rlx.reshape %q1 : (tensor<16x64xf32>) -> tensor<1x16x4x16xf32>
  %q = rlx.transpose %q2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  %k2 = rlx.reshape %k1 : (tensor<16x64xf32>) -> tensor<1x16x4x16xf32>
  %k = rlx.transpose %k2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  %v2 = rlx.reshape %v1 : (tensor<16x64xf32>) -> tensor<1x16x4x16xf32>
  %v = rlx.transpose %v2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>

  %a = rlx.attention %q, %k, %v {mask_kind = "none"} : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %a1 = rlx.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x16x16xf32>) -> tensor<1x16x4x16xf32>
  %a2 = rlx.reshape %a1 : (tensor<1x16x4x16xf32>) -> tensor<16x64xf32>

  %wo = rlx.param "wo" : tensor<64x64xf32>
  %bo = rlx.param "bo" : tensor<64xf32>
  %o0 = rlx.matmul %a2, %wo : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %o1 = rlx.add %o0, %bo : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %h = rlx.add %x, %o1 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>

  // ---- feed-forward sub-block
  %g2 = rlx.param "ln2.gamma" : tensor<64xf32>
  %be2 = rlx.param "ln2.beta" : tensor<64xf32>
  %n2 = rlx.layer_norm %h, %g2, %be2 {epsilon = 1.0e-05 : f64} : (tensor<16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %w1 = rlx.param "w1" : tensor<64x256xf32>
  %b1 = rlx.param "b1" : tensor<256xf32>
  %w2 = rlx.param "w2" : tensor<256x64xf32>
  %b2 = rlx.param "b2" : tensor<64xf32>
  %f0 = rlx.matmul %n2, %w1 : (tensor<16x64xf32>, tensor<64x256xf32>) -> tensor<16x256xf32>
  %f1 = rlx.add %f0, %b1 : (tensor<16x256xf32>, tensor<256xf32>) -> tensor<16x256xf32>
  %f2 = rlx.gelu %f1 : (tensor<16x256xf32>) -> tensor<16x256xf32>
  %f3 = rlx.matmul %f2, %w2 : (tensor<16x256xf32>, tensor<256x64xf32>) -> tensor<16x64xf32>
  %f4 = rlx.add %f3, %b2 : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %y = rlx.add %h, %f4 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}
