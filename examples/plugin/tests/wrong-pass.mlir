// RUN: not rlx-opt %s -p example-drop-neg --check-equivalence 2>&1 | filecheck %s
// RUN: rlx-opt %s -p example-fold-double-neg,canonicalize,fusion --check-equivalence | filecheck %s --check-prefix=GOOD
// RUN: not %python %S/Inputs/compile_hook.py %s 2>&1 | filecheck %s --check-prefix=COMPILE

// Translation validation names the deliberately wrong pass: the reference interpreter
// runs @main on seeded random inputs before and after every pass.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.relu %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// CHECK:   wrong-pass.mlir:10:3: error: check-equivalence: pass 'example-drop-neg' (seed 0) changed output 0 of @main: max error {{[0-9.e+-]+}} > tolerance 0
// CHECK-NEXT: %b = rlx.relu %a
// GOOD:    func.func @main
// COMPILE: ok: example-fold-double-neg ran in rlx.compile
// COMPILE: CompileError: {{.*}}wrong-pass.mlir:10:3: error: check-equivalence: pass 'example-drop-neg'
