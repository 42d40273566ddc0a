// RUN: rlx-opt %s --split-input-file | filecheck %s
// RUN: rlx-opt %s --split-input-file --cse | filecheck %s --check-prefix=CSE

// Each chunk is parsed, transformed and printed on its own; the outputs are joined by
// `// -----`. A chunk that holds only comments is an empty module.

func.func @first() {
  func.return
}

// -----

// This chunk holds only comments.

// -----

func.func @dup() -> (i32, i32) {
  %a = arith.constant 1 : i32
  %b = arith.constant 1 : i32
  func.return %a, %b : i32, i32
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @first() {
// CHECK:      // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: }
// CHECK:      // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @dup() -> (i32, i32) {
// CHECK-NEXT:     %a = arith.constant 1 : i32
// CHECK-NEXT:     %b = arith.constant 1 : i32

// CSE:      func.func @dup() -> (i32, i32) {
// CSE-NEXT:   %a = arith.constant 1 : i32
// CSE-NEXT:   func.return %a, %a : i32, i32
