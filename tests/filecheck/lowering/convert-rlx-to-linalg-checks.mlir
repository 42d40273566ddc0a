// RUN: rlx-opt %s -p convert-rlx-to-linalg --split-input-file | filecheck %s

// Ops that check their data (gather indices, integer division) get the status record as a
// trailing argument; the caller stores the site number (word 4) before each checked call,
// the function lists the sites (location and op) in rlx.error_sites.
func.func @main(%x: tensor<6x3xf32>, %i: tensor<4xi32>, %a: tensor<4xi32>) -> (tensor<4x3xf32>, tensor<4xi32>) {
  %0 = rlx.gather %x, %i : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  %1 = rlx.div %a, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1 : tensor<4x3xf32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %out1: memref<4xi32> {rlx.kind = "output", rlx.name = "out1"}, %status: memref<5xi64> {rlx.kind = "status", rlx.name = "status"})
// CHECK-SAME:    attributes {rlx.error_sites = ["{{.*}}convert-rlx-to-linalg-checks.mlir:7:3: rlx.gather [from input 'arg1']", "{{.*}}convert-rlx-to-linalg-checks.mlir:8:3: rlx.div [from inputs 'arg1', 'arg2']"]}
// CHECK:         memref.store %[[S0:.*]], %status[%[[W4:.*]]] : memref<5xi64>
// CHECK-NEXT:    func.call @[[GATHER:rlx_k[0-9]+]](%x, %i, %out0, %status)
// CHECK-NEXT:    memref.store %{{.*}}, %status[%[[W4]]] : memref<5xi64>
// CHECK-NEXT:    func.call @[[DIV:rlx_k[0-9]+]](%a, %i, %out1, %status)

// CHECK:       func.func private @[[GATHER]]({{.*}}, %[[ST:.*]]: memref<5xi64>) attributes {rlx.kernel = "rlx.gather"}
// CHECK:         %[[BAD:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    scf.if %[[BAD]] {
// CHECK-NEXT:      %[[CODE:.*]] = memref.load %[[ST]][%{{.*}}] : memref<5xi64>
// CHECK-NEXT:      %[[CLEAR:.*]] = arith.cmpi eq, %[[CODE]], %{{.*}} : i64
// CHECK-NEXT:      scf.if %[[CLEAR]] {
// CHECK:         %[[SAFE:.*]] = arith.select %[[BAD]], %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %{{.*}} = arith.index_cast %[[SAFE]] : i64 to index

// The division itself is in the shape-generic worker the op's kernel calls; the status
// record is passed on to it.
// CHECK:       func.func private @[[DIVW:rlx_k[0-9]+]]({{.*}}, %{{.*}}: memref<5xi64> {llvm.noalias}) attributes {rlx.kernel = "rlx.div (any shape)"}
// CHECK:         %[[Z:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    scf.if %[[Z]] {
// CHECK:         %[[OVF:.*]] = arith.andi
// CHECK-NEXT:    scf.if %[[OVF]] {
// CHECK:         %[[ANY:.*]] = arith.ori %[[Z]], %[[OVF]] : i1
// CHECK-NEXT:    %[[D:.*]] = arith.select %[[ANY]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    %{{.*}} = arith.divsi %{{.*}}, %[[D]] : i32
// CHECK:       func.func private @[[DIV]]({{.*}}, %[[DST:.*]]: memref<5xi64>) attributes {rlx.kernel = "rlx.div"}
// CHECK:         func.call @[[DIVW]]({{.*}}, %[[DST]])

// -----

// Nothing to check: no status argument (the ABI is unchanged).
func.func @plain(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = rlx.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @plain(
// CHECK-SAME:    %out0: memref<4xf32> {rlx.kind = "output", rlx.name = "out0"}) {
// CHECK-NOT:     status
// CHECK:         func.return
