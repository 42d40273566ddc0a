// RUN: not rlx-opt %s --bind-dims=batch=2 2>&1 | filecheck %s

// A symbolic size that contradicts the element count is an error after binding, never a
// silently wrong shape.
func.func @main(%x: tensor<?x8xf32> {rlx.dims = ["batch", 8]}) -> tensor<?x?xf32> {
  %r = rlx.reshape %x {rlx.dims = ["batch", "(batch+3)"]} : (tensor<?x8xf32>) -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}
// CHECK: after binding {'batch': 2}: reshape from tensor<2x8> (16 elements) to tensor<2x5> (10 elements)
