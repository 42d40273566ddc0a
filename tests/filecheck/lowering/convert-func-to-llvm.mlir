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

// -----

// rlx_rt.parallel_call: the operands' base pointers go to a stack array, the task function
// (one per callee and strides) walks its task range calling the chunk kernel with each
// pointer advanced by task * stride bytes (stride 0: the same pointer), and the runtime's
// rlx_parallel_for(task, ctx, tasks, max_threads) runs it.

func.func private @chunk(%a: memref<16x8xf32>, %b: memref<8xf32>, %c: memref<16x8xf32>)

func.func @parallel(%x: memref<64x8xf32>, %b: memref<8xf32>, %y: memref<64x8xf32>) {
  "rlx_rt.parallel_call"(%x, %b, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512, 0, 512>, max_threads = 2 : i64}> : (memref<64x8xf32>, memref<8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// CHECK-LABEL: llvm.func @parallel(
// CHECK:         %[[N:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.alloca %[[N]] x !llvm.ptr {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr inbounds %[[CTX]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %x, %[[S0]]
// CHECK:         llvm.store %b,
// CHECK:         llvm.store %y,
// CHECK-NEXT:    %[[TASK:.*]] = llvm.mlir.addressof @chunk_task_512_0_512 : !llvm.ptr
// CHECK-NEXT:    %[[T:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[M:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    llvm.call @rlx_parallel_for(%[[TASK]], %[[CTX]], %[[T]], %[[M]]) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-LABEL: llvm.func internal @chunk_task_512_0_512(
// CHECK-SAME:      %[[C:.*]]: !llvm.ptr, %[[B:.*]]: i64, %[[E:.*]]: i64) {
// CHECK:         %[[PX:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[PB:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[PY:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%[[B]] : i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[LT:.*]] = llvm.icmp "slt" %[[I]], %[[E]] : i64
// CHECK-NEXT:    llvm.cond_br %[[LT]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK:         %[[OX:.*]] = llvm.mul %[[I]], %{{.*}} overflow<nsw> : i64
// CHECK-NEXT:    %[[AX:.*]] = llvm.getelementptr inbounds %[[PX]][%[[OX]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[AY:.*]] = llvm.getelementptr inbounds %[[PY]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.call @chunk(%[[AX]], %[[PB]], %[[AY]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK:         llvm.br ^[[HEAD]](%{{.*}} : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.func @rlx_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)
