// RUN: rlx-opt %s -p example-fold-double-neg | filecheck %s
// RUN: rlx-opt %s --example-fold-double-neg | filecheck %s
// RUN: rlx-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: rlx-opt %S/Inputs/lone-neg.mlir -p 'example-fold-double-neg{strict=true}' --verify-diagnostics
// RUN: not rlx-opt %S/Inputs/lone-neg.mlir -p 'example-fold-double-neg{strict=true}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: xdsl-opt %S/Inputs/identity.mlir -p example-fold-double-neg | filecheck %s --check-prefix=XDSL

// The installed plugin (entry point `xdsl.universe`) adds its pass and its dialect to
// rlx-opt, and to unmodified xdsl-opt, with no edit to rlx.

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = example.identity %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// LIST: example-fold-double-neg {{ *}}[plugin]  Fold rlx.neg(rlx.neg(x)) to x and remove example.identity ops.
// LIST: example-fold-double-neg {{ *}}strict: bool = false  (fail at an rlx.neg that cannot be folded)
// ERR:  lone-neg.mlir:5:3: error: lone rlx.neg: nothing to fold (strict=true)
// XDSL: func.return %x : tensor<4xf32>
