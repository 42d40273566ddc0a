// RUN: rlx-opt %s -p fusion | filecheck %s
// RUN: rlx-opt %s -p 'fusion{swiglu=false}' | filecheck %s --check-prefix=NOSWIGLU
// RUN: rlx-opt %s -p 'fusion{swiglu-dual-matmul=false}' | filecheck %s --check-prefix=NODUAL
// RUN: rlx-opt %s -p 'fusion{matmul-bias-act=false elementwise-region=false}' | filecheck %s --check-prefix=NOMBA
// RUN: rlx-opt %s -p 'fusion{residual-layer-norm=false residual-rms-norm=false rms-norm-reshape=false}' | filecheck %s --check-prefix=NONORM
// RUN: rlx-opt %s -p 'fusion{attention=false shared-input-matmul=false}' | filecheck %s --check-prefix=NOATTN
// RUN: rlx-opt %s -p 'fusion{target=none}' | filecheck %s --check-prefix=NONE
// RUN: not rlx-opt %s -p 'fusion{target=gpu}' 2>&1 | filecheck %s --check-prefix=BADTARGET

// CHECK-LABEL:    func.func @ffn
// CHECK-NEXT:       rlx.fused_matmul_bias_act %x, %w1, %b1 {activation = "gelu"}
// NOMBA-LABEL:    func.func @ffn
// NOMBA-NEXT:       rlx.matmul
// NOMBA-NEXT:       rlx.add
// NOMBA-NEXT:       rlx.gelu
// NONE-LABEL:     func.func @ffn
// NONE-NEXT:        rlx.matmul
func.func @ffn(%x: tensor<2x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b1 : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %g = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %g : tensor<2x16xf32>
}

// Without the dual-matmul pattern, shared-input + packed swiglu give the same result.
// CHECK-LABEL:    func.func @dual
// CHECK-NEXT:       rlx.fused_swiglu %x, %wg, %wu
// NODUAL-LABEL:   func.func @dual
// NODUAL-NEXT:      %[[C:.*]] = rlx.concat %wg, %wu {axis = -1 : i64}
// NODUAL-NEXT:      %[[M:.*]] = rlx.matmul %x, %[[C]]
// NODUAL-NEXT:      rlx.fused_swiglu %[[M]] {gate_first = true} : (tensor<4x64xf32>) -> tensor<4x32xf32>
// NONE-LABEL:     func.func @dual
// NONE-NEXT:        rlx.matmul
// NONE-NEXT:        rlx.matmul
func.func @dual(%x: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %g = rlx.matmul %x, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %x, %wu : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %s, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// CHECK-LABEL:    func.func @halves
// CHECK-NEXT:       rlx.fused_swiglu %h {gate_first = true}
// NOSWIGLU-LABEL: func.func @halves
// NOSWIGLU-NOT:     rlx.fused_swiglu
// NOSWIGLU:         rlx.elementwise_region
func.func @halves(%h: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %gate = rlx.slice %h {starts = array<i64: 0, 0>, limits = array<i64: 4, 32>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %up = rlx.slice %h {starts = array<i64: 0, 32>, limits = array<i64: 4, 64>} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %gate : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = rlx.mul %up, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// CHECK-LABEL:    func.func @norms
// CHECK-NEXT:       rlx.fused_residual_layer_norm
// CHECK-NEXT:       rlx.fused_residual_rms_norm
// CHECK-NEXT:       rlx.reshape
// CHECK-NEXT:       rlx.rms_norm
// NONORM-LABEL:   func.func @norms
// NONORM-NEXT:      rlx.add
// NONORM-NEXT:      rlx.layer_norm
// NONORM-NEXT:      rlx.add
// NONORM-NEXT:      rlx.rms_norm
// NONORM-NEXT:      rlx.rms_norm
// NONORM-NEXT:      rlx.reshape
func.func @norms(%x: tensor<2x3x32xf32>, %r: tensor<2x3x32xf32>, %g: tensor<32xf32>) -> (tensor<2x3x32xf32>, tensor<2x3x32xf32>, tensor<6x32xf32>) {
  %s = rlx.add %x, %r : (tensor<2x3x32xf32>, tensor<2x3x32xf32>) -> tensor<2x3x32xf32>
  %n = rlx.layer_norm %s, %g, %g : (tensor<2x3x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %s2 = rlx.add %x, %r : (tensor<2x3x32xf32>, tensor<2x3x32xf32>) -> tensor<2x3x32xf32>
  %n2 = rlx.rms_norm %s2, %g : (tensor<2x3x32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %n3 = rlx.rms_norm %x, %g : (tensor<2x3x32xf32>, tensor<32xf32>) -> tensor<2x3x32xf32>
  %f = rlx.reshape %n3 : (tensor<2x3x32xf32>) -> tensor<6x32xf32>
  func.return %n, %n2, %f : tensor<2x3x32xf32>, tensor<2x3x32xf32>, tensor<6x32xf32>
}

// CHECK-LABEL:    func.func @attn
// CHECK:            rlx.attention %q, %k, %v {scale = 2.500000e-01 : f64, mask_kind = "none"}
// NOATTN-LABEL:   func.func @attn
// NOATTN-NOT:       rlx.attention
// NOATTN:           rlx.softmax
func.func @attn(%q: tensor<1x1x4x16xf32>, %k: tensor<1x1x4x16xf32>, %v: tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32> {
  %kt = rlx.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x1x4x16xf32>) -> tensor<1x1x16x4xf32>
  %s = rlx.matmul %q, %kt : (tensor<1x1x4x16xf32>, tensor<1x1x16x4xf32>) -> tensor<1x1x4x4xf32>
  %c = rlx.constant dense<0.25> : tensor<f32>
  %d = rlx.mul %s, %c : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %p = rlx.softmax %d : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = rlx.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32>
  func.return %o : tensor<1x1x4x16xf32>
}

// CHECK-LABEL:    func.func @shared
// CHECK-NEXT:       rlx.concat
// NOATTN-LABEL:   func.func @shared
// NOATTN-NOT:       rlx.concat
// NOATTN-COUNT-2:   rlx.matmul
func.func @shared(%x: tensor<2x16xf32>, %w1: tensor<16x8xf32>, %w2: tensor<16x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %a = rlx.matmul %x, %w1 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  %b = rlx.matmul %x, %w2 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}

// CHECK-LABEL:    func.func @region
// CHECK-NEXT:       rlx.elementwise_region
// NOMBA-LABEL:    func.func @region
// NOMBA-NEXT:       rlx.exp
// NOMBA-NEXT:       rlx.neg
func.func @region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %n = rlx.neg %e : (tensor<4xf32>) -> tensor<4xf32>
  func.return %n : tensor<4xf32>
}

// NONE-NOT: rlx.fused
// NONE-NOT: rlx.elementwise_region

// BADTARGET: fusion: unknown target 'gpu' (expected one of cpu, none)
