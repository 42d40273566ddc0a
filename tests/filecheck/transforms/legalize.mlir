// RUN: rlx-opt %s --legalize=matmul,add,gelu | filecheck %s --check-prefix=UNFUSE
// RUN: rlx-opt %s -p 'legalize{supported-ops=matmul,add,mul,div,sub,reduce,exp,erf,max}' | filecheck %s --check-prefix=PRIM
// RUN: rlx-opt %s --legalize | filecheck %s --check-prefix=ALL
// RUN: env RLX_DISPATCH_REPORT=1 rlx-opt %s --legalize=matmul,add,gelu 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

func.func @main(%x: tensor<2x4xf32>, %y: tensor<4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %f = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = rlx.elementwise_region %f, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    rlx.yield %s : f32
  }
  func.return %r : tensor<2x4xf32>
}

// Fused op -> matmul + add + gelu; the region -> one rlx.add per arith.addf.
// UNFUSE:      %[[M:.*]] = rlx.matmul %x, %w
// UNFUSE-NEXT: %[[A:.*]] = rlx.add %[[M]], %b
// UNFUSE-NEXT: %[[G:.*]] = rlx.gelu %[[A]]
// UNFUSE-NEXT: %[[R:.*]] = rlx.add %[[G]], %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// UNFUSE-NEXT: func.return %[[R]]

// gelu unclaimed too: decomposed into its erf form.
// PRIM:     rlx.matmul
// PRIM:     rlx.erf
// PRIM-NOT: rlx.gelu

// Empty claim: everything is legal, nothing changes.
// ALL: rlx.fused_matmul_bias_act
// ALL: rlx.elementwise_region

// REPORT:      rlx dispatch report — backend "cpu", policy prefer-native, supported_ops claim=3
// REPORT-NEXT:   rewritten:
// REPORT-NEXT:     - elementwise_region ×1 op
// REPORT-NEXT:     - fused_matmul_bias_act ×1 op logical
// REPORT-NEXT:   compile-ready: yes
