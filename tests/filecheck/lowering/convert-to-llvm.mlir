// RUN: rlx-opt %s -p convert-linalg-to-loops,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts | filecheck %s

// The whole bottom half (LOOPS_TO_LLVM): a fastmath row-sum and an exp epilogue become
// pure llvm dialect, with no bridging casts left.
func.func @rowsum_exp(%a: memref<4x8xf32>, %c: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
    ins(%a : memref<4x8xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o fastmath<fast> : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
    outs(%c : memref<4xf32>) {
  ^bb0(%o: f32):
    %e = math.exp %o : f32
    linalg.yield %e : f32
  }
  func.return
}

// affine.apply left by convert-linalg-to-loops for a broadcast map is lowered too.
func.func @bcast_col(%a: memref<4x1xf32>, %c: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
    ins(%a : memref<4x1xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  func.return
}

// CHECK-NOT:   builtin.unrealized_conversion_cast
// CHECK-LABEL: llvm.func @rowsum_exp(
// CHECK-SAME:    %[[A:.*]]: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 128 : i64},
// CHECK-SAME:    %[[C:.*]]: !llvm.ptr {llvm.noalias, llvm.align = 64 : i64, llvm.dereferenceable = 16 : i64})
// CHECK:         llvm.br ^[[OUTER:.*]](%{{.*}} : i64)
// CHECK:       ^[[OUTER]](%[[I:.*]]: i64):
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[I]], %{{.*}} : i64
// CHECK:         %[[X:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[O:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %[[X]], %[[O]] {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK:         llvm.store %[[S]], %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         %[[E:.*]] = llvm.call @__rlx_exp_f32(%{{.*}}) : (f32) -> f32
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @bcast_col(
// CHECK-NOT:     affine.apply
// CHECK:       ^bb4:
// CHECK-NOT:     llvm.add
// CHECK:         %{{.*}} = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       llvm.func internal @__rlx_exp_f32(
// CHECK-NOT:   builtin.unrealized_conversion_cast
