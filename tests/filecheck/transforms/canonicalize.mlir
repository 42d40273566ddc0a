// RUN: rlx-opt %s -p canonicalize --split-input-file | filecheck %s

// Identity transpose / reshape / broadcast_to / full slice / single-operand concat are
// removed; relu(relu x) -> relu x.
// CHECK-LABEL: func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = rlx.transpose %x {permutation = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = rlx.reshape %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = rlx.broadcast_to %b : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = rlx.slice %c {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = rlx.concat %d {axis = 0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = rlx.relu %e : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %g = rlx.relu %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// -----

// Not simplified: float x - x (NaN/inf), a partial slice, a real transpose, float x*0.
// Dead ops (an unused param and rng op included) are erased like MLIR's canonicalizer.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %a = rlx.sub %x, %x
// CHECK-NEXT:    %s = rlx.slice %x
// CHECK-NEXT:    %z = rlx.constant
// CHECK-NEXT:    %m = rlx.mul %x, %z
// CHECK-NEXT:    %t = rlx.transpose %x {permutation = array<i64: 1, 0>}
// CHECK-NEXT:    func.return %a, %s, %m, %t
func.func @kept(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
  %a = rlx.sub %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = rlx.slice %x {starts = array<i64: 1, 0>, limits = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %z = rlx.constant dense<0.0> : tensor<f32>
  %m = rlx.mul %x, %z : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %t = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %p = rlx.param "unused" : tensor<3xf32>
  %r = rlx.rng_uniform : tensor<3xf32>
  func.return %a, %s, %m, %t : tensor<2x3xf32>, tensor<1x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>
}

// -----

// Two transposes compose into one; xDSL's own canonicalization patterns also run.
// CHECK-LABEL: func.func @compose
// CHECK-NEXT:    %{{.*}} = rlx.transpose %x {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    func.return
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %a = rlx.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = rlx.transpose %a {permutation = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  func.return %b : tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    func.return %a : i32
func.func @arith(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  func.return %r : i32
}

// -----

// rlx.if on a constant condition -> the taken region's ops; the other region is dropped.
// CHECK-LABEL: func.func @if_true(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:    %[[N:.*]] = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[E:.*]] = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[N]], %[[E]] : tensor<4xf32>, tensor<4xf32>
func.func @if_true(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = rlx.constant dense<true> : tensor<i1>
  %f = rlx.constant dense<false> : tensor<1x1xi1>
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    %t = rlx.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %t : tensor<4xf32>
  }
  %s = rlx.if %f : tensor<1x1xi1> -> (tensor<4xf32>) {
    %t = rlx.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %t : tensor<4xf32>
  } else {
    %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %e : tensor<4xf32>
  }
  func.return %r, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// A run-time condition keeps the rlx.if (and both regions).
// CHECK-LABEL: func.func @if_runtime(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT:      %n = rlx.neg %x
// CHECK-NEXT:      rlx.yield %n
// CHECK-NEXT:    } else {
// CHECK-NEXT:      rlx.yield %x
// CHECK-NEXT:    }
func.func @if_runtime(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// x * sigmoid(x) -> silu(x) (silu's formula: exact), either order; not when the sigmoid
// has another user or reads another value.
// CHECK-LABEL: func.func @silu
// CHECK-NEXT:    %[[A:.*]] = rlx.silu %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[B:.*]] = rlx.silu %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = rlx.sigmoid %y
// CHECK-NEXT:    %[[C:.*]] = rlx.mul %x, %[[S]]
// CHECK-NEXT:    %[[T:.*]] = rlx.sigmoid %x
// CHECK-NEXT:    %[[D:.*]] = rlx.mul %x, %[[T]]
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[T]]
func.func @silu(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %s0 = rlx.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %a = rlx.mul %x, %s0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s1 = rlx.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.mul %s1, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = rlx.sigmoid %y : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.mul %x, %s2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s3 = rlx.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %d = rlx.mul %x, %s3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b, %c, %d, %s3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// f16 / bf16 keep the product (the separate ops round sigmoid(x) to the type).
// CHECK-LABEL: func.func @silu_f16
// CHECK:         rlx.sigmoid
// CHECK-NEXT:    rlx.mul
func.func @silu_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %s = rlx.sigmoid %x : (tensor<4xf16>) -> tensor<4xf16>
  %a = rlx.mul %x, %s : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %a : tensor<4xf16>
}
