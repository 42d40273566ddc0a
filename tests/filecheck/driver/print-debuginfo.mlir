// RUN: rlx-opt %s --print-debuginfo | filecheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt --print-debuginfo | filecheck %s --check-prefix=STDIN
// RUN: rlx-opt %s --cse --print-debuginfo | filecheck %s --check-prefix=CSE

// Every parsed op records where its text starts; --print-debuginfo shows it. An explicit
// loc(...) in the input is kept. The implicit module is at line 0, as in MLIR.

func.func @f(%x: i32) -> i32 {
  %0 = arith.addi %x, %x : i32
    %1 = arith.muli %0, %0 : i32 loc("model.py":12:5)
  func.return %1 : i32
}

// CHECK:      func.func @f(%x: i32 loc(unknown)) -> i32 {
// CHECK-NEXT:   %0 = arith.addi %x, %x : i32 loc("{{.*}}print-debuginfo.mlir":9:3)
// CHECK-NEXT:   %1 = arith.muli %0, %0 : i32 loc("model.py":12:5)
// CHECK-NEXT:   func.return %1 : i32 loc("{{.*}}print-debuginfo.mlir":11:3)
// CHECK-NEXT: } loc("{{.*}}print-debuginfo.mlir":8:1)
// CHECK-NEXT: } loc("{{.*}}print-debuginfo.mlir":0:0)

// STDIN:      arith.addi %x, %x : i32 loc("<stdin>":

// Ops kept by a pass keep their location.
// CSE:        arith.addi %x, %x : i32 loc("{{.*}}print-debuginfo.mlir":9:3)
