// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s --check-prefix=LINALG
// RUN: rlx-opt %s -p convert-rlx-to-linalg,plan-memory | filecheck %s --check-prefix=PLAN
// RUN: rlx-opt %s --lower-to-llvm | filecheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --lower-to-llvm --emit=llvm-ir | filecheck %s --check-prefix=IR

// Every stage of a broadcast add (rank-1 bias over the rows) followed by a relu, whose
// 128-byte intermediate lands in the arena.

func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = rlx.relu %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}

// Stage 1: one kernel per op, destination-passing style on memrefs. The op's kernel
// passes its buffers as flat views, with a constant table, to the shape-generic worker of
// the add: sizes 4x8, then offset and strides of x (8, 1), of the bias (0, 1: the
// broadcast over the rows) and of the output (8, 1).
// LINALG:       "memref.global"() <{sym_name = "[[TADD:rlx_table[0-9]+]]", type = memref<11xi64>, initial_value = dense<[4, 8, 0, 8, 1, 0, 0, 1, 0, 8, 1]> : tensor<11xi64>
// LINALG-LABEL: func.func @main(
// LINALG-SAME:    %x: memref<4x8xf32> {rlx.kind = "input", rlx.name = "arg0"}
// LINALG-SAME:    %b: memref<8xf32> {rlx.kind = "input", rlx.name = "arg1"}
// LINALG-SAME:    %out0: memref<4x8xf32> {rlx.kind = "output", rlx.name = "out0"})
// LINALG-NEXT:    %[[Y:.*]] = memref.alloc() {{.*}}: memref<4x8xf32>
// LINALG-NEXT:    func.call @[[ADD:rlx_k[0-9]+]](%x, %b, %[[Y]])
// LINALG-NEXT:    func.call @[[RELU:rlx_k[0-9]+]](%[[Y]], %out0)
// LINALG:       func.func private @[[ADDW:rlx_k[0-9]+]]({{.*}}: memref<11xi64> {llvm.noalias}, {{.*}}: memref<2147483647xf32> {llvm.noalias}, {{.*}}) attributes {rlx.kernel = "rlx.add (any shape)"}
// LINALG:         scf.for
// LINALG:           scf.for
// LINALG:             arith.addf
// LINALG:       func.func private @[[ADD]]({{.*}}) attributes {rlx.kernel = "rlx.add"}
// LINALG-NEXT:    memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2147483647], strides: [1] : memref<4x8xf32> to memref<2147483647xf32>
// LINALG:         memref.get_global @[[TADD]] : memref<11xi64>
// LINALG-NEXT:    func.call @[[ADDW]](
// LINALG:       func.func private @{{rlx_k[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.relu (any shape)"}
// LINALG:             arith.maximumf
// LINALG:       func.func private @[[RELU]]({{.*}}) attributes {rlx.kernel = "rlx.relu"}
// Stage 2: the intermediate is a view of the arena argument.
// PLAN-LABEL: func.func @main(
// PLAN-SAME:    %arena: memref<128xi8> {rlx.kind = "arena", rlx.name = "arena"})
// PLAN-SAME:    attributes {rlx.arena_bytes = 128 : i64, rlx.unplanned_bytes = 128 : i64, rlx.arena_alignment = 64 : i64}
// PLAN-NEXT:    %[[OFF:.*]] = arith.constant 0 : index
// PLAN-NEXT:    %[[Y:.*]] = memref.view %arena[%[[OFF]]][] : memref<128xi8> to memref<4x8xf32>
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%x, %b, %[[Y]])
// PLAN-NEXT:    func.call @{{rlx_k[0-9]+}}(%[[Y]], %out0)
// PLAN-NOT:     memref.alloc

// Stage 3: the llvm dialect; every memref argument is one noalias pointer.
// LLVM-LABEL: llvm.func @main(
// LLVM-SAME:    %x: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 128 : i64}
// LLVM-SAME:    %b: !llvm.ptr {llvm.noalias, llvm.dereferenceable = 32 : i64}
// LLVM-SAME:    %out0: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 128 : i64}
// LLVM-SAME:    %arena: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 128 : i64})
// LLVM:         %[[Y:.*]] = llvm.getelementptr inbounds %arena[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// LLVM-NEXT:    llvm.call @[[ADD:rlx_k[0-9]+]](%x, %b, %[[Y]])
// LLVM-NEXT:    llvm.call @{{rlx_k[0-9]+}}(%[[Y]], %out0)
// LLVM:       llvm.func internal @[[ADDW:rlx_k[0-9]+]](%{{.*}}: !llvm.ptr {llvm.noalias}, %[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[B:.*]]: !llvm.ptr {llvm.noalias}, %[[C:.*]]: !llvm.ptr {llvm.noalias})
// LLVM:         llvm.getelementptr inbounds %[[A]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.getelementptr inbounds %[[B]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// LLVM:         llvm.store
// LLVM:       llvm.func internal @[[ADD]](
// LLVM:         llvm.call @[[ADDW]](
// LLVM:       llvm.call_intrinsic "llvm.maximum.f32"
// LLVM-NOT:   func.
// LLVM-NOT:   memref.
// LLVM-NOT:   builtin.unrealized_conversion_cast

// The LLVM module (before LLVM's optimizer).
// IR-LABEL: define void @main(ptr noalias dereferenceable(128) %{{.*}}, ptr noalias dereferenceable(32) %{{.*}}, ptr noalias align 64 dereferenceable(128) %{{.*}}, ptr noalias align 64 dereferenceable(128) %{{.*}}) nounwind {
// IR:         call void @[[ADD:rlx_k[0-9]+]](
// IR:       define internal void @[[ADDW:rlx_k[0-9]+]](ptr noalias
// IR:         getelementptr inbounds float, ptr
// IR:         fadd contract float
// IR:       define internal void @[[ADD]](
// IR:         call void @[[ADDW]](
// IR:       call float @llvm.maximum.f32(
