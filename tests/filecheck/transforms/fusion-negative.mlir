// RUN: rlx-opt %s -p 'fusion{elementwise-region=false}' | filecheck %s

// Cases where a fusion pattern must NOT fire (elementwise regions are disabled so that
// the primitive ops stay visible).

// The matmul result is also a graph output: it has two users.
// CHECK-LABEL: func.func @mba_matmul_two_users
// CHECK-NEXT:    rlx.matmul
// CHECK-NEXT:    rlx.add
// CHECK-NOT:     rlx.fused_matmul_bias_act
func.func @mba_matmul_two_users(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  func.return %a, %mm : tensor<2x16xf32>, tensor<2x16xf32>
}

// The add is a graph output in the middle: matmul+bias fuse, the activation stays.
// CHECK-LABEL: func.func @mba_add_is_output
// CHECK-NEXT:    %[[F:.*]] = rlx.fused_matmul_bias_act %x, %w, %b {activation = "none"}
// CHECK-NEXT:    %[[G:.*]] = rlx.gelu %[[F]]
// CHECK-NEXT:    func.return %[[G]], %[[F]]
func.func @mba_add_is_output(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %g = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %g, %a : tensor<2x16xf32>, tensor<2x16xf32>
}

// CHECK-LABEL: func.func @mba_bias_rank2
// CHECK-NEXT:    rlx.matmul
// CHECK-NEXT:    rlx.add
// CHECK-NEXT:    rlx.gelu
func.func @mba_bias_rank2(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %g = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %g : tensor<2x16xf32>
}

// tanh is not a fusable epilogue.
// CHECK-LABEL: func.func @mba_tanh
// CHECK-NEXT:    %[[F:.*]] = rlx.fused_matmul_bias_act %x, %w, %b {activation = "none"}
// CHECK-NEXT:    rlx.tanh %[[F]]
func.func @mba_tanh(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %t = rlx.tanh %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %t : tensor<2x16xf32>
}

// Integer matmuls never fuse (the fused op is floating-point only).
// CHECK-LABEL: func.func @mba_integer
// CHECK-NEXT:    rlx.matmul
// CHECK-NEXT:    rlx.add
func.func @mba_integer(%x: tensor<2x8xi32>, %w: tensor<8x16xi32>, %b: tensor<16xi32>) -> tensor<2x16xi32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xi32>, tensor<8x16xi32>) -> tensor<2x16xi32>
  %a = rlx.add %mm, %b : (tensor<2x16xi32>, tensor<16xi32>) -> tensor<2x16xi32>
  func.return %a : tensor<2x16xi32>
}

// The residual add is also returned.
// CHECK-LABEL: func.func @residual_add_is_output
// CHECK-NEXT:    rlx.add
// CHECK-NEXT:    rlx.layer_norm
func.func @residual_add_is_output(%x: tensor<4x32xf32>, %r: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %s = rlx.add %x, %r : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %n = rlx.layer_norm %s, %g, %b : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %n, %s : tensor<4x32xf32>, tensor<4x32xf32>
}

// The residual is broadcast (shapes differ).
// CHECK-LABEL: func.func @residual_broadcast
// CHECK-NEXT:    rlx.add
// CHECK-NEXT:    rlx.rms_norm
func.func @residual_broadcast(%x: tensor<4x32xf32>, %r: tensor<32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %s = rlx.add %x, %r : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %n = rlx.rms_norm %s, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %n : tensor<4x32xf32>
}

// The reshape does not flatten the leading dims, or the norm is also returned.
// CHECK-LABEL: func.func @rms_norm_reshape_no
// CHECK-NEXT:    %[[N:.*]] = rlx.rms_norm %x
// CHECK-NEXT:    rlx.reshape %[[N]] : (tensor<2x3x32xf32>) -> tensor<2x96xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.rms_norm %x
// CHECK-NEXT:    rlx.reshape %[[M]] : (tensor<2x3x32xf32>) -> tensor<6x32xf32>
func.func @rms_norm_reshape_no(%x: tensor<2x3x32xf32>, %g: tensor<32xf32>) -> (tensor<2x96xf32>, tensor<6x32xf32>, tensor<2x3x32xf32>) {
  %n = rlx.rms_norm %x, %g : (tensor<2x3x32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %r = rlx.reshape %n : (tensor<2x3x32xf32>) -> tensor<2x96xf32>
  %m = rlx.rms_norm %x, %g : (tensor<2x3x32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %r2 = rlx.reshape %m : (tensor<2x3x32xf32>) -> tensor<6x32xf32>
  func.return %r, %r2, %m : tensor<2x96xf32>, tensor<6x32xf32>, tensor<2x3x32xf32>
}

// Gate and up projections of different inputs.
// CHECK-LABEL: func.func @swiglu_different_inputs
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.mul
func.func @swiglu_different_inputs(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %g = rlx.matmul %a, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %b, %wu : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %u, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// The gate projection is also a graph output: no swiglu (the matmuls still share x).
// CHECK-LABEL: func.func @swiglu_gate_is_output
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.silu
// CHECK-NEXT:    rlx.mul
func.func @swiglu_gate_is_output(%x: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %g = rlx.matmul %x, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %x, %wu : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %u, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m, %g : tensor<4x32xf32>, tensor<4x32xf32>
}

// The slices are not the two halves of the last axis.
// CHECK-LABEL: func.func @swiglu_not_halves
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.mul
func.func @swiglu_not_halves(%h: tensor<4x64xf32>) -> tensor<4x16xf32> {
  %up = rlx.slice %h {starts = array<i64: 0, 0>, limits = array<i64: 4, 16>} : (tensor<4x64xf32>) -> tensor<4x16xf32>
  %gate = rlx.slice %h {starts = array<i64: 0, 16>, limits = array<i64: 4, 32>} : (tensor<4x64xf32>) -> tensor<4x16xf32>
  %s = rlx.silu %gate : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = rlx.mul %up, %s : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %m : tensor<4x16xf32>
}

// The halves come from different tensors.
// CHECK-LABEL: func.func @swiglu_two_sources
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.mul
func.func @swiglu_two_sources(%h: tensor<4x64xf32>, %k: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %up = rlx.slice %h {starts = array<i64: 0, 0>, limits = array<i64: 4, 32>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %gate = rlx.slice %k {starts = array<i64: 0, 32>, limits = array<i64: 4, 64>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %gate : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %up, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// Different lhs, a rank-3 rhs, or a single matmul: nothing to share.
// CHECK-LABEL: func.func @shared_input_no
// CHECK-NOT:     rlx.concat
// CHECK-COUNT-3: rlx.matmul
func.func @shared_input_no(%x: tensor<2x16xf32>, %y: tensor<2x16xf32>, %w: tensor<16x8xf32>, %w3: tensor<1x16x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x2x8xf32>) {
  %a = rlx.matmul %x, %w : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  %b = rlx.matmul %y, %w : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  %c = rlx.matmul %x, %w3 : (tensor<2x16xf32>, tensor<1x16x8xf32>) -> tensor<1x2x8xf32>
  func.return %a, %b, %c : tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x2x8xf32>
}

// Wrong transpose, softmax not on the last axis, a non-constant scale, scores also returned.
// CHECK-LABEL: func.func @attention_no
// CHECK-NOT:     rlx.attention
// CHECK:         func.return
func.func @attention_no(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>, %sc: tensor<f32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %c = rlx.constant dense<0.5> : tensor<f32>
  %kt0 = rlx.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %kt0b = rlx.transpose %kt0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %s0 = rlx.matmul %q, %kt0b : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d0 = rlx.mul %s0, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p0 = rlx.softmax %d0 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o0 = rlx.matmul %p0, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %kt1 = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s1 = rlx.matmul %q, %kt1 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d1 = rlx.mul %s1, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p1 = rlx.softmax %d1 {axis = 2 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o1 = rlx.matmul %p1, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %kt2 = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s2 = rlx.matmul %q, %kt2 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d2 = rlx.mul %s2, %sc : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p2 = rlx.softmax %d2 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = rlx.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %kt3 = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s3 = rlx.matmul %q, %kt3 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d3 = rlx.mul %s3, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p3 = rlx.softmax %d3 : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o3 = rlx.matmul %p3, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %o0, %o1, %o2, %o3, %d3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// The residual add has a second (non-return) user.
// CHECK-LABEL: func.func @residual_rms_two_users
// CHECK-NEXT:    rlx.add
// CHECK-NEXT:    rlx.rms_norm
// CHECK-NEXT:    rlx.mul
func.func @residual_rms_two_users(%x: tensor<4x32xf32>, %r: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %s = rlx.add %x, %r : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %n = rlx.rms_norm %s, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %n, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// Gate and up widths differ (the mul broadcasts): not a swiglu.
// CHECK-LABEL: func.func @swiglu_mismatched
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.mul
func.func @swiglu_mismatched(%x: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x1xf32>) -> tensor<4x32xf32> {
  %g = rlx.matmul %x, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %x, %wu : (tensor<4x16xf32>, tensor<16x1xf32>) -> tensor<4x1xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %s, %u : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// A half is also returned: the packed swiglu would lose it.
// CHECK-LABEL: func.func @swiglu_half_is_output
// CHECK-NOT:     rlx.fused_swiglu
// CHECK:         rlx.mul
func.func @swiglu_half_is_output(%h: tensor<4x64xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %up = rlx.slice %h {starts = array<i64: 0, 0>, limits = array<i64: 4, 32>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %gate = rlx.slice %h {starts = array<i64: 0, 32>, limits = array<i64: 4, 64>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %gate : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %up, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m, %up : tensor<4x32xf32>, tensor<4x32xf32>
}

// Dynamic shapes: the slices of a merged matmul would need static sizes.
// Biased projections of x group only with their own kind: different activations, a scalar
// (broadcast) bias, a plain matmul next to a biased one, and a weight computed from x
// (not weight-only: cannot move above the first matmul) stay separate GEMMs.
// CHECK-LABEL: func.func @shared_input_bias_no
// CHECK-NOT:     rlx.concat
// CHECK-COUNT-2: rlx.fused_matmul_bias_act
// CHECK-NOT:     rlx.concat
// CHECK:         rlx.matmul
// CHECK-NOT:     rlx.concat %
// CHECK:         rlx.fused_matmul_bias_act
// CHECK:         %wx = rlx.concat
// CHECK-NOT:     rlx.concat
// CHECK:         rlx.fused_matmul_bias_act %x, %wx
// CHECK-NOT:     rlx.concat
// CHECK:         func.return
func.func @shared_input_bias_no(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a0 = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %a1 = rlx.add %a0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %a = rlx.gelu %a1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c0 = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %c = rlx.add %c0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %f0 = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %f = rlx.add %f0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %xs = rlx.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 8>} : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %wx = rlx.concat %xs, %xs, %xs, %xs {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %e0 = rlx.matmul %x, %wx : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %e = rlx.add %e0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %a, %c, %d, %e, %f : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @shared_input_dynamic
// CHECK-NOT:     rlx.concat
// CHECK-COUNT-2: rlx.matmul
func.func @shared_input_dynamic(%x: tensor<?x16xf32>, %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %a = rlx.matmul %x, %w1 : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %b = rlx.matmul %x, %w2 : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  func.return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}

// Rank-3 head layouts that are not lifted: a biased (masked) score, a kᵀ of the wrong
// permutation, v not in the head layout.
// CHECK-LABEL: func.func @attention_heads3_no
// CHECK-NOT:     rlx.attention
// CHECK:         func.return
func.func @attention_heads3_no(%q3: tensor<4x2x8xf32>, %k3: tensor<4x2x8xf32>, %v3: tensor<4x2x8xf32>, %m: tensor<2x4x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %q = rlx.transpose %q3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %kt = rlx.transpose %k3 {permutation = array<i64: 1, 2, 0>} : (tensor<4x2x8xf32>) -> tensor<2x8x4xf32>
  %vh = rlx.transpose %v3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %s0 = rlx.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %a0 = rlx.add %s0, %m : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p0 = rlx.softmax %a0 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o0 = rlx.matmul %p0, %vh : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kw = rlx.transpose %k3 {permutation = array<i64: 2, 1, 0>} : (tensor<4x2x8xf32>) -> tensor<8x2x4xf32>
  %kw2 = rlx.reshape %kw : (tensor<8x2x4xf32>) -> tensor<2x8x4xf32>
  %s1 = rlx.matmul %q, %kw2 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p1 = rlx.softmax %s1 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o1 = rlx.matmul %p1, %vh : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kt2 = rlx.transpose %k3 {permutation = array<i64: 1, 2, 0>} : (tensor<4x2x8xf32>) -> tensor<2x8x4xf32>
  %s2 = rlx.matmul %q, %kt2 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p2 = rlx.softmax %s2 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o2 = rlx.matmul %p2, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o0, %o1, %o2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// q/k/v of rank 3 are not rlx.attention operands.
// CHECK-LABEL: func.func @attention_rank3
// CHECK-NOT:     rlx.attention
// CHECK:         rlx.softmax
func.func @attention_rank3(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = rlx.transpose %k {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = rlx.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %c = rlx.constant dense<0.5> : tensor<f32>
  %d = rlx.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = rlx.softmax %d : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = rlx.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}
