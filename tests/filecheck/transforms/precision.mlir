// RUN: rlx-opt %s --split-input-file --precision=f16 | filecheck %s
// RUN: rlx-opt %s --split-input-file --precision-policy=auto-mixed | filecheck %s
// RUN: rlx-opt %s --split-input-file --precision=bf16 | filecheck %s --check-prefix=BF16
// RUN: rlx-opt %s --split-input-file --precision-policy=auto-mixed-bf16 | filecheck %s --check-prefix=BF16
// RUN: rlx-opt %s --split-input-file --precision='policy=auto-mixed-conservative' | filecheck %s --check-prefix=CONS
// RUN: rlx-opt %s --split-input-file --precision | filecheck %s --check-prefix=NOOP
// RUN: rlx-opt %s --split-input-file --precision-policy=always-f32 | filecheck %s --check-prefix=NOOP

// Compute class: matmul. Boundary values (input, param) get one cast each; the output
// is cast back to f32.
func.func @compute(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %w = rlx.param "w" : tensor<8x4xf32>
  %m = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  func.return %m : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @compute(%x: tensor<2x8xf32>) -> tensor<2x4xf32>
// CHECK-DAG:   %[[X:.*]] = rlx.cast %x : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK-DAG:   %[[W:.*]] = rlx.cast %w : (tensor<8x4xf32>) -> tensor<8x4xf16>
// CHECK:       %[[M:.*]] = rlx.matmul %[[X]], %[[W]] : (tensor<2x8xf16>, tensor<8x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:  %[[O:.*]] = rlx.cast %[[M]] : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK-NEXT:  func.return %[[O]] : tensor<2x4xf32>
// BF16-LABEL: func.func @compute
// BF16:       rlx.matmul {{.*}} : (tensor<2x8xbf16>, tensor<8x4xbf16>) -> tensor<2x4xbf16>
// BF16:       rlx.cast {{.*}} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// CONS-LABEL: func.func @compute
// CONS:       rlx.matmul {{.*}} -> tensor<2x4xf16>
// NOOP-LABEL: func.func @compute
// NOOP-NOT:   rlx.cast
// NOOP:       func.return %m

// -----

// Reduction class: f16 under auto-mixed / always-f16, f32 under auto-mixed-conservative.
func.func @reduction(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %g = rlx.param "g" : tensor<8xf32>
  %b = rlx.param "b" : tensor<8xf32>
  %e = rlx.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n = rlx.layer_norm %e, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %s = rlx.softmax %n {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = rlx.reduce %s {kind = "sum", axes = array<i64: 1>, keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %t = rlx.sub %s, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  func.return %t : tensor<2x8xf32>
}
// CHECK-LABEL: func.func @reduction
// CHECK:       rlx.layer_norm {{.*}} : (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT:  rlx.softmax {{.*}} : (tensor<2x8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT:  rlx.reduce {{.*}} : (tensor<2x8xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  rlx.sub {{.*}} -> tensor<2x8xf16>
// CONS-LABEL: func.func @reduction
// CONS:       %[[E:.*]] = rlx.exp {{.*}} : (tensor<2x8xf16>) -> tensor<2x8xf16>
// CONS-NEXT:  %[[E32:.*]] = rlx.cast %[[E]] : (tensor<2x8xf16>) -> tensor<2x8xf32>
// CONS-NEXT:  %[[N:.*]] = rlx.layer_norm %[[E32]], %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CONS-NEXT:  %[[S:.*]] = rlx.softmax %[[N]] {{.*}} -> tensor<2x8xf32>
// CONS-NEXT:  %[[S16:.*]] = rlx.cast %[[S]] : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CONS-NEXT:  %[[R:.*]] = rlx.reduce %[[S]] {{.*}} -> tensor<2x1xf32>
// CONS-NEXT:  %[[R16:.*]] = rlx.cast %[[R]] : (tensor<2x1xf32>) -> tensor<2x1xf16>
// CONS-NEXT:  rlx.sub %[[S16]], %[[R16]] : (tensor<2x8xf16>, tensor<2x1xf16>) -> tensor<2x8xf16>

// -----

// Elementwise class: compare keeps its i1 result, where its i1 condition; an
// elementwise_region's scalar body is retyped (constants included).
func.func @elementwise(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
  %a = rlx.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.compare %a, %y {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %w = rlx.where %c, %a, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = rlx.elementwise_region %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%p: f32, %q: f32):
    %k = arith.constant 2.0 : f32
    %t = arith.mulf %p, %k : f32
    %u = arith.addf %t, %q : f32
    rlx.yield %u : f32
  }
  func.return %r, %c : tensor<4xf32>, tensor<4xi1>
}
// CHECK-LABEL: func.func @elementwise
// CHECK:       %[[A:.*]] = rlx.add {{.*}} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %[[C:.*]] = rlx.compare %[[A]], {{.*}} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
// CHECK-NEXT:  %[[W:.*]] = rlx.where %[[C]], %[[A]], {{.*}} : (tensor<4xi1>, tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %[[R:.*]] = rlx.elementwise_region %[[W]], {{.*}} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:  ^{{.*}}(%p: f16, %q: f16):
// CHECK-NEXT:    arith.constant 2.000000e+00 : f16
// CHECK-NEXT:    arith.mulf {{.*}} : f16
// CHECK-NEXT:    arith.addf {{.*}} : f16
// CHECK-NEXT:    rlx.yield {{.*}} : f16
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[O:.*]] = rlx.cast %[[R]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:  func.return %[[O]], %[[C]] : tensor<4xf32>, tensor<4xi1>

// -----

// A region body that does not verify once retyped (a bit cast of f32) keeps its types.
func.func @region_kept(%x: tensor<4xf32>, %h: tensor<4xi32>) -> tensor<4xi32> {
  %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = rlx.elementwise_region %e, %h : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi32> {
  ^bb0(%p: f32, %q: i32):
    %w = arith.bitcast %p : f32 to i32
    %u = arith.addi %q, %w : i32
    rlx.yield %u : i32
  }
  func.return %r : tensor<4xi32>
}
// CHECK-LABEL: func.func @region_kept
// CHECK:       %[[E:.*]] = rlx.exp {{.*}} -> tensor<4xf16>
// CHECK-NEXT:  %[[E32:.*]] = rlx.cast %[[E]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:  rlx.elementwise_region %[[E32]], %h : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi32>

// -----

// Quantize ops: float operands follow the policy, i8 codes are never relabelled.
func.func @quant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %q = rlx.quantize %x {scale = 0.1 : f64} : (tensor<4xf32>) -> tensor<4xi8>
  %d = rlx.dequantize %q {scale = 0.1 : f64} : (tensor<4xi8>) -> tensor<4xf32>
  %f = rlx.fake_quantize %d {scale = 0.1 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %f : tensor<4xf32>
}
// CHECK-LABEL: func.func @quant
// CHECK:       rlx.quantize {{.*}} : (tensor<4xf16>) -> tensor<4xi8>
// CHECK-NEXT:  rlx.dequantize {{.*}} : (tensor<4xi8>) -> tensor<4xf16>
// CHECK-NEXT:  rlx.fake_quantize {{.*}} : (tensor<4xf16>) -> tensor<4xf16>

// -----

// Data movement: reshape/broadcast_to result types follow their operand; gather keeps
// its integer indices; integer-only ops are untouched.
func.func @data_movement(%x: tensor<2x4xf32>, %i: tensor<3xi32>) -> (tensor<3x4xf32>, tensor<3xi32>) {
  %t = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %r = rlx.reshape %t : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %c = rlx.concat %r, %x {axis = 0 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %g = rlx.gather %c, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  %j = rlx.add %i, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %g, %j : tensor<3x4xf32>, tensor<3xi32>
}
// CHECK-LABEL: func.func @data_movement
// CHECK:       rlx.transpose {{.*}} : (tensor<2x4xf16>) -> tensor<4x2xf16>
// CHECK-NEXT:  rlx.reshape {{.*}} : (tensor<4x2xf16>) -> tensor<2x4xf16>
// CHECK-NEXT:  rlx.concat {{.*}} : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT:  %[[G:.*]] = rlx.gather {{.*}}, %i {{.*}} : (tensor<4x4xf16>, tensor<3xi32>) -> tensor<3x4xf16>
// CHECK-NEXT:  %[[O:.*]] = rlx.cast %[[G]] : (tensor<3x4xf16>) -> tensor<3x4xf32>
// CHECK-NEXT:  %[[J:.*]] = rlx.add %i, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
// CHECK-NEXT:  func.return %[[O]], %[[J]]

// -----

// One cast per (value, type), shared by every consumer; boundary ops keep their types.
func.func @shared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = rlx.constant dense<1.0> : tensor<4xf32>
  %a = rlx.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = rlx.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}
// CHECK-LABEL: func.func @shared
// CHECK-NEXT:  %[[X:.*]] = rlx.cast %x : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:  %c = rlx.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:  %[[C:.*]] = rlx.cast %c : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:  %[[A:.*]] = rlx.add %[[X]], %[[C]]
// CHECK-NEXT:  %[[B:.*]] = rlx.mul %[[X]], %[[C]]
// CHECK-NEXT:  rlx.sub %[[A]], %[[B]]
// CHECK-NEXT:  rlx.cast
// CHECK-NEXT:  func.return

// -----

// Cast pairs: f16 -> f32 -> f16 is exact and cancels; a user cast keeps its type
// (and is dropped once it became an identity).
func.func @cancel(%h: tensor<4xf16>) -> tensor<4xf32> {
  %e = rlx.cast %h : (tensor<4xf16>) -> tensor<4xf32>
  %n = rlx.neg %e : (tensor<4xf32>) -> tensor<4xf32>
  func.return %n : tensor<4xf32>
}
// CHECK-LABEL: func.func @cancel
// CHECK-NEXT:  %e = rlx.cast %h : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:  %[[N:.*]] = rlx.neg %h : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT:  %[[O:.*]] = rlx.cast %[[N]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:  func.return %[[O]]

// -----

// f32 -> f16 -> f32 is not an identity: the rounding stays.
func.func @no_cancel(%x: tensor<4xf32>) -> tensor<f32> {
  %h = rlx.cast %x : (tensor<4xf32>) -> tensor<4xf16>
  %s = rlx.reduce %h {kind = "sum", axes = array<i64: 0>} : (tensor<4xf16>) -> tensor<f16>
  %c = rlx.cast %s : (tensor<f16>) -> tensor<f32>
  func.return %c : tensor<f32>
}
// CONS-LABEL: func.func @no_cancel
// CONS-NEXT:  %h = rlx.cast %x : (tensor<4xf32>) -> tensor<4xf16>
// CONS-NEXT:  %[[H32:.*]] = rlx.cast %h : (tensor<4xf16>) -> tensor<4xf32>
// CONS-NEXT:  %[[S:.*]] = rlx.reduce %[[H32]] {{.*}} : (tensor<4xf32>) -> tensor<f32>
// CONS-NEXT:  func.return %[[S]]

// -----

// Pinned ops keep their operand types: scaled GEMM (ui8 codes, f32 scales), dequant
// matmul (f32 x), and rlx.scan (its body is not retyped).
func.func @pinned(%x: tensor<2x64xf32>, %p: tensor<136xui8>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = rlx.abs %x : (tensor<2x64xf32>) -> tensor<2x64xf32>
  %d = rlx.dequant_matmul %a, %p {scheme = "q8_0", n = 2 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<136xui8>) -> tensor<2x2xf32>
  %s = rlx.scaled_quant_scale %a {format = "f8e4m3"} : (tensor<2x64xf32>) -> tensor<1xf32>
  %q = rlx.scaled_quantize %a, %s {format = "f8e4m3"} : (tensor<2x64xf32>, tensor<1xf32>) -> tensor<2x64xui8>
  %m = rlx.scaled_matmul %q, %q, %s, %s {lhs_format = "f8e4m3", rhs_format = "f8e4m3"} : (tensor<2x64xui8>, tensor<2x64xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x2xf32>
  func.return %d, %m : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @pinned
// CHECK:       %[[A:.*]] = rlx.abs {{.*}} : (tensor<2x64xf16>) -> tensor<2x64xf16>
// CHECK-NEXT:  %[[A32:.*]] = rlx.cast %[[A]] : (tensor<2x64xf16>) -> tensor<2x64xf32>
// CHECK-NEXT:  rlx.dequant_matmul %[[A32]], %p {{.*}} : (tensor<2x64xf32>, tensor<136xui8>) -> tensor<2x2xf32>
// CHECK-NEXT:  %[[S:.*]] = rlx.scaled_quant_scale %[[A32]] {{.*}} : (tensor<2x64xf32>) -> tensor<1xf32>
// CHECK-NEXT:  %[[Q:.*]] = rlx.scaled_quantize %[[A32]], %[[S]] {{.*}} -> tensor<2x64xui8>
// CHECK-NEXT:  rlx.scaled_matmul %[[Q]], %[[Q]], %[[S]], %[[S]] {{.*}} -> tensor<2x2xf32>
// CHECK-NOT:   rlx.cast

// -----

func.func @scan(%init: tensor<4xf32>, %xs: tensor<3x4xf32>) -> tensor<4xf32> {
  %e = rlx.exp %init : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.scan (%e) over (%xs) {length = 3 : i64} : (tensor<4xf32>), (tensor<3x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%carry: tensor<4xf32>, %x: tensor<4xf32>):
    %n = rlx.add %carry, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  }
  func.return %c : tensor<4xf32>
}
// CHECK-LABEL: func.func @scan
// CHECK:       %[[E:.*]] = rlx.exp {{.*}} -> tensor<4xf16>
// CHECK-NEXT:  %[[E32:.*]] = rlx.cast %[[E]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-NEXT:  rlx.scan(%[[E32]]) over(%xs)
// CHECK:       rlx.add %carry, %[[E32]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
