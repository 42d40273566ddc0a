// RUN: not rlx-opt %S/Inputs/verify-mismatch.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// Unmet expectations and unexpected diagnostics are reported MLIR-style, with the source
// line and a caret, and rlx-opt exits 1 (`not`). The input is in Inputs/ so that the
// expected-* directives it holds do not appear in this file's CHECK lines.

// CHECK:      verify-mismatch.mlir:30:6: error: malformed 'expected-error' directive
// CHECK-NEXT: // expected-error @+1 {missing braces}
// CHECK-NEXT:      ^

// CHECK:      verify-mismatch.mlir:2:3: error: unexpected error: 'arith.addi' op result 'result' at position 0 does not verify:
// CHECK-NEXT: attribute i32 expected from variable 'T', but got i64
// CHECK-NEXT:   %0 = "arith.addi"(%x, %x) : (i32, i32) -> i64
// CHECK-NEXT:   ^

// CHECK:      verify-mismatch.mlir:9:6: error: expected error "this message is never emitted" was not produced
// CHECK-NEXT:   // expected-error @+1 {{[{][{]}}this message is never emitted}}
// CHECK-NEXT:      ^

// CHECK:      verify-mismatch.mlir:17:3: error: unexpected error: 'func.return' op Expected arguments to have the same types as the function output types
// CHECK:      verify-mismatch.mlir:16:6: error: expected error "same types as the function output types" was not produced

// CHECK:      verify-mismatch.mlir:24:3: error: 'error' diagnostic emitted when expecting a 'warning'

// CHECK-NOT:  error:
