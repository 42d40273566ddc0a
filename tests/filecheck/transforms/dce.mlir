// RUN: rlx-opt %s --dce | filecheck %s
// RUN: rlx-opt %s -p 'dce{remove-unused-results=true}' | filecheck %s --check-prefix=RESULTS

// Dead pure ops, an unused param and an unused rng op go; the used rng op, the used
// param and the func signature stay.
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) {
  %w = rlx.param "w" : tensor<4xf32>
  %unused = rlx.param "unused" : tensor<8xf32>
  %dead = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %dead2 = rlx.neg %dead : (tensor<4xf32>) -> tensor<4xf32>
  %r0 = rlx.rng_uniform : tensor<3xf32>
  %r1 = rlx.rng_normal : tensor<4xf32>
  %c = rlx.constant dense<1.0> : tensor<2xf32>
  %y = rlx.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y, %r1, %c : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>)
// CHECK-NEXT:    %w = rlx.param "w" : tensor<4xf32>
// CHECK-NEXT:    %r1 = rlx.rng_normal : tensor<4xf32>
// CHECK-NEXT:    %c = rlx.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %y = rlx.mul %x, %w
// CHECK-NEXT:    func.return %y, %r1, %c
// CHECK-NOT:     rlx.param "unused"
// CHECK-NOT:     rlx.rng_uniform

// RESULTS-LABEL: func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// RESULTS-NOT:     rlx.constant
// RESULTS:         func.return %y, %r1 : tensor<4xf32>, tensor<4xf32>

// An rlx.if whose results are unused is erased (its regions are pure); dead ops inside a
// kept one are erased too.
// CHECK-LABEL: func.func @if_regions(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT:      %n = rlx.neg %x
// CHECK-NEXT:      rlx.yield %n
// CHECK-NEXT:    } else {
// CHECK-NEXT:      rlx.yield %x
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @if_regions(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %dead = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
