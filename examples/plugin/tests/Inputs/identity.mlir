func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = example.identity %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
