// RUN: rlx-opt %s -p expand-small-floats --split-input-file | filecheck %s
// RUN: rlx-opt %s -p expand-small-floats,convert-to-llvm,retype-small-floats,reconcile-unrealized-casts --split-input-file | filecheck %s --check-prefix=LLVM

// fp8 values are byte codes: extf is a table lookup, truncf the ml_dtypes rounding (a
// search of the midpoint table), other float ops compute on decoded f32 values.
func.func @conv(%m: memref<4xf8E4M3FN>, %o: memref<4xf8E4M3FN>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %m[%c0] : memref<4xf8E4M3FN>
  %w = arith.extf %x : f8E4M3FN to f32
  %y = arith.mulf %w, %w : f32
  %z = arith.truncf %y : f32 to f8E4M3FN
  %c = arith.constant 1.5 : f8E4M3FN
  %l = arith.cmpf olt, %z, %c : f8E4M3FN
  %s = arith.select %l, %z, %c : f8E4M3FN
  memref.store %s, %o[%c0] : memref<4xf8E4M3FN>
  func.return
}

// CHECK-DAG:   "memref.global"() <{sym_name = "__rlx_float8_e4m3fn_decode", type = memref<256xf32>, {{.*}}constant
// CHECK-DAG:   "memref.global"() <{sym_name = "__rlx_float8_e4m3fn_mids", type = memref<127xf32>, {{.*}}constant
// CHECK-LABEL: func.func @conv
// CHECK:         %[[TAB:.*]] = memref.get_global @__rlx_float8_e4m3fn_decode : memref<256xf32>
// CHECK:         %[[X:.*]] = memref.load %m[%c0] : memref<4xf8E4M3FN>
// CHECK-NEXT:    %[[CODE:.*]] = builtin.unrealized_conversion_cast %[[X]] : f8E4M3FN to i8
// CHECK-NEXT:    %[[WIDE:.*]] = arith.extui %[[CODE]] : i8 to i64
// CHECK-NEXT:    %[[IDX:.*]] = arith.index_cast %[[WIDE]] : i64 to index
// CHECK-NEXT:    %w = memref.load %[[TAB]][%[[IDX]]] : memref<256xf32>
// CHECK-NEXT:    %y = arith.mulf %w, %w : f32
// CHECK-NEXT:    %{{.*}} = math.absf %y : f32
// CHECK:         %[[NEW:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK-NEXT:    %z = builtin.unrealized_conversion_cast %[[NEW]] : i8 to f8E4M3FN
// CHECK-NEXT:    %c = arith.constant 1.500000e+00 : f8E4M3FN
// CHECK:         %l = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %s = arith.select %l, %z, %c : f8E4M3FN
// CHECK-NEXT:    memref.store %s, %o[%c0] : memref<4xf8E4M3FN>
// CHECK-NOT:     arith.extf
// CHECK-NOT:     arith.truncf

// LLVM-LABEL: llvm.func @conv
// LLVM-NOT:     f8E4M3FN
// LLVM:         %x = llvm.load %m {alignment = 1 : i64} : !llvm.ptr -> i8
// LLVM:         %c = llvm.mlir.constant(60 : i8) : i8
// LLVM:         %s = llvm.select %l, %z, %c : i1, i8
// LLVM-NEXT:    llvm.store %s, %o {alignment = 1 : i64} : i8, !llvm.ptr

// -----

// fp4 codes live one per byte too; integers convert through f64 (one rounding).
func.func @int_to_fp4(%i: i32, %o: memref<1xf4E2M1FN>) {
  %c0 = arith.constant 0 : index
  %0 = arith.sitofp %i : i32 to f4E2M1FN
  memref.store %0, %o[%c0] : memref<1xf4E2M1FN>
  func.return
}

// CHECK-LABEL: func.func @int_to_fp4
// CHECK:         %{{.*}} = arith.sitofp %i : i32 to f64
// CHECK:         %[[C:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK-NEXT:    %{{.*}} = builtin.unrealized_conversion_cast %[[C]] : i8 to f4E2M1FN
// LLVM-LABEL:  llvm.func @int_to_fp4
// LLVM-NOT:      f4E2M1FN
// LLVM:          llvm.store %{{.*}}, %o {alignment = 1 : i64} : i8, !llvm.ptr

// -----

// No small float: nothing changes.
func.func @untouched(%x: f32) -> bf16 {
  %0 = arith.truncf %x : f32 to bf16
  func.return %0 : bf16
}

// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %0 = arith.truncf %x : f32 to bf16
// CHECK-NEXT:    func.return %0 : bf16
// LLVM-LABEL:  llvm.func @untouched
// LLVM-NEXT:     %0 = llvm.fptrunc %x : f32 to bf16
