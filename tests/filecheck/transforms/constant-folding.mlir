// RUN: rlx-opt %s --constant-folding --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'constant-folding{max-elements=2}' --split-input-file | filecheck %s --check-prefix=SMALL

// Const 2 + Const 3 -> Const 5 (then the gelu of it, evaluated with the reference).
// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %{{.*}} = rlx.constant dense<5.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    func.return
// SMALL-LABEL: func.func @fold
// SMALL:         rlx.add
func.func @fold() -> tensor<4xf32> {
  %a = rlx.constant dense<2.0> : tensor<4xf32>
  %b = rlx.constant dense<3.0> : tensor<f32>
  %c = rlx.add %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// Params are not constants; rng ops are never folded.
// CHECK-LABEL: func.func @not_constant
// CHECK-NEXT:    %p = rlx.param "w"
// CHECK-NEXT:    %c = rlx.constant
// CHECK-NEXT:    %a = rlx.add %p, %c
// CHECK-NEXT:    %r = rlx.rng_uniform
// CHECK-NEXT:    %b = rlx.mul %r, %c
func.func @not_constant() -> (tensor<2xf32>, tensor<2xf32>) {
  %p = rlx.param "w" : tensor<2xf32>
  %c = rlx.constant dense<1.5> : tensor<2xf32>
  %a = rlx.add %p, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = rlx.rng_uniform : tensor<2xf32>
  %b = rlx.mul %r, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}

// -----

// Algebraic identities: x+0, x-0, 1*x, x/1, neg(neg x), double transpose,
// reshape of reshape, same-type cast all collapse to %x.
// CHECK-LABEL: func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = rlx.constant dense<0.0> : tensor<3xf32>
  %o = rlx.constant dense<1.0> : tensor<f32>
  %a = rlx.add %x, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = rlx.sub %a, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %c = rlx.mul %o, %b : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = rlx.div %c, %o : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %e = rlx.neg %d : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = rlx.neg %e : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t1 = rlx.transpose %f {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t2 = rlx.transpose %t1 {permutation = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r1 = rlx.reshape %t2 : (tensor<2x3xf32>) -> tensor<6xf32>
  %r2 = rlx.reshape %r1 : (tensor<6xf32>) -> tensor<2x3xf32>
  %g = rlx.cast %r2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// -----

// x*0 folds to zeros for integers only; float x*0 stays (NaN/inf/-0); a unit that
// broadcasts x to a bigger shape is not an identity.
// CHECK-LABEL: func.func @mul_zero
// CHECK-DAG:     %[[Z:.*]] = rlx.constant dense<0> : tensor<3xi32>
// CHECK-DAG:     %[[F:.*]] = rlx.mul %f, %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-DAG:     %[[B:.*]] = rlx.mul %f, %{{.*}} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         func.return %[[Z]], %[[F]], %[[B]]
func.func @mul_zero(%i: tensor<3xi32>, %f: tensor<3xf32>) -> (tensor<3xi32>, tensor<3xf32>, tensor<2x3xf32>) {
  %zi = rlx.constant dense<0> : tensor<i32>
  %zf = rlx.constant dense<0.0> : tensor<f32>
  %one = rlx.constant dense<1.0> : tensor<2x3xf32>
  %a = rlx.mul %i, %zi : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  %b = rlx.mul %f, %zf : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %c = rlx.mul %f, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b, %c : tensor<3xi32>, tensor<3xf32>, tensor<2x3xf32>
}

// -----

// broadcast_to of a one-element constant becomes a splat (even above max-elements).
// CHECK-LABEL: func.func @splat
// CHECK-NEXT:    %{{.*}} = rlx.constant dense<7.000000e+00> : tensor<64x64xf32>
// CHECK-NEXT:    func.return
// SMALL-LABEL: func.func @splat
// SMALL-NEXT:    %{{.*}} = rlx.constant dense<7.000000e+00> : tensor<64x64xf32>
func.func @splat() -> tensor<64x64xf32> {
  %a = rlx.constant dense<7.0> : tensor<1xf32>
  %b = rlx.broadcast_to %a : (tensor<1xf32>) -> tensor<64x64xf32>
  func.return %b : tensor<64x64xf32>
}

// -----

// rlx.if on a constant condition: the taken region is inlined (then folded); a run-time
// condition keeps the rlx.if and folds inside its regions.
// CHECK-LABEL: func.func @if_constant(%x: tensor<4xf32>, %c: tensor<i1>) -> (tensor<4xf32>, tensor<2xf32>)
// CHECK-NEXT:    %[[K:.*]] = rlx.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %[[R:.*]] = rlx.if %c : tensor<i1> -> (tensor<2xf32>) {
// CHECK-NEXT:      %[[K2:.*]] = rlx.constant dense<2.000000e+00> : tensor<2xf32>
// CHECK-NEXT:      rlx.yield %[[K2]]
// CHECK-NEXT:    } else {
// CHECK-NEXT:      rlx.yield %[[K]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %x, %[[R]]
func.func @if_constant(%x: tensor<4xf32>, %c: tensor<i1>) -> (tensor<4xf32>, tensor<2xf32>) {
  %f = rlx.constant dense<false> : tensor<i1>
  %one = rlx.constant dense<1.0> : tensor<2xf32>
  %r = rlx.if %f : tensor<i1> -> (tensor<4xf32>) {
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  %three = rlx.add %one, %one : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %three2 = rlx.add %three, %one : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s = rlx.if %c : tensor<i1> -> (tensor<2xf32>) {
    %two = rlx.add %one, %one : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %two : tensor<2xf32>
  } else {
    rlx.yield %three2 : tensor<2xf32>
  }
  func.return %r, %s : tensor<4xf32>, tensor<2xf32>
}
