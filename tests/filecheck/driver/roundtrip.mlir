// RUN: RLX_ROUNDTRIP
// RUN: RLX_GENERIC_ROUNDTRIP

// The round-trip substitutions print the generic form, re-parse it and print the custom
// form (CHECK), or check the generic form itself (CHECK-GENERIC).

func.func @add(%a: i32, %b: i32) -> i32 {
  %sum = arith.addi %a, %b : i32
  func.return %sum : i32
}

// CHECK-LABEL: func.func @add(%a: i32, %b: i32) -> i32 {
// CHECK-NEXT:    %sum = arith.addi %a, %b : i32
// CHECK-NEXT:    func.return %sum : i32

// CHECK-GENERIC:      "func.func"() <{sym_name = "add", function_type = (i32, i32) -> i32}> ({
// CHECK-GENERIC-NEXT: ^bb0(%a: i32, %b: i32):
// CHECK-GENERIC-NEXT:   %sum = "arith.addi"(%a, %b) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32

// -----

func.func @consts() -> f32 {
  %c = arith.constant 1.5 : f32
  func.return %c : f32
}

// CHECK-LABEL: func.func @consts() -> f32 {
// CHECK-NEXT:    %c = arith.constant 1.500000e+00 : f32
