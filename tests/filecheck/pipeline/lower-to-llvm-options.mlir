// RUN: rlx-opt %s --lower-to-llvm | filecheck %s
// RUN: rlx-opt %s --lower-to-llvm=256 | filecheck %s --check-prefix=ALIGN
// RUN: rlx-opt %s -p 'lower-to-llvm{alignment=256}' | filecheck %s --check-prefix=ALIGN
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg,plan-memory{alignment=256},convert-linalg-to-loops,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts' | filecheck %s --check-prefix=ALIGN
// RUN: rlx-opt %s --lower-to-llvm --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: not rlx-opt %s --lower-to-llvm=3 2>&1 | filecheck %s --check-prefix=BAD

// `lower-to-llvm` is convert-rlx-to-linalg, plan-memory{alignment}, then LOOPS_TO_LLVM;
// its main option is plan-memory's alignment: %b is placed after %a at the next multiple.

func.func @main(%x: tensor<10xf32>) -> tensor<10xf32> {
  %a = rlx.exp %x : (tensor<10xf32>) -> tensor<10xf32>
  %b = rlx.exp %a : (tensor<10xf32>) -> tensor<10xf32>
  %c = rlx.add %a, %b : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  func.return %c : tensor<10xf32>
}

// CHECK:      llvm.func @main(
// CHECK-SAME:   %arena: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 128 : i64})
// CHECK:        llvm.mlir.constant(64) : i64
// CHECK-NEXT:   llvm.getelementptr inbounds %arena[

// ALIGN:      llvm.func @main(
// ALIGN-SAME:   %arena: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 512 : i64})
// ALIGN:        llvm.mlir.constant(256) : i64
// ALIGN-NEXT:   llvm.getelementptr inbounds %arena[

// --print-ir-after-all shows the whole lowering as one pass.
// DUMP:     // -----// IR Dump After lower-to-llvm //----- //
// DUMP-NEXT: builtin.module {
// DUMP-NEXT:   llvm.mlir.global private constant @rlx_table0(
// DUMP:        llvm.func @main(
// DUMP-NOT: IR Dump After

// BAD: error: plan-memory: alignment must be a power of two, got 3
