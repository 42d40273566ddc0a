// RUN: rlx-opt %s --fusion | filecheck %s
// RUN: rlx-opt %s -p 'fusion{max-steps=2}' | filecheck %s --check-prefix=STEPS
// RUN: rlx-opt %s -p 'fusion{max-inputs=2}' | filecheck %s --check-prefix=INPUTS
// RUN: rlx-opt %s -p 'fusion{max-inputs=1}' | filecheck %s --check-prefix=ONE

// A chain of three ops: one region; with max-steps=2 the last two only.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    rlx.elementwise_region %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[A]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[N]] : f32
// CHECK-NEXT:      rlx.yield %[[T]] : f32
// STEPS-LABEL: func.func @chain
// STEPS-NEXT:    %[[E:.*]] = rlx.exp %x
// STEPS-NEXT:    rlx.elementwise_region %[[E]]
// STEPS-NEXT:    ^{{.*}}(%[[A:.*]]: f32):
// STEPS-NEXT:      arith.negf %[[A]]
// STEPS-NEXT:      math.tanh
// STEPS-NEXT:      rlx.yield
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %n = rlx.neg %e : (tensor<4xf32>) -> tensor<4xf32>
  %t = rlx.tanh %n : (tensor<4xf32>) -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// Three inputs; with max-inputs=2 at most two per region.
// CHECK-LABEL: func.func @inputs
// CHECK-NEXT:    rlx.elementwise_region %x, %y, %z : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// INPUTS-LABEL: func.func @inputs
// INPUTS-NEXT:    %[[A:.*]] = rlx.add %x, %y
// INPUTS-NEXT:    rlx.elementwise_region %[[A]], %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @inputs(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.mul %a, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.exp %b : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// A single elementwise op is not a region.
// CHECK-LABEL: func.func @single
// CHECK-NEXT:    rlx.exp
// CHECK-NEXT:    func.return
func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// A graph output in the middle splits the chain: %b is returned, so it ends a region.
// CHECK-LABEL: func.func @output_in_middle
// CHECK-NEXT:    %[[B:.*]] = rlx.elementwise_region %x
// CHECK:         rlx.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[D:.*]] = rlx.elementwise_region %[[B]]
// CHECK:         func.return %[[D]], %[[B]]
func.func @output_in_middle(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.sin %b : (tensor<4xf32>) -> tensor<4xf32>
  %d = rlx.cos %c : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d, %b : tensor<4xf32>, tensor<4xf32>
}

// A value with two consumers is a region input, not an intermediate.
// CHECK-LABEL: func.func @two_users
// CHECK-NEXT:    %[[A:.*]] = rlx.exp %x
// CHECK-NEXT:    rlx.elementwise_region %[[A]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    ^{{.*}}(%[[V:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = math.sin %[[V]]
// CHECK-NEXT:      %[[C:.*]] = math.cos %[[V]]
// CHECK-NEXT:      arith.addf %[[S]], %[[C]]
func.func @two_users(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = rlx.sin %a : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.cos %a : (tensor<4xf32>) -> tensor<4xf32>
  %o = rlx.add %s, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}

// Integer ops use arith integer ops; unsigned integers have no scalar form and stay.
// CHECK-LABEL: func.func @integers
// CHECK:         rlx.elementwise_region %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xf32>
// CHECK:           arith.addi
// CHECK:           arith.maxsi
// CHECK:           arith.sitofp
// CHECK:         rlx.add %u, %u
// CHECK-NEXT:    rlx.neg
func.func @integers(%x: tensor<4xi32>, %y: tensor<4xi32>, %u: tensor<4xui8>) -> (tensor<4xf32>, tensor<4xui8>) {
  %a = rlx.add %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %r = rlx.relu %a : (tensor<4xi32>) -> tensor<4xi32>
  %f = rlx.cast %r : (tensor<4xi32>) -> tensor<4xf32>
  %ua = rlx.add %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %un = rlx.neg %ua : (tensor<4xui8>) -> tensor<4xui8>
  func.return %f, %un : tensor<4xf32>, tensor<4xui8>
}

// Regions stop at non-elementwise ops (softmax) on both sides.
// CHECK-LABEL: func.func @boundary
// CHECK-NEXT:    rlx.elementwise_region %x
// CHECK:         rlx.softmax
// CHECK-NEXT:    rlx.elementwise_region
func.func @boundary(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %s = rlx.softmax %b : (tensor<4xf32>) -> tensor<4xf32>
  %c = rlx.sin %s : (tensor<4xf32>) -> tensor<4xf32>
  %d = rlx.cos %c : (tensor<4xf32>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// With max-inputs=1 the add cannot take in its producer chain (2 inputs) and forms no
// region; the chain still forms its own.
// ONE-LABEL: func.func @limited_consumer
// ONE-NEXT:    %[[R:.*]] = rlx.elementwise_region %x : (tensor<4xf32>) -> tensor<4xf32>
// ONE:         rlx.add %y, %[[R]]
func.func @limited_consumer(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %n = rlx.neg %e : (tensor<4xf32>) -> tensor<4xf32>
  %a = rlx.add %y, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
