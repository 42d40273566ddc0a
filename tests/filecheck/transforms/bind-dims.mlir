// RUN: rlx-opt %s --split-input-file --bind-dims=batch=2,seq=4 | filecheck %s
// RUN: rlx-opt %s --split-input-file -p 'bind-dims{dims="batch=3"}' | filecheck %s --check-prefix=PARTIAL

// Named dims become static and every result type is re-inferred, including a reshape
// with one dynamic dim and the function type.
func.func @main(%x: tensor<?x?x8xf32> {rlx.dims = ["batch", "seq", 8]}, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  %h = rlx.matmul %x, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %r = rlx.reshape %h : (tensor<?x?x16xf32>) -> tensor<?x16xf32>
  %s = rlx.softmax %r {axis = -1 : i64} : (tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return %s : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-SAME: %x: tensor<2x4x8xf32>
// CHECK-SAME: -> tensor<8x16xf32>
// CHECK: rlx.matmul {{.*}} -> tensor<2x4x16xf32>
// CHECK: rlx.reshape {{.*}} -> tensor<8x16xf32>
// CHECK: rlx.softmax {{.*}} -> tensor<8x16xf32>

// A partial binding leaves the other dims dynamic.
// PARTIAL-LABEL: func.func @main
// PARTIAL-SAME: %x: tensor<3x?x8xf32>
// PARTIAL: rlx.matmul {{.*}} -> tensor<3x?x16xf32>

// -----

// Arguments without rlx.dims are untouched.
func.func @static(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @static(%x: tensor<2x8xf32>) -> tensor<2x8xf32>

// -----

// Reshape / broadcast_to results with several dynamic dims take their sizes from the
// `rlx.dims` expressions over the bound names (written by the ONNX importer).
func.func @sym(%x: tensor<?x?x8xf32> {rlx.dims = ["batch", "seq", 8]}) -> tensor<?x?x2x4xf32> {
  %r = rlx.reshape %x {rlx.dims = ["batch", "seq", 2 : i64, 4 : i64]} : (tensor<?x?x8xf32>) -> tensor<?x?x2x4xf32>
  func.return %r : tensor<?x?x2x4xf32>
}
// CHECK-LABEL: func.func @sym
// CHECK: rlx.reshape {{.*}} -> tensor<2x4x2x4xf32>
// PARTIAL-LABEL: func.func @sym
// PARTIAL: rlx.reshape {{.*}} -> tensor<3x?x2x4xf32>

// -----

func.func @symexpr(%x: tensor<?x?xf32> {rlx.dims = ["batch", "seq"]}) -> tensor<?xf32> {
  %r = rlx.reshape %x {rlx.dims = ["(batch*seq)"]} : (tensor<?x?xf32>) -> tensor<?xf32>
  func.return %r : tensor<?xf32>
}
// CHECK-LABEL: func.func @symexpr
// CHECK: rlx.reshape {{.*}} -> tensor<8xf32>
