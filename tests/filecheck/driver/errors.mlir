// RUN: not rlx-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: not rlx-opt < %s --split-input-file 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not rlx-opt - --split-input-file < %s 2>&1 | filecheck %s --check-prefix=STDIN

// Errors are `file:line:col: error: message`, then the source line and a caret; line
// numbers are those of the whole file even with --split-input-file; all chunks are
// processed and the exit code is 1. No Python traceback is printed.

func.func @parse_error(%x: i32) -> i32 {
  %0 = arith.addi %x : i32
  func.return %0 : i32
}

// CHECK:      {{.*}}errors.mlir:10:22: error: Expected ','
// CHECK-NEXT:   %0 = arith.addi %x : i32
// CHECK-NEXT:                      ^
// STDIN:      <stdin>:10:22: error: Expected ','

// -----

func.func @verify_error(%x: i64) -> i32 {
  func.return %x : i64
}

// CHECK:      {{.*}}errors.mlir:22:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i32], got [i64]
// CHECK-NEXT:   func.return %x : i64
// CHECK-NEXT:   ^
// STDIN:      <stdin>:22:3: error: 'func.return' op Expected arguments

// -----

func.func @unregistered() {
  "foo.bar"() : () -> ()
  func.return
}

// CHECK:      {{.*}}errors.mlir:33:12: error: Operation foo.bar is not registered
// STDIN:      <stdin>:33:12: error: Operation foo.bar is not registered

// CHECK-NOT:  Traceback
// STDIN-NOT:  Traceback
