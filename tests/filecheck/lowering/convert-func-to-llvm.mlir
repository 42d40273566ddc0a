// RUN: rlx-opt %s -p convert-func-to-llvm --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'convert-func-to-llvm{entry-align=0 noalias=false}' --split-input-file | filecheck %s --check-prefix=PLAIN
// RUN: rlx-opt %s -p 'convert-func-to-llvm{private-noinline=true}' --split-input-file | filecheck %s --check-prefix=NOINLINE

// Public definitions promise distinct, aligned, fully dereferenceable buffers.
func.func @entry(%a: memref<4x8xf32>, %b: memref<2x3xf32, strided<[8, 1], offset: 3>>, %n: index, %x: f32) {
  func.return
}

// CHECK-LABEL: llvm.func @entry(
// CHECK-SAME:    %{{.*}}: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 128 : i64},
// CHECK-SAME:    %{{.*}}: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 56 : i64},
// CHECK-SAME:    %{{.*}}: i64, %{{.*}}: f32)
// CHECK-NEXT:    llvm.return

// PLAIN-LABEL: llvm.func @entry(
// PLAIN-SAME:    %{{.*}}: !llvm.ptr {llvm.dereferenceable = 128 : i64}

// -----

// Private functions are internal and get no promises; calls and results are lowered.
func.func private @helper(%a: memref<4xf32>, %i: index) -> (f32, index) {
  %v = memref.load %a[%i] : memref<4xf32>
  func.return %v, %i : f32, index
}
func.func @caller(%a: memref<4xf32>, %k: index) -> f32 {
  %v, %j = func.call @helper(%a, %k) : (memref<4xf32>, index) -> (f32, index)
  func.return %v : f32
}
func.func private @external(memref<4xf32>) -> memref<4xf32>

// CHECK-LABEL: llvm.func internal @helper(
// CHECK-SAME:    %[[A:.*]]: !llvm.ptr, %[[I:.*]]: i64) -> !llvm.struct<(f32, i64)>
// CHECK-NEXT:    %[[I2:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK-NEXT:    %[[A2:.*]] = builtin.unrealized_conversion_cast %[[A]] : !llvm.ptr to memref<4xf32>
// CHECK-NEXT:    %[[V:.*]] = memref.load %[[A2]][%[[I2]]] : memref<4xf32>
// CHECK-NEXT:    %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, i64)>
// CHECK-NEXT:    %[[S0:.*]] = llvm.insertvalue %[[V]], %[[U]][0] : !llvm.struct<(f32, i64)>
// CHECK-NEXT:    %[[S1:.*]] = llvm.insertvalue %[[I]], %[[S0]][1] : !llvm.struct<(f32, i64)>
// CHECK-NEXT:    llvm.return %[[S1]] : !llvm.struct<(f32, i64)>

// CHECK-LABEL: llvm.func @caller(
// CHECK:         %[[R:.*]] = llvm.call @helper(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> !llvm.struct<(f32, i64)>
// CHECK-NEXT:    %[[V:.*]] = llvm.extractvalue %[[R]][0] : !llvm.struct<(f32, i64)>
// CHECK-NEXT:    %{{.*}} = llvm.extractvalue %[[R]][1] : !llvm.struct<(f32, i64)>
// CHECK-NEXT:    llvm.return %[[V]] : f32

// CHECK: llvm.func @external(!llvm.ptr) -> !llvm.ptr

// NOINLINE: llvm.func internal @helper({{.*}} attributes {passthrough = ["noinline"]}
// NOINLINE: llvm.func @caller(
// NOINLINE-NOT: noinline
