// RUN: rlx-opt %s -p convert-cf-to-llvm | filecheck %s

// Successor blocks get LLVM-typed arguments (index -> i64, memref -> !llvm.ptr); operands
// whose producers are not lowered yet are bridged with unrealized casts.
func.func @loop(%n: index, %m: memref<4xf32>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^header(%c0, %m : index, memref<4xf32>)
^header(%i: index, %buf: memref<4xf32>):
  %cond = arith.cmpi slt, %i, %n : index
  cf.cond_br %cond, ^body, ^exit(%i : index)
^body:
  %next = arith.addi %i, %c1 : index
  cf.br ^header(%next, %buf : index, memref<4xf32>)
^exit(%r: index):
  func.return %r : index
}

// CHECK-LABEL: func.func @loop
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C0I:.*]] = builtin.unrealized_conversion_cast %[[C0]] : index to i64
// CHECK-NEXT:    %[[MP:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4xf32> to !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[HEADER:.*]](%[[C0I]], %[[MP]] : i64, !llvm.ptr)
// CHECK-NEXT:  ^[[HEADER]](%[[I:.*]]: i64, %[[BUF:.*]]: !llvm.ptr):
// CHECK-DAG:     %{{.*}} = builtin.unrealized_conversion_cast %[[BUF]] : !llvm.ptr to memref<4xf32>
// CHECK-DAG:     %[[II:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK:         %[[COND:.*]] = arith.cmpi slt, %[[II]], %{{.*}} : index
// CHECK:         llvm.cond_br %[[COND]], ^{{.*}}, ^[[EXIT:.*]](%[[I]] : i64)
// CHECK:         llvm.br ^[[HEADER]](%{{.*}}, %[[BUF]] : i64, !llvm.ptr)
// CHECK-NEXT:  ^[[EXIT]](%[[R:.*]]: i64):
// CHECK-NEXT:    %[[RI:.*]] = builtin.unrealized_conversion_cast %[[R]] : i64 to index
// CHECK-NEXT:    func.return %[[RI]] : index
