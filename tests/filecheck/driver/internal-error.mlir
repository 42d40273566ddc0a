// RUN: not rlx-opt %s --convert-linalg-to-loops 2>&1 | filecheck %s

// An exception that is not a diagnostic (here a NotImplementedError raised by an
// upstream pattern) is an internal error: one message, a hint, exit code 2, no traceback
// (set RLX_DEBUG=1 to see it).

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK:      rlx-opt: internal error (while running pass 'convert-linalg-to-loops'): NotImplementedError: lowering for linalg.add with tensor results not yet supported
// CHECK-NEXT: rlx-opt: This is a bug in rlx-opt or in one of its passes
// CHECK-NEXT: rlx-opt: set RLX_DEBUG=1 to see the Python traceback.
// CHECK-NOT:  Traceback
