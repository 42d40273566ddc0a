// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s
// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s --check-prefix=NEST

// A global average pool of a blocked (NCHWc) tensor, [1, C/8, H, W, 8] over H, W: rows of
// 4*3 positions with 8 kept lanes, the 8 sums carried in registers (scf.for iter_args),
// no reduction nest accumulating through the output buffer. 17 kept lanes (@wide) keep
// the nest.

func.func @main(%x: tensor<1x2x4x3x8xf32>) -> tensor<1x2x1x1x8xf32> {
  %m = rlx.reduce %x {kind = "mean", axes = array<i64: 2, 3>, keepdims = true} : (tensor<1x2x4x3x8xf32>) -> tensor<1x2x1x1x8xf32>
  func.return %m : tensor<1x2x1x1x8xf32>
}

func.func @wide(%x: tensor<2x5x17xf32>) -> tensor<2x17xf32> {
  %m = rlx.reduce %x {kind = "sum", axes = array<i64: 1>} : (tensor<2x5x17xf32>) -> tensor<2x17xf32>
  func.return %m : tensor<2x17xf32>
}

// CHECK:       func.func private @{{rlx_k[0-9]+}}(%{{.*}}: memref<1x2x4x3x8xf32>, %{{.*}}: memref<1x2x1x1x8xf32>) attributes {rlx.kernel = "rlx.reduce"}
// CHECK:         memref.reinterpret_cast {{.*}} to memref<2x12x8xf32>
// CHECK:         memref.reinterpret_cast {{.*}} to memref<2x8xf32>
// CHECK:         scf.for %{{.*}} {
// CHECK-NEXT:      scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-8:     arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:           arith.divf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NOT:     linalg.generic
// CHECK:       func.func private

// NEST:        func.func private @{{rlx_k[0-9]+}}(%{{.*}}: memref<2x5x17xf32>, %{{.*}}: memref<2x17xf32>) attributes {rlx.kernel = "rlx.reduce"}
// NEST:          linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
