// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s --check-prefix=LINALG
// RUN: rlx-opt %s -p convert-rlx-to-linalg,plan-memory | filecheck %s --check-prefix=PLAN
// RUN: rlx-opt %s --lower-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --lower-to-llvm --emit=llvm-ir | filecheck %s --check-prefix=IR

// Every stage of a row sum of squares: each row's sum is carried in a register (scf.for
// iter_args) and accumulates with reassoc fastmath,
// which is what lets LLVM vectorize it (see asm-reduction.mlir).

func.func @main(%x: tensor<8x64xf32>) -> tensor<8xf32> {
  %sq = rlx.mul %x, %x : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %s = rlx.reduce %sq {kind = "sum", axes = array<i64: -1>} : (tensor<8x64xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}

// LINALG-LABEL: func.func @main(
// LINALG-SAME:    %x: memref<8x64xf32> {rlx.kind = "input", rlx.name = "arg0"}
// LINALG-SAME:    %out0: memref<8xf32> {rlx.kind = "output", rlx.name = "out0"})
// LINALG:         func.call @[[MUL:rlx_k[0-9]+]](%x, %x, %[[SQ:[^)]+]])
// LINALG-NEXT:    func.call @[[RED:rlx_k[0-9]+]](%[[SQ]], %out0)
// LINALG:       func.func private @[[RED]](%[[IN:.*]]: memref<8x64xf32>, %[[OUT:.*]]: memref<8xf32>) attributes {rlx.kernel = "rlx.reduce"}
// LINALG-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LINALG:         scf.for
// LINALG-NEXT:      scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// LINALG:             arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32

// PLAN-LABEL: func.func @main(
// PLAN-SAME:    %arena: memref<2048xi8> {rlx.kind = "arena", rlx.name = "arena"})
// PLAN-SAME:    attributes {rlx.arena_bytes = 2048 : i64, rlx.unplanned_bytes = 2048 : i64, rlx.arena_alignment = 64 : i64}
// PLAN:         %[[SQ:.*]] = memref.view %arena[%{{.*}}][] : memref<2048xi8> to memref<8x64xf32>
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%x, %x, %[[SQ]])
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%[[SQ]], %out0)

// LLVM-LABEL: llvm.func @main(
// LLVM-SAME:    %x: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 2048 : i64}
// LLVM-SAME:    %out0: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 32 : i64}
// LLVM-SAME:    %arena: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 2048 : i64})
// LLVM:         llvm.call @{{rlx_k[0-9]+}}(%x, %x, %[[SQ:[^)]+]]) :
// LLVM-NEXT:    llvm.call @[[RED:rlx_k[0-9]+]](%[[SQ]], %out0)
// LLVM:       llvm.func internal @[[RED]](
// LLVM:         llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// LLVM-NOT:   linalg.
// LLVM-NOT:   builtin.unrealized_conversion_cast

// IR-LABEL: define void @main(ptr noalias dereferenceable(2048) %{{.*}}, ptr noalias align 64 dereferenceable(32) %{{.*}}, ptr noalias align 64 dereferenceable(2048) %{{.*}}) nounwind {
// IR:         fmul contract float
// IR:         fadd reassoc contract float

