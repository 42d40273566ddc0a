// RUN: rlx-opt %s -p 'convert-rlx-to-linalg{stream-bytes=4799}' | filecheck %s
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg{stream-bytes=0}' | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg{stream-bytes=4801}' | filecheck %s --check-prefix=OFF
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg{stream-bytes=4800}' | filecheck %s --check-prefix=OFF
// RUN: not rlx-opt %s -p 'convert-rlx-to-linalg{stream-bytes=-2}' 2>&1 | filecheck %s --check-prefix=BAD

// A result of at least stream-bytes bytes (here 2x600 f32 = 4800) whose op moves more than
// twice that (operands and result: 9600) is stored through an L1 stage: the row is computed in blocks into a stack buffer, whole 64-byte lines go out
// with non-temporal vector stores from the first aligned element on, the rest ordinarily;
// on x86 the worker ends with sfence. A smaller result, a working set of at most twice
// stream-bytes (it stays in cache) or stream-bytes=0 store directly.
func.func @main(%x: tensor<2x600xf32>) -> tensor<2x600xf32> {
  %0 = rlx.exp %x : (tensor<2x600xf32>) -> tensor<2x600xf32>
  func.return %0 : tensor<2x600xf32>
}

// CHECK:       func.func private @{{.*}}(%{{.*}}: memref<5xi64> {llvm.noalias}, %[[IN:.*]]: memref<2147483647xf32> {llvm.noalias}, %[[OUT:.*]]: memref<2147483647xf32> {llvm.noalias}) attributes {rlx.kernel = "rlx.exp (any shape)"}
// CHECK:         %[[STAGE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
// CHECK:         "memref.extract_aligned_pointer_as_index"(%[[OUT]])
// CHECK:         scf.for %[[END:.*]] = %[[HEAD:.*]] to %{{.*}} step %{{.*}} {
// CHECK:           scf.for
// CHECK:             %[[V:.*]] = math.exp %{{.*}} : f32
// CHECK-NEXT:        memref.store %[[V]], %[[STAGE]][%{{.*}}] : memref<1024xf32>
// CHECK:           scf.for
// CHECK:             %[[W:.*]] = llvm.load %{{.*}} {alignment = 64 : i64} : !llvm.ptr -> vector<8xi64>
// CHECK-NEXT:        llvm.store %[[W]], %{{.*}} {alignment = 64 : i64, nontemporal} : vector<8xi64>, !llvm.ptr
// CHECK:           scf.for
// CHECK:             %[[T:.*]] = memref.load %[[STAGE]][%{{.*}}] : memref<1024xf32>
// CHECK:             memref.store %[[T]], %[[OUT]][%{{.*}}] : memref<2147483647xf32>
// CHECK:         {{llvm.call_intrinsic "llvm.x86.sse.sfence"\(\) : \(\) -> \(\)|func.return}}

// OFF-NOT:     nontemporal
// OFF-NOT:     sfence
// OFF:         math.exp
// OFF-NEXT:    memref.store
// OFF-NOT:     nontemporal
// OFF-NOT:     sfence

// BAD: error: convert-rlx-to-linalg: stream-bytes must be >= -1, got -2
