// RUN: RLX_VERIFY_DIAG | filecheck %s
// RUN: rlx-opt %S/Inputs/pass-failure.mlir --transform-interpreter --verify-diagnostics

// MLIR-style expectations: every diagnostic must be expected, every expectation must be
// met, or rlx-opt exits 1. Chunks with errors print nothing; the others print their IR.

// CHECK:      func.func @fine
// CHECK:      // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @also_fine

func.func @fine(%x: i32) -> i32 {
  func.return %x : i32
}

// -----

// Parse error, designator relative to the directive line.
func.func @parse_error(%x: i32) -> i32 {
  // expected-error @+1 {{Expected ','}}
  %0 = arith.addi %x : i32
  func.return %0 : i32
}

// -----

// Verifier error of an op, directive on the same line as the op.
func.func @verify_same_line(%x: i32) -> i32 {
  %0 = "arith.addi"(%x, %x) : (i32, i32) -> i64 // expected-error {{attribute i32 expected from variable 'T', but got i64}}
  func.return %x : i32
}

// -----

// Verifier error of a nested op, directive below the op.
func.func @verify_minus(%x: i64) -> i32 {
  func.return %x : i64
  // expected-error @-1 {{Expected arguments to have the same types as the function output types}}
}

// -----

// @below / @above: the next / previous line that holds no expected-* directive.
func.func @below(%x: i64) -> i32 {
  // expected-error-re @below {{function output types: expected {{\[}}i32], got {{.*}}}}
  func.return %x : i64
}

// -----

func.func @above(%x: i64) -> i32 {
  func.return %x : i64
  // expected-error @above {{same types as the function output types}}
}

// -----

// A value used but never defined is reported at its first use.
func.func @undefined() -> i32 {
  // expected-error @+1 {{values used but not defined: [%nope]}}
  func.return %nope : i32
}

// -----

// A verifier error while an attribute is built is reported at its op.
func.func @attr_error() {
  // expected-error @+1 {{Integer value 300 is out of range for type i8}}
  %0 = arith.constant 300 : i8
  func.return
}

// -----

// Regex expectations: literal text with embedded {{regex}} pieces.
func.func @regex(%x: i32) -> i32 {
  // expected-error-re @+1 {{attribute i{{[0-9]+}} expected from variable 'T'}}
  %0 = "arith.muli"(%x, %x) : (i32, i32) -> i16
  func.return %x : i32
}

// -----

func.func @also_fine() {
  func.return
}
