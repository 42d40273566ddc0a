// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s --check-prefix=LINALG
// RUN: rlx-opt %s -p convert-rlx-to-linalg,plan-memory | filecheck %s --check-prefix=PLAN
// RUN: rlx-opt %s --lower-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --lower-to-llvm --emit=llvm-ir | filecheck %s --check-prefix=IR

// Every stage of a matmul followed by a relu (the product is the arena intermediate).

func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %m = rlx.matmul %a, %b : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  %r = rlx.relu %m : (tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %r : tensor<16x8xf32>
}

// LINALG-LABEL: func.func @main(
// LINALG-SAME:    %a: memref<16x32xf32> {rlx.kind = "input", rlx.name = "arg0"}
// LINALG-SAME:    %b: memref<32x8xf32> {rlx.kind = "input", rlx.name = "arg1"}
// LINALG-SAME:    %out0: memref<16x8xf32> {rlx.kind = "output", rlx.name = "out0"})
// LINALG:         func.call @[[MM:rlx_k[0-9]+]](%a, %b, %[[M:[^)]+]])
// LINALG-NEXT:    func.call @{{rlx_k[0-9]+}}(%[[M]], %out0)
// LINALG:       func.func private @[[MM]]({{.*}}) attributes {rlx.kernel = "rlx.matmul"}
// LINALG:         linalg.fill
// LINALG-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]}
// LINALG:           arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// LINALG-NEXT:      arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32

// PLAN-LABEL: func.func @main(
// PLAN-SAME:    %arena: memref<512xi8> {rlx.kind = "arena", rlx.name = "arena"})
// PLAN-SAME:    attributes {rlx.arena_bytes = 512 : i64, rlx.unplanned_bytes = 512 : i64, rlx.arena_alignment = 64 : i64}
// PLAN:         %[[M:.*]] = memref.view %arena[%{{.*}}][] : memref<512xi8> to memref<16x8xf32>
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%a, %b, %[[M]])
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%[[M]], %out0)

// LLVM-LABEL: llvm.func @main(
// LLVM-SAME:    %a: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 2048 : i64}
// LLVM-SAME:    %b: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 1024 : i64}
// LLVM-SAME:    %out0: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 512 : i64}
// LLVM-SAME:    %arena: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 512 : i64})
// LLVM:         llvm.call @[[MM:rlx_k[0-9]+]](%a, %b, %{{.*}})
// LLVM:       llvm.func internal @[[MM]](%[[A:.*]]: !llvm.ptr, %[[B:.*]]: !llvm.ptr, %[[C:.*]]: !llvm.ptr)
// LLVM:         llvm.getelementptr inbounds %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.getelementptr inbounds %[[B]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.getelementptr inbounds %[[C]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// LLVM-NEXT:    llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// LLVM-NOT:   func.
// LLVM-NOT:   builtin.unrealized_conversion_cast

// IR-LABEL: define void @main(ptr noalias dereferenceable(2048) %{{.*}}, ptr noalias dereferenceable(1024) %{{.*}}, ptr noalias align 64 dereferenceable(512) %{{.*}}, ptr noalias align 64 dereferenceable(512) %{{.*}}) nounwind {
// IR:         fmul reassoc contract float
// IR-NEXT:    fadd reassoc contract float
