// A 2-layer MLP classifier head: x[8,64] -> (x @ w1 + b1) -> gelu -> (@ w2 + b2) -> softmax.
//
//   rlx-run examples/mlp.mlir                       # random x and weights (seeded)
//   rlx-run examples/mlp.mlir --params mlp.npz --input x=x.npy
//
// Weights are `rlx.param`s named w1, b1, w2, b2; bind them with CompiledGraph.set_param.
func.func @main(%x: tensor<8x64xf32> {rlx.name = "x"}) -> tensor<8x10xf32> {
  %w1 = rlx.param "w1" : tensor<64x128xf32>
  %b1 = rlx.param "b1" : tensor<128xf32>
  %w2 = rlx.param "w2" : tensor<128x10xf32>
  %b2 = rlx.param "b2" : tensor<10xf32>
  %h0 = rlx.matmul %x, %w1 : (tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
  %h1 = rlx.add %h0, %b1 : (tensor<8x128xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %h = rlx.gelu %h1 : (tensor<8x128xf32>) -> tensor<8x128xf32>
  %l0 = rlx.matmul %h, %w2 : (tensor<8x128xf32>, tensor<128x10xf32>) -> tensor<8x10xf32>
  %logits = rlx.add %l0, %b2 : (tensor<8x10xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %probs = rlx.softmax %logits {axis = -1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32>
  func.return %probs : tensor<8x10xf32>
}
