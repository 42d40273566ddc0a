// RUN: rlx-opt %s --cse --test-constant-folding --print-ir-after-all 2>%t.err | filecheck %s --check-prefix=OUT
// RUN: filecheck %s < %t.err
// RUN: rlx-opt %s --cse --print-ir-after-all --print-op-generic 2>&1 >/dev/null | filecheck %s --check-prefix=GENERIC

// --print-ir-after-all prints the module to stderr after every pass, after a header line
// as mlir-opt does; stdout still gets the final IR only.

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 1 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}

// CHECK:      // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f() -> i32 {
// CHECK-NEXT:     %a = arith.constant 1 : i32
// CHECK-NEXT:     %c = arith.addi %a, %a : i32
// CHECK:      // -----// IR Dump After test-constant-folding //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f() -> i32 {
// CHECK:          %c = arith.constant 2 : i32

// OUT-NOT:    IR Dump
// OUT:        arith.constant 2 : i32
// OUT-NOT:    IR Dump

// GENERIC:      // -----// IR Dump After cse //----- //
// GENERIC-NEXT: "builtin.module"() ({
