// RUN: rlx-opt %s --cse --dce --mlir-print-ir-before-all 2>&1 >/dev/null | filecheck %s --check-prefix=BEFORE
// RUN: rlx-opt %s --cse --dce --mlir-print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=AFTER
// RUN: rlx-opt %s --cse --dce --canonicalize --mlir-print-ir-after-change 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// RUN: rlx-opt %s --cse --dce --mlir-print-ir-after=dce 2>&1 >/dev/null | filecheck %s --check-prefix=AFTERDCE
// RUN: rlx-opt %s --cse --dce --mlir-print-ir-before=dce,cse 2>&1 >/dev/null | filecheck %s --check-prefix=BEFOREDCE
// RUN: not rlx-opt %s --dce --mlir-print-ir-before=dcee 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not rlx-opt %s --dce --mlir-print-ir-after=dce,no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN2

// mlir-opt's IR printing flags: headers name the pass; stdout keeps the final IR only.

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// BEFORE:      // -----// IR Dump Before cse //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:      %b = rlx.relu %x
// BEFORE:      // -----// IR Dump Before dce //----- //
// BEFORE-NOT:  IR Dump After

// AFTER:       // -----// IR Dump After cse //----- //
// AFTER-NOT:   %b = rlx.relu
// AFTER:       // -----// IR Dump After dce //----- //

// cse changes the IR; dce and canonicalize then have nothing left to do.
// CHANGE:      // -----// IR Dump After cse //----- //
// CHANGE-NOT:  IR Dump

// AFTERDCE-NOT: IR Dump After cse
// AFTERDCE:     // -----// IR Dump After dce //----- //
// AFTERDCE-NOT: IR Dump

// BEFOREDCE:     // -----// IR Dump Before cse //----- //
// BEFOREDCE:     // -----// IR Dump Before dce //----- //
// BEFOREDCE-NOT: IR Dump

// A pass name that is not registered is an error (as in mlir-opt), not an empty dump.
// UNKNOWN: rlx-opt: error: --mlir-print-ir-before: unknown pass 'dcee'; did you mean 'dce'?
// UNKNOWN2: rlx-opt: error: --mlir-print-ir-after: unknown pass 'no-such-pass'
