// RUN: rlx-opt %s -p convert-scf-to-cf | filecheck %s
// RUN: rlx-opt %s -p convert-scf-to-cf,convert-cf-to-llvm | filecheck %s --check-prefix=LLVM

// rlx's convert-scf-to-cf is xDSL's lowering that keeps a loop's interleave hint
// (`rlx.interleave`, set by the kernel emitters): it moves to the loop's back edge, and
// convert-cf-to-llvm keeps it on the llvm.br (to_llvm_ir prints it as !llvm.loop
// metadata). The inner loop's hint lands on the inner back edge only; an unhinted loop
// lowers as before.
func.func @hinted(%n: index, %m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = memref.load %m[%j] : memref<64xf32>
      %e = math.exp %v : f32
      memref.store %e, %m[%j] : memref<64xf32>
    } {rlx.interleave = 2 : i64}
  }
  func.return
}

// CHECK-LABEL: func.func @hinted
// CHECK:         math.exp
// CHECK:         cf.br ^{{.*}}(%{{.*}} : index) {rlx.interleave = 2 : i64}
// CHECK-NEXT:  ^{{.*}}:
// CHECK-NEXT:    arith.addi
// CHECK-NEXT:    cf.br ^{{.*}}(%{{.*}} : index){{$}}
// LLVM-LABEL: func.func @hinted
// LLVM:         llvm.br ^{{.*}}(%{{.*}} : i64) {rlx.interleave = 2 : i64}
// LLVM-NOT:     rlx.interleave
// LLVM:         func.return
