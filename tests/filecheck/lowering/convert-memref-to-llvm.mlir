// RUN: rlx-opt %s -p convert-memref-to-llvm --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'convert-memref-to-llvm{max-alloca-bytes=0}' --split-input-file | filecheck %s --check-prefix=HEAP

// Accesses linearise offset + sum(i_k * stride_k) into one inbounds GEP.
func.func @load_store(%a: memref<4x8xf32>, %s: memref<2x3xf32, strided<[16, 2], offset: 5>>, %i: index, %j: index) {
  %v = memref.load %a[%i, %j] : memref<4x8xf32>
  memref.store %v, %s[%i, %j] : memref<2x3xf32, strided<[16, 2], offset: 5>>
  func.return
}

// CHECK-LABEL: func.func @load_store
// CHECK:         %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4x8xf32> to !llvm.ptr
// CHECK-NEXT:    %[[I:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[J:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[C8:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[M:.*]] = llvm.mul %[[I]], %[[C8]] overflow<nsw> : i64
// CHECK-NEXT:    %[[L:.*]] = llvm.add %[[M]], %[[J]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[L]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[C16:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[M2:.*]] = llvm.mul %{{.*}}, %[[C16]] overflow<nsw> : i64
// CHECK-NEXT:    %[[C2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[M3:.*]] = llvm.mul %{{.*}}, %[[C2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[M2]], %[[M3]] overflow<nsw> : i64
// CHECK-NEXT:    %[[C5:.*]] = llvm.mlir.constant(5) : i64
// CHECK-NEXT:    %[[O:.*]] = llvm.add %[[S]], %[[C5]] overflow<nsw> : i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[O]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[V]], %[[Q]] {alignment = 4 : i64} : f32, !llvm.ptr

// -----

// Views are free: a subview forwards the base pointer and its type carries the layout.
func.func @subview(%a: memref<6x8xf32>) -> f32 {
  %s = memref.subview %a[1, 2] [2, 3] [2, 1] : memref<6x8xf32> to memref<2x3xf32, strided<[16, 1], offset: 10>>
  %c1 = arith.constant 1 : index
  %v = memref.load %s[%c1, %c1] : memref<2x3xf32, strided<[16, 1], offset: 10>>
  func.return %v : f32
}

// CHECK-LABEL: func.func @subview
// CHECK:         %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<6x8xf32> to !llvm.ptr
// CHECK-NOT:     memref.subview
// CHECK:         llvm.getelementptr inbounds %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32

// -----

// Small local allocs live on the stack (entry block); big ones use aligned_alloc/free.
// memref.view is a byte GEP into the arena.
func.func @buffers(%x: f32, %i: index) {
  %arena = memref.alloc() : memref<1024xi8>
  %c64 = arith.constant 64 : index
  %t = memref.view %arena[%c64][] : memref<1024xi8> to memref<16xf32>
  memref.store %x, %t[%i] : memref<16xf32>
  %big = memref.alloc() : memref<65536xf32>
  memref.store %x, %big[%i] : memref<65536xf32>
  memref.dealloc %big : memref<65536xf32>
  memref.dealloc %arena : memref<1024xi8>
  func.return
}

// CHECK-LABEL: func.func @buffers
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(1024) : i64
// CHECK-NEXT:    %[[ARENA:.*]] = llvm.alloca %[[N]] x i8 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[T:.*]] = llvm.getelementptr inbounds %[[ARENA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.getelementptr inbounds %[[T]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[AL:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[SZ:.*]] = llvm.mlir.constant(262144) : i64
// CHECK-NEXT:    %[[BIG:.*]] = llvm.call @aligned_alloc(%[[AL]], %[[SZ]]) : (i64, i64) -> !llvm.ptr
// CHECK:         llvm.call @free(%[[BIG]]) : (!llvm.ptr) -> ()
// CHECK-NOT:     llvm.call @free
// CHECK:         func.return
// CHECK-DAG:   llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @free(!llvm.ptr)

// HEAP-LABEL: func.func @buffers
// HEAP-NOT:     llvm.alloca
// HEAP-COUNT-2: llvm.call @free

// -----

// Constant tensors: private constant globals with their dense initializer.
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2x2xf32>,
  initial_value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>, constant}> : () -> ()
func.func @global() -> f32 {
  %g = memref.get_global @w : memref<2x2xf32>
  %c1 = arith.constant 1 : index
  %v = memref.load %g[%c1, %c1] : memref<2x2xf32>
  func.return %v : f32
}

// CHECK:       llvm.mlir.global private constant @w(dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<4 x f32>
// CHECK-LABEL: func.func @global
// CHECK-NEXT:    %[[G:.*]] = llvm.mlir.addressof @w : !llvm.ptr
