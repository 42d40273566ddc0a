// RUN: rlx-opt %s --split-input-file --hoist-param-invariant | filecheck %s

// y = x @ (transpose(w) * scale): the weight-side product moves to @prepare, and so do the
// params only it reads; @main gets it as a trailing "prepared" argument.
func.func @main(%x: tensor<2x4xf32> {rlx.name = "x"}) -> tensor<2x3xf32> {
  %w = rlx.param "w" : tensor<3x4xf32>
  %s = rlx.param "scale" : tensor<f32>
  %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %ws = rlx.mul %t, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %y = rlx.matmul %x, %ws : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK:      func.func @prepare() -> tensor<4x3xf32> attributes {rlx.prepare_for = "main"} {
// CHECK-NEXT:   %w = rlx.param "w" : tensor<3x4xf32>
// CHECK-NEXT:   %s = rlx.param "scale" : tensor<f32>
// CHECK-NEXT:   %t = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:   %ws = rlx.mul %t, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
// CHECK-NEXT:   func.return %ws : tensor<4x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.func @main(%x: tensor<2x4xf32> {rlx.name = "x"}, %prep0: tensor<4x3xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"}) -> tensor<2x3xf32> {
// CHECK-NEXT:   %y = rlx.matmul %x, %prep0 : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:   func.return %y : tensor<2x3xf32>
// CHECK-NEXT: }

// -----

// Outputs that depend only on weights are prepared too; a param used by both halves is
// in both; rng ops are dynamic (never hoisted), like everything that reads them.
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %w = rlx.param "w" : tensor<4xf32>
  %e = rlx.exp %w : (tensor<4xf32>) -> tensor<4xf32>
  %r = rlx.rng_uniform : tensor<4xf32>
  %n = rlx.neg %r : (tensor<4xf32>) -> tensor<4xf32>
  %a = rlx.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %e, %n, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
// CHECK:      func.func @prepare() -> tensor<4xf32> attributes {rlx.prepare_for = "main"} {
// CHECK-NEXT:   %w = rlx.param "w" : tensor<4xf32>
// CHECK-NEXT:   %e = rlx.exp %w
// CHECK-NEXT:   func.return %e
// CHECK:      func.func @main(%x: tensor<4xf32>, %prep0: tensor<4xf32> {rlx.kind = "prepared", rlx.name = "__rlx_prep_0"})
// CHECK-NEXT:   %w = rlx.param "w" : tensor<4xf32>
// CHECK-NEXT:   %r = rlx.rng_uniform : tensor<4xf32>
// CHECK-NEXT:   %n = rlx.neg %r
// CHECK-NEXT:   %a = rlx.add %x, %w
// CHECK-NEXT:   func.return %prep0, %n, %a

// -----

// Nothing to hoist (params are used directly): the module is unchanged.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = rlx.param "w" : tensor<4xf32>
  %a = rlx.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK-NOT:  @prepare
// CHECK:      func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %w = rlx.param "w" : tensor<4xf32>
// CHECK-NEXT:   %a = rlx.add %x, %w

// -----

// An rlx.if on a param condition with param-only regions moves to @prepare whole; one on
// an input stays, and the param-only values its regions read become prepared arguments.
// CHECK-LABEL: func.func @prepare() -> (tensor<4xf32>, tensor<4xf32>)
// CHECK:         %[[EW:.*]] = rlx.exp %w
// CHECK-NEXT:    %[[S:.*]] = rlx.if %k : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT:      %{{.*}} = rlx.tanh %w
// CHECK:         func.return %[[EW]], %[[S]]
// CHECK-LABEL: func.func @main(%c: tensor<i1>, %x: tensor<4xf32>, %prep0: tensor<4xf32> {{.*}}, %prep1: tensor<4xf32> {{.*}})
// CHECK-NEXT:    %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT:      %a = rlx.add %x, %prep0
// CHECK-NEXT:      rlx.yield %a
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %b = rlx.mul %x, %prep1
// CHECK-NEXT:      rlx.yield %b
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %prep1
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %w = rlx.param "w" : tensor<4xf32>
  %k = rlx.param "k" : tensor<i1>
  %ew = rlx.exp %w : (tensor<4xf32>) -> tensor<4xf32>
  %s = rlx.if %k : tensor<i1> -> (tensor<4xf32>) {
    %t = rlx.tanh %w : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %t : tensor<4xf32>
  } else {
    rlx.yield %w : tensor<4xf32>
  }
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %a = rlx.add %x, %ew : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %a : tensor<4xf32>
  } else {
    %b = rlx.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %b : tensor<4xf32>
  }
  func.return %r, %s : tensor<4xf32>, tensor<4xf32>
}
