// RUN: rlx-opt %s -p convert-rlx-to-linalg,plan-memory --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg,plan-memory{alignment=1024}' --split-input-file | filecheck %s --check-prefix=ALIGN
// RUN: rlx-opt %s --convert-rlx-to-linalg --plan-memory=1024 --split-input-file | filecheck %s --check-prefix=ALIGN

// Buffers whose lifetimes [first use, last use] do not overlap share bytes; an op never
// writes its result over one of its operands (lifetimes are inclusive).
//   %a: calls 0..2 (read by the add), %b: 1..2, %c: 2..3, %d: 3..4  (256 bytes each)
//   -> %a @0, %b @256, %c @512 (overlaps both at the add), %d @0 (reuses %a).

func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = rlx.exp %x : (tensor<64xf32>) -> tensor<64xf32>
  %b = rlx.exp %a : (tensor<64xf32>) -> tensor<64xf32>
  %c = rlx.add %b, %a : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %d = rlx.exp %c : (tensor<64xf32>) -> tensor<64xf32>
  %e = rlx.exp %d : (tensor<64xf32>) -> tensor<64xf32>
  func.return %e : tensor<64xf32>
}

// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    %out0: memref<64xf32> {rlx.kind = "output", rlx.name = "out0"},
// CHECK-SAME:    %arena: memref<768xi8> {rlx.kind = "arena", rlx.name = "arena"})
// CHECK-SAME:    attributes {rlx.arena_bytes = 768 : i64, rlx.unplanned_bytes = 1024 : i64, rlx.arena_alignment = 64 : i64}
// CHECK:         %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %arena[%[[O0]]][] : memref<768xi8> to memref<64xf32>
// CHECK-NEXT:    func.call @[[EXP:rlx_k[0-9]+]](%x, %[[A]])
// CHECK-NEXT:    %[[O1:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %arena[%[[O1]]][] : memref<768xi8> to memref<64xf32>
// CHECK-NEXT:    func.call @[[EXP]](%[[A]], %[[B]])
// CHECK-NEXT:    %[[O2:.*]] = arith.constant 512 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %arena[%[[O2]]][] : memref<768xi8> to memref<64xf32>
// CHECK-NEXT:    func.call @{{.*}}(%[[B]], %[[A]], %[[C]])
// CHECK-NEXT:    %[[O3:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[D:.*]] = memref.view %arena[%[[O3]]][] : memref<768xi8> to memref<64xf32>
// CHECK-NEXT:    func.call @[[EXP]](%[[C]], %[[D]])
// CHECK-NEXT:    func.call @[[EXP]](%[[D]], %out0)
// CHECK-NEXT:    func.return
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc

// ALIGN-LABEL: func.func @chain(
// ALIGN-SAME:    %arena: memref<3072xi8>
// ALIGN-SAME:    attributes {rlx.arena_bytes = 3072 : i64, rlx.unplanned_bytes = 1024 : i64, rlx.arena_alignment = 1024 : i64}
// ALIGN:         arith.constant 0 : index
// ALIGN:         arith.constant 1024 : index
// ALIGN:         arith.constant 2048 : index
// ALIGN:         arith.constant 0 : index

// -----

// Reshape views extend the lifetime of the buffer they view; a buffer used inside a scan
// loop lives through the whole loop. Larger buffers are placed first.

func.func @views(%x: tensor<4x8xf32>, %xs: tensor<3x2xf32>) -> (tensor<32xf32>, tensor<2xf32>) {
  %small = rlx.exp %xs : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %a = rlx.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = rlx.reshape %a : (tensor<4x8xf32>) -> tensor<32xf32>
  %b = rlx.tanh %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %rb = rlx.reshape %b : (tensor<4x8xf32>) -> tensor<32xf32>
  %s = rlx.add %r, %rb : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %c = rlx.scan (%s) over (%small) {length = 3} : (tensor<32xf32>), (tensor<3x2xf32>) -> (tensor<32xf32>) {
  ^bb0(%h: tensor<32xf32>, %row: tensor<2xf32>):
    %n = rlx.neg %h : (tensor<32xf32>) -> tensor<32xf32>
    rlx.yield %n : tensor<32xf32>
  }
  %last = rlx.slice %small {starts = array<i64: 2, 0>, limits = array<i64: 3, 2>} : (tensor<3x2xf32>) -> tensor<1x2xf32>
  %lr = rlx.reshape %last : (tensor<1x2xf32>) -> tensor<2xf32>
  func.return %c, %lr : tensor<32xf32>, tensor<2xf32>
}

// %small (24 B) lives from the first op to the slice after the loop; %a, %b (through
// their reshape views) and %s (128 B each) overlap at the add; the loop's slice buffer and
// body temporary live through the whole loop and reuse the bytes of %a and %b.
// CHECK-LABEL: func.func @views(
// CHECK-SAME:    attributes {rlx.arena_bytes = 448 : i64, rlx.unplanned_bytes = 552 : i64, rlx.arena_alignment = 64 : i64}
// CHECK:         %[[SMALL:.*]] = memref.view %arena[%{{.*}}][] : memref<448xi8> to memref<3x2xf32>
// CHECK:         %[[SLICE:.*]] = memref.view %arena[%{{.*}}][] : memref<448xi8> to memref<2xf32>
// CHECK-NEXT:    %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:    %[[TMP:.*]] = memref.view %arena[%{{.*}}][] : memref<448xi8> to memref<32xf32>
// CHECK-NEXT:    scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      func.call @{{.*}}(%[[SMALL]], %[[SLICE]], %[[T]])
// CHECK-NEXT:      func.call @{{.*}}(%out0, %[[TMP]])
// CHECK-NEXT:      func.call @{{.*}}(%[[TMP]], %out0)
// CHECK-NEXT:    }
