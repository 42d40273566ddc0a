// RUN: rlx-opt %s --split-input-file --scan-unroll | filecheck %s
// RUN: rlx-opt %s --split-input-file --scan-unroll=2 | filecheck %s --check-prefix=SHORT
// RUN: rlx-opt %s --split-input-file -p 'scan-unroll{max-length=0}' | filecheck %s --check-prefix=OFF

// A cumulative sum of length 3: three chained adds, the trajectory is a concat.
func.func @cumsum(%init: tensor<4xf32>, %xs: tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %c, %ys = rlx.scan (%init) over (%xs) {length = 3 : i64} : (tensor<4xf32>), (tensor<3x4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  ^bb0(%carry: tensor<4xf32>, %x: tensor<4xf32>):
    %n = rlx.add %carry, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %c, %ys : tensor<4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @cumsum
// CHECK-NEXT:  %[[S0:.*]] = rlx.slice %xs {starts = array<i64: 0, 0>, limits = array<i64: 1, 4>} : (tensor<3x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:  %[[X0:.*]] = rlx.reshape %[[S0]] : (tensor<1x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:  %[[C1:.*]] = rlx.add %init, %[[X0]]
// CHECK-NEXT:  %[[Y0:.*]] = rlx.reshape %[[C1]] : (tensor<4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:  %[[S1:.*]] = rlx.slice %xs {starts = array<i64: 1, 0>, limits = array<i64: 2, 4>}
// CHECK-NEXT:  %[[X1:.*]] = rlx.reshape %[[S1]]
// CHECK-NEXT:  %[[C2:.*]] = rlx.add %[[C1]], %[[X1]]
// CHECK-NEXT:  %[[Y1:.*]] = rlx.reshape %[[C2]]
// CHECK-NEXT:  %[[S2:.*]] = rlx.slice %xs {starts = array<i64: 2, 0>, limits = array<i64: 3, 4>}
// CHECK-NEXT:  %[[X2:.*]] = rlx.reshape %[[S2]]
// CHECK-NEXT:  %[[C3:.*]] = rlx.add %[[C2]], %[[X2]]
// CHECK-NEXT:  %[[Y2:.*]] = rlx.reshape %[[C3]]
// CHECK-NEXT:  %[[YS:.*]] = rlx.concat %[[Y0]], %[[Y1]], %[[Y2]] {axis = 0 : i64} : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:  func.return %[[C3]], %[[YS]]
// SHORT-LABEL: func.func @cumsum
// SHORT:       rlx.scan
// OFF-LABEL:   func.func @cumsum
// OFF:         rlx.scan

// -----

// A body that uses a value defined outside the scan; no xs, no per-step outputs.
func.func @outer_use(%init: tensor<2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %c = rlx.scan (%init) over () {length = 2 : i64} : (tensor<2xf32>), () -> (tensor<2xf32>) {
  ^bb0(%carry: tensor<2xf32>):
    %n = rlx.mul %carry, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %n : tensor<2xf32>
  }
  func.return %c : tensor<2xf32>
}
// CHECK-LABEL: func.func @outer_use
// CHECK-NEXT:  %[[A:.*]] = rlx.mul %init, %w
// CHECK-NEXT:  %[[B:.*]] = rlx.mul %[[A]], %w
// CHECK-NEXT:  func.return %[[B]]
// SHORT-LABEL: func.func @outer_use
// SHORT-NOT:   rlx.scan
// OFF-LABEL:   func.func @outer_use
// OFF:         rlx.scan

// -----

// Nested scans are unrolled innermost first.
func.func @nested(%init: tensor<2xf32>) -> tensor<2xf32> {
  %c = rlx.scan (%init) over () {length = 2 : i64} : (tensor<2xf32>), () -> (tensor<2xf32>) {
  ^bb0(%carry: tensor<2xf32>):
    %d = rlx.scan (%carry) over () {length = 2 : i64} : (tensor<2xf32>), () -> (tensor<2xf32>) {
    ^bb1(%inner: tensor<2xf32>):
      %e = rlx.exp %inner : (tensor<2xf32>) -> tensor<2xf32>
      rlx.yield %e : tensor<2xf32>
    }
    rlx.yield %d : tensor<2xf32>
  }
  func.return %c : tensor<2xf32>
}
// CHECK-LABEL:   func.func @nested
// CHECK-NOT:     rlx.scan
// CHECK-COUNT-4: rlx.exp
// CHECK-NEXT:    func.return
