// RUN: rlx-opt %s -p 'fusion{report=true}' -o /dev/null 2>&1 | filecheck %s
// RUN: env RLX_FUSION_REPORT=1 rlx-opt %s -p fusion -o /dev/null 2>&1 | filecheck %s
// RUN: env RLX_FUSION_REPORT=0 rlx-opt %s -p fusion -o /dev/null 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty

// CHECK:      fusion report:
// CHECK-NEXT:   nodes=15→10 matmul=4→1 fused_mm_act=1 fused_swiglu=1 elementwise_region=0 attention=0 missed=1
// CHECK-NEXT:   fused: fused_matmul_bias_act=1 fused_swiglu=1
// CHECK-NEXT:   missed patterns:
// CHECK-NEXT:     matmul_bias_act @ {{.*}}fusion-report.mlir:22:3 (rlx.matmul) — matmul's single user is not an add → follow the matmul with rlx.add of a rank <= 1 bias to get rlx.fused_matmul_bias_act
// CHECK-EMPTY:

// QUIET-NOT: fusion report

func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>, %wd: tensor<32x8xf32>) -> tensor<2x8xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %h = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %g = rlx.matmul %h, %wg : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
  %u = rlx.matmul %h, %wu : (tensor<2x16xf32>, tensor<16x32xf32>) -> tensor<2x32xf32>
  %s = rlx.silu %g : (tensor<2x32xf32>) -> tensor<2x32xf32>
  %m = rlx.mul %s, %u : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x32xf32>
  %d = rlx.matmul %m, %wd : (tensor<2x32xf32>, tensor<32x8xf32>) -> tensor<2x8xf32>
  %o = rlx.tanh %d : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %o : tensor<2x8xf32>
}
