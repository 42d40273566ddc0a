// RUN: rlx-opt %s -p convert-arith-to-llvm --split-input-file | filecheck %s

func.func @int_ops(%a: i32, %b: i32) -> i32 {
  %c = arith.constant 7 : i32
  %0 = arith.addi %a, %b overflow<nsw> : i32
  %1 = arith.subi %0, %c : i32
  %2 = arith.muli %1, %b : i32
  %3 = arith.divsi %2, %b : i32
  %4 = arith.remui %3, %b : i32
  %5 = arith.andi %4, %a : i32
  %6 = arith.ori %5, %a : i32
  %7 = arith.xori %6, %a : i32
  %8 = arith.shli %7, %b : i32
  %9 = arith.shrsi %8, %b : i32
  %10 = arith.shrui %9, %b : i32
  %11 = arith.maxsi %10, %a : i32
  %12 = arith.minui %11, %a : i32
  func.return %12 : i32
}

// CHECK-LABEL: func.func @int_ops
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK-NEXT:    %[[V0:.*]] = llvm.add %[[A]], %[[B]] overflow<nsw> : i32
// CHECK-NEXT:    %[[V1:.*]] = llvm.sub %[[V0]], %[[C]] : i32
// CHECK-NEXT:    %[[V2:.*]] = llvm.mul %[[V1]], %[[B]] : i32
// CHECK-NEXT:    %[[V3:.*]] = llvm.sdiv %[[V2]], %[[B]] : i32
// CHECK-NEXT:    %[[V4:.*]] = llvm.urem %[[V3]], %[[B]] : i32
// CHECK-NEXT:    %[[V5:.*]] = llvm.and %[[V4]], %[[A]] : i32
// CHECK-NEXT:    %[[V6:.*]] = llvm.or %[[V5]], %[[A]] : i32
// CHECK-NEXT:    %[[V7:.*]] = llvm.xor %[[V6]], %[[A]] : i32
// CHECK-NEXT:    %[[V8:.*]] = llvm.shl %[[V7]], %[[B]] : i32
// CHECK-NEXT:    %[[V9:.*]] = llvm.ashr %[[V8]], %[[B]] : i32
// CHECK-NEXT:    %[[V10:.*]] = llvm.lshr %[[V9]], %[[B]] : i32
// CHECK-NEXT:    %[[V11:.*]] = llvm.call_intrinsic "llvm.smax.i32"(%[[V10]], %[[A]]){{.*}} : (i32, i32) -> i32
// CHECK-NEXT:    %[[V12:.*]] = llvm.call_intrinsic "llvm.umin.i32"(%[[V11]], %[[A]]){{.*}} : (i32, i32) -> i32
// CHECK-NEXT:    func.return %[[V12]] : i32

// -----

func.func @float_ops(%a: f32, %b: f32) -> f32 {
  %c = arith.constant 1.5 : f32
  %0 = arith.addf %a, %b fastmath<fast> : f32
  %1 = arith.subf %0, %c fastmath<reassoc,contract> : f32
  %2 = arith.mulf %1, %b : f32
  %3 = arith.divf %2, %b : f32
  %4 = arith.negf %3 : f32
  %5 = arith.maximumf %4, %a : f32
  %6 = arith.minnumf %5, %a fastmath<nnan> : f32
  func.return %6 : f32
}

// CHECK-LABEL: func.func @float_ops
// CHECK:         %[[C:.*]] = llvm.mlir.constant(1.500000e+00 : f32) : f32
// CHECK-NEXT:    %[[V0:.*]] = llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK-NEXT:    %[[V1:.*]] = llvm.fsub %[[V0]], %[[C]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK-NEXT:    %[[V2:.*]] = llvm.fmul %[[V1]], %{{.*}} : f32
// CHECK-NEXT:    %[[V3:.*]] = llvm.fdiv %[[V2]], %{{.*}} : f32
// CHECK-NEXT:    %[[V4:.*]] = llvm.fneg %[[V3]] : f32
// CHECK-NEXT:    %[[V5:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[V4]], %{{.*}}){{.*}} : (f32, f32) -> f32
// CHECK-NEXT:    %[[V6:.*]] = llvm.intr.minnum(%[[V5]], %{{.*}}) {fastmathFlags = #llvm.fastmath<nnan>} : (f32, f32) -> f32
// CHECK-NEXT:    func.return %[[V6]] : f32

// -----

func.func @compare_select(%a: f32, %b: f32, %i: i64, %j: i64) -> (f32, i64) {
  %0 = arith.cmpf olt, %a, %b fastmath<nnan> : f32
  %1 = arith.select %0, %a, %b : f32
  %2 = arith.cmpi uge, %i, %j : i64
  %3 = arith.select %2, %i, %j : i64
  func.return %1, %3 : f32, i64
}

// CHECK-LABEL: func.func @compare_select
// CHECK:         %[[C0:.*]] = llvm.fcmp "olt" %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %[[S0:.*]] = llvm.select %[[C0]], %{{.*}}, %{{.*}} : i1, f32
// CHECK-NEXT:    %[[C1:.*]] = llvm.icmp "uge" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %[[S1:.*]] = llvm.select %[[C1]], %{{.*}}, %{{.*}} : i1, i64

// -----

// index values become i64; unconverted users see them through bridging casts.
func.func @index_math(%n: index) -> index {
  %c4 = arith.constant 4 : index
  %0 = arith.muli %n, %c4 : index
  %1 = arith.index_cast %0 : index to i32
  %2 = arith.index_cast %1 : i32 to index
  func.return %2 : index
}

// CHECK-LABEL: func.func @index_math
// CHECK-SAME:    (%[[N:.*]]: index) -> index
// CHECK-NEXT:    %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK:         %[[NI:.*]] = builtin.unrealized_conversion_cast %[[N]] : index to i64
// CHECK-NEXT:    %[[M:.*]] = llvm.mul %[[NI]], %[[C4]] : i64
// CHECK:         %[[T:.*]] = llvm.trunc %[[M]] : i64 to i32
// CHECK-NEXT:    %[[E:.*]] = llvm.sext %[[T]] : i32 to i64
// CHECK-NEXT:    %[[R:.*]] = builtin.unrealized_conversion_cast %[[E]] : i64 to index
// CHECK-NEXT:    func.return %[[R]] : index

// -----

func.func @casts(%f: f32, %h: f16, %i: i64, %b: i8) -> (f64, f16, f32, f32, i32, i16, i64, bf16) {
  %0 = arith.extf %f : f32 to f64
  %1 = arith.truncf %f : f32 to f16
  %2 = arith.sitofp %i : i64 to f32
  %3 = arith.uitofp %b : i8 to f32
  %4 = arith.fptosi %f : f32 to i32
  %5 = arith.extui %b : i8 to i16
  %6 = arith.bitcast %f : f32 to i32
  %7 = arith.extsi %6 : i32 to i64
  %8 = arith.truncf %h : f16 to bf16
  func.return %0, %1, %2, %3, %4, %5, %7, %8 : f64, f16, f32, f32, i32, i16, i64, bf16
}

// CHECK-LABEL: func.func @casts
// CHECK:         llvm.fpext %{{.*}} : f32 to f64
// CHECK-NEXT:    llvm.fptrunc %{{.*}} : f32 to f16
// CHECK-NEXT:    llvm.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT:    %[[Z:.*]] = llvm.zext %{{.*}} : i8 to i64
// CHECK-NEXT:    llvm.sitofp %[[Z]] : i64 to f32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%{{.*}}){{.*}} : (f32) -> i32
// CHECK-NEXT:    llvm.zext %{{.*}} : i8 to i16
// CHECK-NEXT:    llvm.bitcast %{{.*}} : f32 to i32
// CHECK-NEXT:    llvm.sext %{{.*}} : i32 to i64
// CHECK-NEXT:    %[[W:.*]] = llvm.fpext %{{.*}} : f16 to f32
// CHECK-NEXT:    llvm.fptrunc %[[W]] : f32 to bf16

// -----

// f64 -> f16 / bf16: f32 rounded to odd, then one fptrunc (no f64 -> f16 libcall)
func.func @f64_to_half(%d: f64) -> (f16, bf16, f32) {
  %0 = arith.truncf %d : f64 to f16
  %1 = arith.truncf %d : f64 to bf16
  %2 = arith.truncf %d : f64 to f32
  func.return %0, %1, %2 : f16, bf16, f32
}

// CHECK-LABEL: func.func @f64_to_half
// CHECK:         %[[R:.*]] = llvm.fptrunc %{{.*}} : f64 to f32
// CHECK-NEXT:    %[[B:.*]] = llvm.fpext %[[R]] : f32 to f64
// CHECK-NEXT:    %[[NE:.*]] = llvm.fcmp "one" %[[B]], %{{.*}} : f64
// CHECK:         llvm.xor
// CHECK:         llvm.bitcast %[[R]] : f32 to i32
// CHECK:         llvm.select
// CHECK:         llvm.zext %[[NE]] : i1 to i32
// CHECK:         %[[O:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    llvm.fptrunc %[[O]] : f32 to f16
// CHECK:         llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK:         llvm.fptrunc %{{.*}} : f64 to f32
// CHECK-NOT:     f64 to f16
// CHECK-NOT:     f64 to bf16

// -----

func.func @uitofp_i64(%i: i64) -> f32 {
  %0 = arith.uitofp %i : i64 to f32
  func.return %0 : f32
}

// CHECK-LABEL: func.func @uitofp_i64
// CHECK:         llvm.icmp "sge"
// CHECK:         llvm.lshr
// CHECK:         llvm.fadd
// CHECK:         llvm.select

// -----

func.func @rounding_division(%a: i64, %b: i64) -> (i64, i64) {
  %0 = arith.floordivsi %a, %b : i64
  %1 = arith.ceildivui %a, %b : i64
  func.return %0, %1 : i64, i64
}

// CHECK-LABEL: func.func @rounding_division
// CHECK:         llvm.sdiv
// CHECK-NEXT:    llvm.srem
// CHECK:         llvm.sub
// CHECK:         llvm.udiv
// CHECK-NEXT:    llvm.urem
// CHECK:         llvm.add
