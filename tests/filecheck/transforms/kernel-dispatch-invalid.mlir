// RUN: not rlx-opt %s --kernel-dispatch=fastest 2>&1 | filecheck %s --check-prefix=POLICY
// RUN: not rlx-opt %s -p 'kernel-dispatch{force-common-kinds=softmaxx}' 2>&1 | filecheck %s --check-prefix=KIND
// RUN: not rlx-opt %s -p 'kernel-dispatch{force-native-kinds=matmul}' 2>&1 | filecheck %s --check-prefix=NOTLOGICAL
// RUN: not rlx-opt %s -p 'kernel-dispatch{supported-ops=add,bogus}' 2>&1 | filecheck %s --check-prefix=SUPPORTED

func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = rlx.softmax %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// POLICY: unknown kernel-dispatch policy 'fastest'; accepted: prefer-native, common, native
// KIND: unknown logical kernel 'softmaxx' (did you mean 'softmax'?); accepted: softmax, layer_norm, rms_norm, attention, rope, gelu, gelu_tanh, silu, sigmoid, fused_matmul_bias_act
// NOTLOGICAL: unknown logical kernel 'matmul'
// SUPPORTED: unknown op kind 'bogus'
