// RUN: rlx-opt %s -p convert-rlx-to-linalg --split-input-file | filecheck %s

// Pools and global pools are split over channels (batch 1): a chunk holds ~16K elements of
// the largest buffer (the input: one 112x112 plane), so 64 / 96 tasks of one channel, and
// one thread per 64K input elements. The pool kernel's inner loop runs over the output
// columns of one window tap, its range computed once per kernel column (no bounds checks).

func.func @max_pool(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> {
  %y = rlx.pool2d %x {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  func.return %y : tensor<1x64x56x56xf32>
}

// CHECK-LABEL: func.func @max_pool(
// CHECK-NEXT:    "rlx_rt.parallel_call"(%x, %out0) <{callee = @[[K:rlx_k[0-9]+]], tasks = 64 : i64, strides = array<i64: 50176, 12544>, max_threads = 12 : i64}>
// CHECK:       func.func private @[[K]](%{{.*}}: memref<1x1x112x112xf32> {llvm.noalias}, %{{.*}}: memref<1x1x56x56xf32> {llvm.noalias}) attributes {rlx.kernel = "rlx.pool2d"}
// CHECK:         scf.for
// CHECK:           arith.maximumf
// CHECK-NOT:       scf.if
// CHECK:         func.return

// -----

func.func @global_average_pool(%x: tensor<1x96x112x112xf32>) -> tensor<1x96x1x1xf32> {
  %y = rlx.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x96x112x112xf32>) -> tensor<1x96x1x1xf32>
  func.return %y : tensor<1x96x1x1xf32>
}

// CHECK-LABEL: func.func @global_average_pool(
// CHECK-NEXT:    "rlx_rt.parallel_call"(%x, %out0) <{callee = @{{rlx_k[0-9]+}}, tasks = 96 : i64, strides = array<i64: 50176, 4>, max_threads = 18 : i64}>

// -----

// Small pools keep a plain call.
func.func @small(%x: tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32> {
  %y = rlx.pool2d %x {kind = "avg", kernel = array<i64: 2, 2>} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32>
  func.return %y : tensor<1x8x8x8xf32>
}

// CHECK-LABEL: func.func @small(
// CHECK-NEXT:    func.call @{{rlx_k[0-9]+}}(%x, %out0)
