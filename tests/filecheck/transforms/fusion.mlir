// RUN: rlx-opt %s --fusion | filecheck %s
// RUN: rlx-opt %s -p fusion | filecheck %s

// Positive cases: one function per pattern of the `fusion` pass.

// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK-NEXT:    %[[F:.*]] = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT:    func.return %[[F]]
func.func @matmul_bias_gelu(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %g = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %g : tensor<2x16xf32>
}

// Bias on the left, each fusable activation, and no activation.
// CHECK-LABEL: func.func @matmul_bias_acts
// CHECK-NEXT:    rlx.fused_matmul_bias_act %x, %w, %b {activation = "relu"}
// CHECK-NEXT:    rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu_tanh"}
// CHECK-NEXT:    rlx.fused_matmul_bias_act %x, %w, %b {activation = "silu"}
// CHECK-NEXT:    rlx.fused_matmul_bias_act %x, %w, %b {activation = "none"}
// CHECK-NEXT:    func.return
func.func @matmul_bias_acts(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %m1 = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a1 = rlx.add %b, %m1 : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %r1 = rlx.relu %a1 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %m2 = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a2 = rlx.add %m2, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %r2 = rlx.gelu_tanh %a2 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %m3 = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a3 = rlx.add %m3, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %r3 = rlx.silu %a3 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %m4 = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a4 = rlx.add %m4, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  func.return %r1, %r2, %r3, %a4 : tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// CHECK-LABEL: func.func @residual_layer_norm
// CHECK-NEXT:    %[[N:.*]] = rlx.fused_residual_layer_norm %x, %r, %g, %b {epsilon = 1.000000e-06 : f64} : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[N]]
func.func @residual_layer_norm(%x: tensor<4x32xf32>, %r: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %s = rlx.add %x, %r : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %n = rlx.layer_norm %s, %g, %b {epsilon = 1.0e-06 : f64} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %n : tensor<4x32xf32>
}

// CHECK-LABEL: func.func @residual_rms_norm
// CHECK-NEXT:    %[[N:.*]] = rlx.fused_residual_rms_norm %x, %r, %g : (tensor<4x32xf32>, tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[N]]
func.func @residual_rms_norm(%x: tensor<4x32xf32>, %r: tensor<4x32xf32>, %g: tensor<32xf32>) -> tensor<4x32xf32> {
  %s = rlx.add %x, %r : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %n = rlx.rms_norm %s, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %n : tensor<4x32xf32>
}

// The reshape moves before the norm, which then writes the flattened result.
// CHECK-LABEL: func.func @rms_norm_reshape
// CHECK-NEXT:    %[[R:.*]] = rlx.reshape %x : (tensor<2x3x32xf32>) -> tensor<6x32xf32>
// CHECK-NEXT:    %[[N:.*]] = rlx.rms_norm %[[R]], %g : (tensor<6x32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
// CHECK-NEXT:    func.return %[[N]]
func.func @rms_norm_reshape(%x: tensor<2x3x32xf32>, %g: tensor<32xf32>) -> tensor<6x32xf32> {
  %n = rlx.rms_norm %x, %g : (tensor<2x3x32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %r = rlx.reshape %n : (tensor<2x3x32xf32>) -> tensor<6x32xf32>
  func.return %r : tensor<6x32xf32>
}

// CHECK-LABEL: func.func @swiglu_dual_matmul
// CHECK-NEXT:    %[[S:.*]] = rlx.fused_swiglu %x, %wg, %wu : (tensor<4x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @swiglu_dual_matmul(%x: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %g = rlx.matmul %x, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %x, %wu : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %u, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// CHECK-LABEL: func.func @shared_input_matmul
// CHECK-NEXT:    %[[C:.*]] = rlx.concat %wq, %wk, %wv {axis = -1 : i64} : (tensor<16x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x16xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.matmul %x, %[[C]] : (tensor<2x3x16xf32>, tensor<16x16xf32>) -> tensor<2x3x16xf32>
// CHECK-NEXT:    %[[Q:.*]] = rlx.slice %[[M]] {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 3, 8>} : (tensor<2x3x16xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[K:.*]] = rlx.slice %[[M]] {starts = array<i64: 0, 0, 8>, limits = array<i64: 2, 3, 12>} : (tensor<2x3x16xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[V:.*]] = rlx.slice %[[M]] {starts = array<i64: 0, 0, 12>, limits = array<i64: 2, 3, 16>} : (tensor<2x3x16xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[Q]], %[[K]], %[[V]]
func.func @shared_input_matmul(%x: tensor<2x3x16xf32>, %wq: tensor<16x8xf32>, %wk: tensor<16x4xf32>, %wv: tensor<16x4xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %q = rlx.matmul %x, %wq : (tensor<2x3x16xf32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
  %k = rlx.matmul %x, %wk : (tensor<2x3x16xf32>, tensor<16x4xf32>) -> tensor<2x3x4xf32>
  %v = rlx.matmul %x, %wv : (tensor<2x3x16xf32>, tensor<16x4xf32>) -> tensor<2x3x4xf32>
  func.return %q, %k, %v : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// Weights defined between the matmuls (rlx.param) move up to the fused matmul.
// CHECK-LABEL: func.func @shared_input_params
// CHECK-NEXT:    %w1 = rlx.param "w1"
// CHECK-NEXT:    %w2 = rlx.param "w2"
// CHECK-NEXT:    rlx.concat %w1, %w2
// CHECK-NEXT:    rlx.matmul %x
// CHECK-NEXT:    rlx.slice
// CHECK-NEXT:    rlx.slice
// CHECK-NOT:     rlx.matmul
func.func @shared_input_params(%x: tensor<2x16xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w1 = rlx.param "w1" : tensor<16x8xf32>
  %a = rlx.matmul %x, %w1 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  %w2 = rlx.param "w2" : tensor<16x8xf32>
  %b = rlx.matmul %x, %w2 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}

// q/k/v projections with biases (fused_matmul_bias_act first): one GEMM with N = 3h and
// concatenated biases; the torch-style transpose(W) of a later weight moves up with it.
// CHECK-LABEL: func.func @shared_input_bias
// CHECK-NEXT:    %wk = rlx.param "wk"
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %wk
// CHECK-NEXT:    %[[W:.*]] = rlx.concat %wq, %[[T]], %wv {axis = -1 : i64} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x24xf32>
// CHECK-NEXT:    %[[B:.*]] = rlx.concat %bq, %bk, %bv {axis = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %[[M:.*]] = rlx.fused_matmul_bias_act %x, %[[W]], %[[B]] {activation = "none"} : (tensor<4x16xf32>, tensor<16x24xf32>, tensor<24xf32>) -> tensor<4x24xf32>
// CHECK-NEXT:    rlx.slice %[[M]] {starts = array<i64: 0, 0>, limits = array<i64: 4, 8>}
// CHECK-NEXT:    rlx.slice %[[M]] {starts = array<i64: 0, 8>, limits = array<i64: 4, 16>}
// CHECK-NEXT:    rlx.slice %[[M]] {starts = array<i64: 0, 16>, limits = array<i64: 4, 24>}
// CHECK-NOT:     rlx.matmul
// CHECK-NOT:     rlx.fused_matmul_bias_act
func.func @shared_input_bias(%x: tensor<4x16xf32>, %wq: tensor<16x8xf32>, %wv: tensor<16x8xf32>, %bq: tensor<8xf32>, %bk: tensor<8xf32>, %bv: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %q0 = rlx.matmul %x, %wq : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %q = rlx.add %q0, %bq : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %wk = rlx.param "wk" : tensor<8x16xf32>
  %wkt = rlx.transpose %wk {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %k0 = rlx.matmul %x, %wkt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %k = rlx.add %k0, %bk : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %v0 = rlx.matmul %x, %wv : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %v = rlx.add %v0, %bv : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %q, %k, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Rank-3 multi-head layout (batch 1 without its batch dim): [S, H, D] projections
// transposed to [H, S, D] -> rlx.attention {layout = "bshd"} of free reshapes to
// [1, S, H, D]; the transpose back of the output becomes a reshape.
// CHECK-LABEL: func.func @attention_heads3
// CHECK-NOT:     rlx.softmax
// CHECK:         %[[Q:.*]] = rlx.reshape %q3 : (tensor<4x2x8xf32>) -> tensor<1x4x2x8xf32>
// CHECK-NEXT:    %[[K:.*]] = rlx.reshape %k3 : (tensor<6x2x8xf32>) -> tensor<1x6x2x8xf32>
// CHECK-NEXT:    %[[V:.*]] = rlx.reshape %v3 : (tensor<6x2x8xf32>) -> tensor<1x6x2x8xf32>
// CHECK-NEXT:    %[[A:.*]] = rlx.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64, mask_kind = "none", layout = "bshd"}
// CHECK-NEXT:    %[[O:.*]] = rlx.reshape %[[A]] : (tensor<1x4x2x8xf32>) -> tensor<4x2x8xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @attention_heads3(%q3: tensor<4x2x8xf32>, %k3: tensor<6x2x8xf32>, %v3: tensor<6x2x8xf32>) -> tensor<4x2x8xf32> {
  %q = rlx.transpose %q3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %kt = rlx.transpose %k3 {permutation = array<i64: 1, 2, 0>} : (tensor<6x2x8xf32>) -> tensor<2x8x6xf32>
  %v = rlx.transpose %v3 {permutation = array<i64: 1, 0, 2>} : (tensor<6x2x8xf32>) -> tensor<2x6x8xf32>
  %s = rlx.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %c = rlx.constant dense<0.5> : tensor<f32>
  %d = rlx.mul %s, %c : (tensor<2x4x6xf32>, tensor<f32>) -> tensor<2x4x6xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %o = rlx.matmul %p, %v : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %b = rlx.transpose %o {permutation = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  func.return %b : tensor<4x2x8xf32>
}

// kᵀ as two transposes, the output read in [H, S, D] (a transpose back is emitted).
// CHECK-LABEL: func.func @attention_heads3_kt2
// CHECK:         %[[A:.*]] = rlx.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f64, mask_kind = "none", layout = "bshd"}
// CHECK-NEXT:    %[[O:.*]] = rlx.reshape %[[A]] : (tensor<1x4x2x8xf32>) -> tensor<4x2x8xf32>
// CHECK-NEXT:    %[[T:.*]] = rlx.transpose %[[O]] {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %[[T]]
func.func @attention_heads3_kt2(%q3: tensor<4x2x8xf32>, %k3: tensor<4x2x8xf32>, %v3: tensor<4x2x8xf32>) -> tensor<2x4x8xf32> {
  %q = rlx.transpose %q3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %k = rlx.transpose %k3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %kt = rlx.transpose %k {permutation = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %v = rlx.transpose %v3 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
  %s = rlx.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = rlx.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = rlx.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %o : tensor<2x4x8xf32>
}

// A packed projection whose halves feed silu(first half) * second half.
// CHECK-LABEL: func.func @swiglu_packed
// CHECK-NEXT:    %[[M:.*]] = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
// CHECK-NEXT:    %[[S:.*]] = rlx.fused_swiglu %[[M]] {gate_first = true} : (tensor<4x64xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @swiglu_packed(%x: tensor<4x16xf32>, %w: tensor<16x64xf32>) -> tensor<4x32xf32> {
  %h = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x64xf32>) -> tensor<4x64xf32>
  %g = rlx.slice %h {starts = array<i64: 0, 0>, limits = array<i64: 4, 32>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %u = rlx.slice %h {starts = array<i64: 0, 32>, limits = array<i64: 4, 64>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %s, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// CHECK-LABEL: func.func @swiglu_halves
// CHECK-NEXT:    %[[S:.*]] = rlx.fused_swiglu %h {gate_first = false} : (tensor<2x4x64xf32>) -> tensor<2x4x32xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @swiglu_halves(%h: tensor<2x4x64xf32>) -> tensor<2x4x32xf32> {
  %up = rlx.slice %h {starts = array<i64: 0, 0, 0>, limits = array<i64: 2, 4, 32>} : (tensor<2x4x64xf32>) -> tensor<2x4x32xf32>
  %gate = rlx.slice %h {starts = array<i64: 0, 0, 32>, limits = array<i64: 2, 4, 64>} : (tensor<2x4x64xf32>) -> tensor<2x4x32xf32>
  %s = rlx.silu %gate : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %m = rlx.mul %up, %s : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  func.return %m : tensor<2x4x32xf32>
}

// CHECK-LABEL: func.func @attention
// CHECK:         %[[A:.*]] = rlx.attention %q, %k, %v {scale = 1.250000e-01 : f64, mask_kind = "none"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = rlx.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = rlx.constant dense<8.0> : tensor<f32>
  %d = rlx.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = rlx.softmax %d {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = rlx.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// CHECK-LABEL: func.func @attention_bias
// CHECK:         %[[A:.*]] = rlx.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f64, mask_kind = "bias"}
// CHECK-NEXT:    func.return %[[A]]
func.func @attention_bias(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = rlx.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %c = rlx.constant dense<0.5> : tensor<f32>
  %d = rlx.mul %c, %s : (tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %m = rlx.add %d, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = rlx.softmax %m : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = rlx.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}

// Broadcast inputs, a compare/where/cast chain, and a scalar constant inlined into the body.
// CHECK-LABEL: func.func @elementwise_region
// CHECK:         %[[R:.*]] = rlx.elementwise_region %x, %y, %z : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf32>) -> tensor<2x8xf16> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[Z:.*]]: f32):
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[A:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[B:.*]] = arith.mulf %[[A]], %[[TWO]] : f32
// CHECK-NEXT:      %[[C:.*]] = arith.cmpf ogt, %[[B]], %[[Z]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.select %[[C]], %[[X]], %[[Z]] : f32
// CHECK-NEXT:      %[[E:.*]] = arith.truncf %[[D]] : f32 to f16
// CHECK-NEXT:      rlx.yield %[[E]] : f16
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @elementwise_region(%x: tensor<2x8xf32>, %y: tensor<8xf32>, %z: tensor<2x1xf32>) -> tensor<2x8xf16> {
  %a = rlx.add %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %two = rlx.constant dense<2.0> : tensor<f32>
  %b = rlx.mul %a, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %c = rlx.compare %b, %z {predicate = "gt"} : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xi1>
  %d = rlx.where %c, %x, %z : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %e = rlx.cast %d : (tensor<2x8xf32>) -> tensor<2x8xf16>
  func.return %e : tensor<2x8xf16>
}

// Activations expand to scalar formulas: gelu = 0.5*x*(1+erf(x/sqrt2)), relu = max(x, 0).
// CHECK-LABEL: func.func @elementwise_activations
// CHECK:         rlx.elementwise_region %x : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK:           math.erf
// CHECK:           arith.maximumf
// CHECK:           math.roundeven
// CHECK:           rlx.yield
func.func @elementwise_activations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = rlx.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = rlx.relu %g : (tensor<4xf32>) -> tensor<4xf32>
  %o = rlx.round %r : (tensor<4xf32>) -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}
