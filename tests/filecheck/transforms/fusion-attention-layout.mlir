// RUN: rlx-opt %s -p 'canonicalize,fusion' | filecheck %s
// RUN: rlx-opt %s -p 'fusion{elementwise-region=false}' | filecheck %s --check-prefix=NOCANON

// rlx.attention from the multi-head layout of ONNX / torch exports: the projections are
// reshaped to [B, S, H, D] and transposed to [B, H, S, D]; K's two transposes
// ([0, 2, 1, 3] then [0, 1, 3, 2]) are one [0, 2, 3, 1] after canonicalize. Either way
// the fused op reads k through one emitted [0, 2, 1, 3] transpose (or the original one).
// Then the [0, 2, 1, 3] transposes of q, k, v and of the output are absorbed: the op
// takes layout = "bshd" and reads the reshaped projections in place.

// CHECK-LABEL: func.func @mha
// CHECK-NOT:     rlx.transpose
// CHECK:         %ot = rlx.attention %q1, %k1, %v1, %mask {scale = 5.000000e-01 : f64, mask_kind = "bias", layout = "bshd"} : (tensor<2x5x2x4xf32>, tensor<2x5x2x4xf32>, tensor<2x5x2x4xf32>, tensor<2x1x1x5xf32>) -> tensor<2x5x2x4xf32>
// CHECK-NEXT:    %y = rlx.reshape %ot
// CHECK-NOT:     rlx.softmax
// CHECK-NOT:     rlx.transpose
// NOCANON-LABEL: func.func @mha
// NOCANON-NOT:     rlx.transpose
// NOCANON:         %ot = rlx.attention %q1, %k1, %v1, %mask {scale = 5.000000e-01 : f64, mask_kind = "bias", layout = "bshd"}
// NOCANON-NOT:     rlx.softmax
// NOCANON-NOT:     rlx.transpose
func.func @mha(%q0: tensor<2x5x8xf32>, %k0: tensor<2x5x8xf32>, %v0: tensor<2x5x8xf32>, %mask: tensor<2x1x1x5xf32>) -> tensor<2x5x8xf32> {
  %q1 = rlx.reshape %q0 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
  %k1 = rlx.reshape %k0 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
  %v1 = rlx.reshape %v0 : (tensor<2x5x8xf32>) -> tensor<2x5x2x4xf32>
  %q = rlx.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %k = rlx.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %v = rlx.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x4xf32>) -> tensor<2x2x4x5xf32>
  %s = rlx.matmul %q, %kt : (tensor<2x2x5x4xf32>, tensor<2x2x4x5xf32>) -> tensor<2x2x5x5xf32>
  %c = rlx.constant dense<2.0> : tensor<f32>
  %d = rlx.div %s, %c : (tensor<2x2x5x5xf32>, tensor<f32>) -> tensor<2x2x5x5xf32>
  %m = rlx.add %d, %mask : (tensor<2x2x5x5xf32>, tensor<2x1x1x5xf32>) -> tensor<2x2x5x5xf32>
  %p = rlx.softmax %m {axis = -1 : i64} : (tensor<2x2x5x5xf32>) -> tensor<2x2x5x5xf32>
  %o = rlx.matmul %p, %v : (tensor<2x2x5x5xf32>, tensor<2x2x5x4xf32>) -> tensor<2x2x5x4xf32>
  %ot = rlx.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x2x5x4xf32>) -> tensor<2x5x2x4xf32>
  %y = rlx.reshape %ot : (tensor<2x5x2x4xf32>) -> tensor<2x5x8xf32>
  func.return %y : tensor<2x5x8xf32>
}

// K already transposed [0, 2, 3, 1] by the exporter; torch SDPA's export scales q and kᵀ
// by √scale each and does not scale the scores: scale = 0.5 * 0.25.
// CHECK-LABEL: func.func @mha_prescaled
// CHECK:         %[[K:.*]] = rlx.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    rlx.attention %q, %[[K]], %v {scale = 1.250000e-01 : f64, mask_kind = "none"}
// CHECK-NOT:     rlx.mul
// NOCANON-LABEL: func.func @mha_prescaled
// NOCANON:         rlx.attention %q, %{{.*}}, %v {scale = 1.250000e-01 : f64, mask_kind = "none"}
func.func @mha_prescaled(%q: tensor<1x3x6x4xf32>, %k1: tensor<1x6x3x4xf32>, %v: tensor<1x3x6x4xf32>) -> tensor<1x3x6x4xf32> {
  %a = rlx.constant dense<0.5> : tensor<f32>
  %b = rlx.constant dense<0.25> : tensor<1xf32>
  %kt = rlx.transpose %k1 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x6x3x4xf32>) -> tensor<1x3x4x6xf32>
  %qs = rlx.mul %q, %a : (tensor<1x3x6x4xf32>, tensor<f32>) -> tensor<1x3x6x4xf32>
  %ks = rlx.mul %b, %kt : (tensor<1xf32>, tensor<1x3x4x6xf32>) -> tensor<1x3x4x6xf32>
  %s = rlx.matmul %qs, %ks : (tensor<1x3x6x4xf32>, tensor<1x3x4x6xf32>) -> tensor<1x3x6x6xf32>
  %p = rlx.softmax %s {axis = -1 : i64} : (tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %o = rlx.matmul %p, %v : (tensor<1x3x6x6xf32>, tensor<1x3x6x4xf32>) -> tensor<1x3x6x4xf32>
  func.return %o : tensor<1x3x6x4xf32>
}

// Grouped-query attention as HF's repeat_kv exports it: k/v [B, Hkv, S, D] reshaped to
// [B, Hkv, 1, S, D], broadcast to [B, Hkv, g, S, D], reshaped to [B, Hkv·g, S, D]. The
// fused op reads the unrepeated k/v (2 kv heads for 4 q heads); the repeats are gone.
// CHECK-LABEL: func.func @gqa
// CHECK-NOT:     rlx.broadcast_to
// CHECK:         %[[O:.*]] = rlx.attention %q, %k, %v {scale = 5.000000e-01 : f64, mask_kind = "none"} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %k5 = rlx.reshape %k : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x5x8xf32>
  %kb = rlx.broadcast_to %k5 : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x2x5x8xf32>
  %kr = rlx.reshape %kb : (tensor<1x2x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %v5 = rlx.reshape %v : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x5x8xf32>
  %vb = rlx.broadcast_to %v5 : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x2x5x8xf32>
  %vr = rlx.reshape %vb : (tensor<1x2x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %kt = rlx.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x4x5x8xf32>) -> tensor<1x4x8x5xf32>
  %s = rlx.matmul %q, %kt : (tensor<1x4x3x8xf32>, tensor<1x4x8x5xf32>) -> tensor<1x4x3x5xf32>
  %c = rlx.constant dense<0.5> : tensor<f32>
  %d = rlx.mul %s, %c : (tensor<1x4x3x5xf32>, tensor<f32>) -> tensor<1x4x3x5xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<1x4x3x5xf32>) -> tensor<1x4x3x5xf32>
  %o = rlx.matmul %p, %vr : (tensor<1x4x3x5xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %o : tensor<1x4x3x8xf32>
}

// Negative: kᵀ = transpose [0, 3, 1, 2] (not a head split); a [0, 2, 3, 1] kᵀ that is
// also returned.
// CHECK-LABEL: func.func @mha_no
// CHECK-NOT:     rlx.attention
// CHECK:         func.return
func.func @mha_no(%q: tensor<1x2x4x4xf32>, %k1: tensor<1x4x2x4xf32>, %v: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %kt0 = rlx.transpose %k1 {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x2x4xf32>) -> tensor<1x4x4x2xf32>
  %kt0r = rlx.reshape %kt0 : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
  %s0 = rlx.matmul %q, %kt0r : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p0 = rlx.softmax %s0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o0 = rlx.matmul %p0, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %kt1 = rlx.transpose %k1 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %s1 = rlx.matmul %q, %kt1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p1 = rlx.softmax %s1 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1 = rlx.matmul %p1, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %o0, %o1, %kt1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// What is not folded stays an operand: a prescale by a runtime scalar stays in q; a
// broadcast over another axis than the heads is not a repeat_kv (k keeps it).
// CHECK-LABEL: func.func @mha_kept
// CHECK:         %qs = rlx.mul %q, %sc
// CHECK:         rlx.attention %qs, %{{.*}}, %v {scale = 5.000000e-01 : f64, mask_kind = "none"}
// CHECK:         %kb = rlx.broadcast_to %k5 : (tensor<1x2x2x1x4xf32>) -> tensor<1x2x2x2x4xf32>
// CHECK:         %kr = rlx.reshape %kb
// CHECK:         rlx.attention %q, %kr, %v {scale = 1.000000e+00 : f64, mask_kind = "none"}
func.func @mha_kept(%q: tensor<1x2x4x4xf32>, %k1: tensor<1x4x2x4xf32>, %v: tensor<1x2x4x4xf32>, %sc: tensor<f32>, %kk: tensor<1x2x2x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %kt2 = rlx.transpose %k1 {permutation = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %qs = rlx.mul %q, %sc : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %s2 = rlx.matmul %qs, %kt2 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = rlx.constant dense<0.5> : tensor<f32>
  %d2 = rlx.mul %s2, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = rlx.softmax %d2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = rlx.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %k5 = rlx.reshape %kk : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x1x4xf32>
  %kb = rlx.broadcast_to %k5 : (tensor<1x2x2x1x4xf32>) -> tensor<1x2x2x2x4xf32>
  %kr = rlx.reshape %kb : (tensor<1x2x2x2x4xf32>) -> tensor<1x2x4x4xf32>
  %kt3 = rlx.transpose %kr {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s3 = rlx.matmul %q, %kt3 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p3 = rlx.softmax %s3 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o3 = rlx.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %o2, %o3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// An rlx.attention built on repeated k/v (the ONNX importer's and the Llama builder's
// GQA) reads them unrepeated; a v that is not repeated keeps both as they are.
// CHECK-LABEL: func.func @gqa_attention_op
// CHECK-NOT:     rlx.broadcast_to
// CHECK:         %[[O:.*]] = rlx.attention %q, %k, %v {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:    func.return %[[O]]
// NOCANON-LABEL: func.func @gqa_attention_op
// NOCANON:         rlx.attention %q, %k, %v {mask_kind = "causal"}
func.func @gqa_attention_op(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %k5 = rlx.reshape %k : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x5x8xf32>
  %kb = rlx.broadcast_to %k5 : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x2x5x8xf32>
  %kr = rlx.reshape %kb : (tensor<1x2x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %v5 = rlx.reshape %v : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x5x8xf32>
  %vb = rlx.broadcast_to %v5 : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x2x5x8xf32>
  %vr = rlx.reshape %vb : (tensor<1x2x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %o = rlx.attention %q, %kr, %vr {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %o : tensor<1x4x3x8xf32>
}

// CHECK-LABEL: func.func @gqa_attention_op_no
// CHECK:         rlx.broadcast_to
// CHECK:         rlx.attention %q, %kr, %v4 {mask_kind = "causal"}
func.func @gqa_attention_op_no(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v4: tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %k5 = rlx.reshape %k : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x5x8xf32>
  %kb = rlx.broadcast_to %k5 : (tensor<1x2x1x5x8xf32>) -> tensor<1x2x2x5x8xf32>
  %kr = rlx.reshape %kb : (tensor<1x2x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %o = rlx.attention %q, %kr, %v4 {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %o : tensor<1x4x3x8xf32>
}
