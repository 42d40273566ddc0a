// RUN: rlx-opt %s -t mlir | filecheck %s --check-prefix=MLIR
// RUN: rlx-opt %s --lower-to-llvm -t llvm | filecheck %s --check-prefix=LLVM
// RUN: not rlx-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=NOTLOWERED
// RUN: not rlx-opt %s -t wgsl 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not rlx-opt %s -t x86-asm 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not rlx-opt %s -t riscv-asm 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not rlx-opt %s -t wat 2>&1 | filecheck %s --check-prefix=BAD
// RUN: rlx-opt --help | filecheck %s --check-prefix=HELP

// -t offers only the targets that work on rlx input: mlir, llvm (= --emit=llvm-ir) and
// asm (= --emit=asm); any other is a one-line usage error, never an internal error.

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = rlx.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// MLIR:       rlx.relu
// LLVM:       define void @main(
// NOTLOWERED: error: --emit=llvm-ir needs the llvm dialect: add --lower-to-llvm
// BAD:        rlx-opt: error: argument -t/--target: invalid choice: '{{.*}}' (choose from mlir, llvm, asm)
// BAD-NOT:    internal error
// HELP:       output format: asm, llvm, mlir (default: mlir)
