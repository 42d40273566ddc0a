// RUN: rlx-opt %s -p convert-math-to-llvm --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'convert-math-to-llvm{expand-exp=false}' --split-input-file | filecheck %s --check-prefix=NOEXPAND
// RUN: rlx-opt %s -p 'convert-math-to-llvm{exp-ldexp=false}' --split-input-file | filecheck %s --check-prefix=BITS
// RUN: rlx-opt %s -p 'convert-math-to-llvm{exp-ldexp=true}' --split-input-file | filecheck %s --check-prefix=LDEXP

func.func @intrinsics(%x: f32, %y: f32, %z: f32) -> f32 {
  %0 = math.sqrt %x fastmath<afn> : f32
  %1 = math.log %0 : f32
  %2 = math.absf %1 : f32
  %3 = math.floor %2 : f32
  %4 = math.ceil %3 : f32
  %5 = math.roundeven %4 : f32
  %6 = math.powf %5, %y : f32
  %7 = math.fma %6, %y, %z : f32
  %8 = math.copysign %7, %y : f32
  %9 = math.sin %8 : f32
  func.return %9 : f32
}

// CHECK-LABEL: func.func @intrinsics
// CHECK-NEXT:    %[[V0:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// CHECK-NEXT:    %[[V1:.*]] = llvm.call_intrinsic "llvm.log.f32"(%[[V0]]) : (f32) -> f32
// CHECK-NEXT:    %[[V2:.*]] = llvm.call_intrinsic "llvm.fabs.f32"(%[[V1]]) : (f32) -> f32
// CHECK-NEXT:    %[[V3:.*]] = llvm.call_intrinsic "llvm.floor.f32"(%[[V2]]) : (f32) -> f32
// CHECK-NEXT:    %[[V4:.*]] = llvm.call_intrinsic "llvm.ceil.f32"(%[[V3]]) : (f32) -> f32
// CHECK-NEXT:    %[[V5:.*]] = llvm.call_intrinsic "llvm.roundeven.f32"(%[[V4]]) : (f32) -> f32
// CHECK-NEXT:    %[[V6:.*]] = llvm.call_intrinsic "llvm.pow.f32"(%[[V5]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %[[V7:.*]] = llvm.call_intrinsic "llvm.fma.f32"(%[[V6]], %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NEXT:    %[[V8:.*]] = llvm.call_intrinsic "llvm.copysign.f32"(%[[V7]], %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %[[V9:.*]] = llvm.call_intrinsic "llvm.sin.f32"(%[[V8]]) : (f32) -> f32
// CHECK-NEXT:    func.return %[[V9]] : f32

// -----

// f32 exp/tanh/erf call always-inline helpers holding vectorizable expansions.
func.func @expansions(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  %1 = math.tanh %0 : f32
  %2 = math.erf %1 : f32
  %3 = math.exp %2 : f32
  func.return %3 : f32
}

// CHECK-LABEL: func.func @expansions
// CHECK-NEXT:    %[[E:.*]] = llvm.call @__rlx_exp_f32(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @__rlx_tanh_f32(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %[[R:.*]] = llvm.call @__rlx_erf_f32(%[[T]]) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @__rlx_exp_f32(%[[R]]) : (f32) -> f32
// CHECK:       llvm.func internal @__rlx_exp_f32(%{{.*}}: f32) -> f32 attributes {passthrough = ["alwaysinline"]}
// CHECK-NOT:     llvm.call
// CHECK:         llvm.bitcast %{{.*}} : f32 to i32
// CHECK:         llvm.return
// CHECK:       llvm.func internal @__rlx_tanh_f32(
// CHECK-NOT:     llvm.call
// CHECK:         llvm.fdiv
// CHECK:         llvm.return
// CHECK:       llvm.func internal @__rlx_erf_f32(
// CHECK:         llvm.call_intrinsic "llvm.fmuladd.f32"
// CHECK:         llvm.call_intrinsic "llvm.copysign.f32"
// CHECK-NEXT:    llvm.return

// The exp expansion scales by 2^n with exponent bits (two steps, inf/0/NaN fix-ups) or,
// with exp-ldexp (the default on AVX-512 hosts), by llvm.ldexp alone (vscalefps).
// BITS:        llvm.func internal @__rlx_exp_f32(
// BITS-NOT:      llvm.ldexp
// BITS:          llvm.ashr
// BITS:          llvm.fcmp "uno"
// BITS:          llvm.return
// LDEXP:       llvm.func internal @__rlx_exp_f32(%[[X:.*]]: f32)
// LDEXP-NOT:     llvm.ashr
// LDEXP:         %[[N:.*]] = llvm.sub %{{.*}}, %{{.*}} : i32
// LDEXP-NEXT:    %[[R:.*]] = llvm.call_intrinsic "llvm.ldexp.f32.i32"(%{{.*}}, %[[N]]) : (f32, i32) -> f32
// LDEXP-NEXT:    llvm.return %[[R]] : f32

// NOEXPAND-LABEL: func.func @expansions
// NOEXPAND-NEXT:    llvm.call_intrinsic "llvm.exp.f32"(%{{.*}}) : (f32) -> f32
// NOEXPAND-NOT:   @__rlx_exp_f32

// -----

// f32 erf is computed in f32 only (no f64: full SIMD width): two polynomials with fused
// multiply-adds, |x| < 1 and 1 <= |x| (in |x| - 2.25), 1 from 3.9192059 on, odd.
func.func @erf_f32(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  func.return %0 : f32
}

// CHECK-LABEL: func.func @erf_f32
// CHECK-NEXT:    %[[R:.*]] = llvm.call @__rlx_erf_f32(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    func.return %[[R]] : f32
// CHECK:       llvm.func internal @__rlx_erf_f32(%[[X:.*]]: f32) -> f32 attributes {passthrough = ["alwaysinline"]} {
// CHECK-NOT:     f64
// CHECK-NOT:     llvm.call @
// CHECK:         %[[A:.*]] = llvm.call_intrinsic "llvm.fabs.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[U:.*]] = llvm.fmul %[[A]], %[[A]] : f32
// CHECK-NOT:     f64
// CHECK-COUNT-7: llvm.call_intrinsic "llvm.fmuladd.f32"(%{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NOT:     f64
// CHECK:         %[[T:.*]] = llvm.fsub %[[A]], %{{.*}} : f32
// CHECK-NOT:     f64
// CHECK-COUNT-15: llvm.call_intrinsic "llvm.fmuladd.f32"(%{{.*}}, %[[T]], %{{.*}}) : (f32, f32, f32) -> f32
// CHECK-NOT:     f64
// CHECK:         llvm.fcmp "olt" %[[A]], %{{.*}} : f32
// CHECK:         llvm.fcmp "ogt" %[[A]], %{{.*}} : f32
// CHECK-NOT:     f64
// CHECK:         %[[R:.*]] = llvm.call_intrinsic "llvm.copysign.f32"(%{{.*}}, %[[X]]) : (f32, f32) -> f32
// CHECK-NEXT:    llvm.return %[[R]] : f32
// CHECK-NEXT:  }

// -----

// f64 tanh/erf call libm; rsqrt is 1/sqrt.
func.func @f64_math(%x: f64) -> f64 {
  %0 = math.erf %x : f64
  %1 = math.tanh %0 : f64
  %2 = math.rsqrt %1 : f64
  %3 = math.exp %2 : f64
  %4 = math.atan %3 : f64
  func.return %4 : f64
}

// CHECK-LABEL: func.func @f64_math
// CHECK-NEXT:    %[[E:.*]] = llvm.call @erf(%{{.*}}) : (f64) -> f64
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanh(%[[E]]) : (f64) -> f64
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f64"(%[[T]]) : (f64) -> f64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT:    %[[R:.*]] = llvm.fdiv %[[ONE]], %[[S]] : f64
// CHECK-NEXT:    %[[X:.*]] = llvm.call_intrinsic "llvm.exp.f64"(%[[R]]) : (f64) -> f64
// CHECK-NEXT:    %{{.*}} = llvm.call @atan(%[[X]]) : (f64) -> f64
// CHECK-DAG:   llvm.func @erf(f64) -> f64
// CHECK-DAG:   llvm.func @tanh(f64) -> f64
// CHECK-DAG:   llvm.func @atan(f64) -> f64

// -----

// f16 and bf16 math is computed in f32.
func.func @half(%x: f16, %y: bf16) -> (f16, bf16) {
  %0 = math.sqrt %x : f16
  %1 = math.tanh %y : bf16
  func.return %0, %1 : f16, bf16
}

// CHECK-LABEL: func.func @half
// CHECK-NEXT:    %[[XE:.*]] = llvm.fpext %{{.*}} : f16 to f32
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[XE]]) : (f32) -> f32
// CHECK-NEXT:    %[[XT:.*]] = llvm.fptrunc %[[S]] : f32 to f16
// CHECK-NEXT:    %[[YE:.*]] = llvm.fpext %{{.*}} : bf16 to f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @__rlx_tanh_f32(%[[YE]]) : (f32) -> f32
// CHECK-NEXT:    %[[YT:.*]] = llvm.fptrunc %[[T]] : f32 to bf16
// CHECK-NEXT:    func.return %[[XT]], %[[YT]] : f16, bf16

// -----

func.func @int_math(%a: i32, %n: index) -> (i32, i32, index) {
  %0 = math.absi %a : i32
  %1 = math.ctlz %0 : i32
  %2 = math.ctpop %n : index
  func.return %0, %1, %2 : i32, i32, index
}

// CHECK-LABEL: func.func @int_math
// CHECK:         %[[F:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    llvm.call_intrinsic "llvm.abs.i32"(%{{.*}}, %[[F]]) : (i32, i1) -> i32
// CHECK:         llvm.call_intrinsic "llvm.ctlz.i32"
// CHECK:         llvm.call_intrinsic "llvm.ctpop.i64"(%{{.*}}) : (i64) -> i64

// -----

func.func @log1p_expm1(%x: f32) -> (f32, f32) {
  %0 = math.log1p %x : f32
  %1 = math.expm1 %x : f32
  func.return %0, %1 : f32, f32
}

// CHECK-LABEL: func.func @log1p_expm1
// CHECK-NEXT:    llvm.call @__rlx_log1p_f32
// CHECK-NEXT:    llvm.call @__rlx_expm1_f32
// CHECK:       llvm.func internal @__rlx_log1p_f32(
// CHECK:         llvm.call_intrinsic "llvm.log.f32"
// CHECK:       llvm.func internal @__rlx_expm1_f32(

// -----

// exp of -|x| (the logistic function's form) takes the cheap expansion for x <= 0 (no
// clamps, one-step scaling), also through an f16 extension; exp of -x, of |x| and of a
// plain value keep the general one.
func.func @exp_nonpositive(%x: f32, %h: f16) -> f32 {
  %a = math.absf %x : f32
  %n = arith.negf %a : f32
  %0 = math.exp %n : f32
  %m = arith.negf %x : f32
  %1 = math.exp %m : f32
  %2 = math.exp %a : f32
  %ha = math.absf %h : f16
  %hn = arith.negf %ha : f16
  %3 = math.exp %hn : f16
  %4 = arith.extf %3 : f16 to f32
  %s = arith.addf %0, %1 : f32
  %t = arith.addf %s, %2 : f32
  %u = arith.addf %t, %4 : f32
  func.return %u : f32
}

// CHECK-LABEL: func.func @exp_nonpositive
// CHECK:         %{{.*}} = llvm.call @__rlx_exp_nonpositive_f32(%{{.*}}) : (f32) -> f32
// CHECK:         %{{.*}} = llvm.call @__rlx_exp_f32(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call @__rlx_exp_f32(%{{.*}}) : (f32) -> f32
// CHECK:         %[[W:.*]] = llvm.fpext %hn : f16 to f32
// CHECK-NEXT:    %{{.*}} = llvm.call @__rlx_exp_nonpositive_f32(%[[W]]) : (f32) -> f32
// CHECK:       llvm.func internal @__rlx_exp_nonpositive_f32(%{{.*}}: f32) -> f32 attributes {passthrough = ["alwaysinline"]}
// CHECK-NOT:     llvm.call @
// CHECK-NOT:     llvm.fcmp "ogt"
// CHECK:         llvm.shl
// CHECK:         llvm.fcmp "olt"
// CHECK:         llvm.return
// NOEXPAND-LABEL: func.func @exp_nonpositive
// NOEXPAND-NOT:   __rlx_exp
