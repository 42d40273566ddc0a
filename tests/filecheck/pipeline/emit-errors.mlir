// RUN: not rlx-opt %s --emit=llvm-ir 2>&1 | filecheck %s --check-prefix=IR
// RUN: not rlx-opt %s --emit=asm 2>&1 | filecheck %s --check-prefix=ASM
// RUN: not rlx-opt %s -p convert-rlx-to-linalg,plan-memory --emit=llvm-ir 2>&1 | filecheck %s --check-prefix=LINALG
// RUN: not rlx-opt %s --emit=bitcode 2>&1 | filecheck %s --check-prefix=CHOICE
// RUN: not rlx-opt %s --lower-to-llvm --emit=asm -t llvm 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: rlx-opt %s --emit=mlir | filecheck %s --check-prefix=MLIR

// --emit=llvm-ir and --emit=asm need a module in the llvm dialect.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// IR: emit-errors.mlir: error: --emit=llvm-ir needs the llvm dialect: add --lower-to-llvm (the module still has 'func.func')
// ASM: emit-errors.mlir: error: --emit=asm needs the llvm dialect: add --lower-to-llvm (the module still has 'func.func')
// LINALG: error: --emit=llvm-ir needs the llvm dialect: add --lower-to-llvm (the module still has 'memref.global')
// CHOICE: rlx-opt: error: argument --emit: invalid choice: 'bitcode' (choose from 'mlir', 'llvm-ir', 'asm')
// TARGET: rlx-opt: error: --emit=asm cannot be combined with -t/--target llvm
// MLIR: rlx.exp
