// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s
// RUN: rlx-opt %s --canonicalize --dce --fusion --kernel-dispatch --check-equivalence | filecheck %s --check-prefix=EQ

// rlx.if -> scf.if on the loaded condition; each region's kernels are called in its
// block, temporaries are allocated before the scf.if, values computed in a region land in
// the result (here output) buffers directly and an enclosing value or a view is copied.
// The gather's status site is set only in the region that runs it.
// CHECK-LABEL: func.func @main(
// CHECK:         %[[C:.*]] = memref.load %c[] : memref<i1>
// CHECK-NEXT:    %[[TMP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    %[[Z:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
// CHECK-NEXT:    scf.if %[[C]] {
// CHECK-NEXT:      func.call @{{.*}}(%x, %[[TMP]])
// CHECK-NEXT:      func.call @{{.*}}(%[[TMP]], %out0)
// CHECK-NEXT:      memref.store %{{.*}}, %status
// CHECK-NEXT:      func.call @{{.*}}(%x, %i, %out1, %status)
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @{{.*}}(%x, %[[Z]])
// CHECK-NEXT:      func.call @{{.*}}(%[[Z]], %[[M]])
// CHECK-NEXT:      func.call @{{.*}}(%[[M]], %out1)
// CHECK-NEXT:      func.call @{{.*}}(%x, %out0)
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %[[TMP]] : memref<4xf32>
// CHECK-NEXT:    memref.dealloc %[[Z]] : memref<2xf32>
// CHECK-NEXT:    memref.dealloc %[[M]] : memref<2xf32>
// CHECK-NEXT:    func.return

// Passes rewrite inside the regions (exp+neg fuse in the then region, neg(neg) cancels in
// the else region) and the reference interpreter finds them equivalent.
// EQ-LABEL: func.func @main
// EQ:         rlx.if %c
// EQ:           rlx.elementwise_region
// EQ:           rlx.gather
// EQ:         } else {
// EQ-NEXT:      %{{.*}} = rlx.slice
// EQ-NEXT:      rlx.yield
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>, %i: tensor<2xi64>) -> (tensor<4xf32>, tensor<2xf32>) {
  %r, %s = rlx.if %c : tensor<i1> -> (tensor<4xf32>, tensor<2xf32>) {
    %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %n = rlx.neg %e : (tensor<4xf32>) -> tensor<4xf32>
    %g = rlx.gather %x, %i {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
    rlx.yield %n, %g : tensor<4xf32>, tensor<2xf32>
  } else {
    %z = rlx.slice %x {starts = array<i64: 0>, limits = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
    %m = rlx.neg %z : (tensor<2xf32>) -> tensor<2xf32>
    %m2 = rlx.neg %m : (tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %x, %m2 : tensor<4xf32>, tensor<2xf32>
  }
  func.return %r, %s : tensor<4xf32>, tensor<2xf32>
}
