// RUN: rlx-opt %s --kernel-dispatch | filecheck %s --check-prefix=DEFAULT
// RUN: rlx-opt %s --kernel-dispatch=common | filecheck %s --check-prefix=COMMON
// RUN: rlx-opt %s -p 'kernel-dispatch{policy=common force-native-kinds=gelu}' | filecheck %s --check-prefix=FORCENATIVE
// RUN: rlx-opt %s -p 'kernel-dispatch{supported-ops=gelu,add}' | filecheck %s --check-prefix=CLAIM
// RUN: rlx-opt %s -p 'kernel-dispatch{policy=native force-common-kinds=fused_matmul_bias_act}' | filecheck %s --check-prefix=UNFUSE
// RUN: env RLX_DISPATCH_REPORT=1 rlx-opt %s -p 'kernel-dispatch{supported-ops=gelu,add,matmul,reduce,sub,exp,div}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %s = rlx.softmax %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %f = rlx.fused_matmul_bias_act %s, %w, %b {activation = "gelu"} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %f : tensor<2x4xf32>
}

// prefer-native with no claim list: everything stays native.
// DEFAULT:      rlx.softmax
// DEFAULT-NEXT: rlx.fused_matmul_bias_act

// common: softmax -> max/sub/exp/sum/div; the fused op unfuses and its gelu decomposes.
// COMMON:      %[[M:.*]] = rlx.reduce %x {kind = "max", axes = array<i64: -1>, keepdims = true}
// COMMON-NEXT: %[[D:.*]] = rlx.sub %x, %[[M]]
// COMMON-NEXT: %[[E:.*]] = rlx.exp %[[D]]
// COMMON-NEXT: %[[S:.*]] = rlx.reduce %[[E]] {kind = "sum", axes = array<i64: -1>, keepdims = true}
// COMMON-NEXT: %[[P:.*]] = rlx.div %[[E]], %[[S]]
// COMMON-NEXT: %[[MM:.*]] = rlx.matmul %[[P]], %w
// COMMON-NEXT: %[[A:.*]] = rlx.add %[[MM]], %b
// COMMON:      rlx.erf
// COMMON-NOT:  rlx.gelu
// COMMON-NOT:  rlx.softmax
// COMMON-NOT:  rlx.fused_matmul_bias_act

// force-native beats the policy: gelu is kept.
// FORCENATIVE:     rlx.matmul
// FORCENATIVE:     rlx.gelu
// FORCENATIVE-NOT: rlx.erf

// prefer-native with a claim list: unclaimed softmax and fused op go common, gelu stays.
// CLAIM-NOT: rlx.softmax
// CLAIM:     rlx.matmul
// CLAIM:     rlx.gelu

// native policy, fused op forced common: only the fused op unfuses.
// UNFUSE:      rlx.softmax
// UNFUSE-NEXT: rlx.matmul
// UNFUSE-NEXT: rlx.add
// UNFUSE-NEXT: rlx.gelu

// REPORT:      rlx dispatch report — backend "cpu", policy prefer-native, supported_ops claim=7
// REPORT-NEXT:   common-ir lowering (claim the kind in supported_ops for the native fast path):
// REPORT-NEXT:     - fused_matmul_bias_act
// REPORT-NEXT:     - softmax
// REPORT-NEXT:   common-ir:
// REPORT-NEXT:     - fused_matmul_bias_act ×1 op logical
// REPORT-NEXT:     - softmax ×1 op logical
// REPORT-NEXT:   compile-ready: yes
