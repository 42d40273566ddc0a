// RUN: rlx-opt %s -p convert-scf-to-cf --split-input-file --verify-diagnostics

// A loop hint must be a positive integer count.
func.func @zero(%n: index, %m: memref<64xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{convert-scf-to-cf: rlx.interleave must be an integer >= 1, got 0 : i64}}
  scf.for %j = %c0 to %n step %c1 {
    memref.store %x, %m[%j] : memref<64xf32>
  } {rlx.interleave = 0 : i64}
  func.return
}

// -----

func.func @not_a_count(%n: index, %m: memref<64xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{convert-scf-to-cf: rlx.interleave must be an integer >= 1, got "two"}}
  scf.for %j = %c0 to %n step %c1 {
    memref.store %x, %m[%j] : memref<64xf32>
  } {rlx.interleave = "two"}
  func.return
}
