// Round-trip of every rlx op: custom form, generic form, and generic -> custom.
// RUN: rlx-opt %s | filecheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | filecheck %s
// RUN: rlx-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
func.func @leaves(%x: tensor<2x8xf32>) {
  %w = rlx.param "w1" : tensor<8x8xf32>
  %c = rlx.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %ci = rlx.constant dense<3> : tensor<2x2xi32>
  func.return
}

func.func @unary(%x: tensor<2x8xf32>) {
  %0 = rlx.neg %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = rlx.abs %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %2 = rlx.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = rlx.log %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = rlx.sqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %5 = rlx.rsqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %6 = rlx.sin %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %7 = rlx.cos %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %8 = rlx.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %9 = rlx.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %10 = rlx.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %11 = rlx.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %12 = rlx.gelu_tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %13 = rlx.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %14 = rlx.erf %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %15 = rlx.floor %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %16 = rlx.ceil %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %17 = rlx.round %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %18 = rlx.hard_swish %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @unary_bf16(%x: tensor<2x8xbf16>) {
  %18 = rlx.neg %x : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
  func.return
}

func.func @binary(%x: tensor<2x8xf32>, %y: tensor<8xf32>) {
  %0 = rlx.add %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = rlx.sub %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = rlx.mul %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %3 = rlx.div %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %4 = rlx.max %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %5 = rlx.min %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %6 = rlx.pow %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @binary_int(%i: tensor<3x1xi32>, %j: tensor<4xi32>) {
  %7 = rlx.add %i, %j : (tensor<3x1xi32>, tensor<4xi32>) -> tensor<3x4xi32>
  func.return
}

func.func @select(%x: tensor<2x8xf32>, %y: tensor<8xf32>, %c: tensor<2x1xi1>) {
  %0 = rlx.compare %x, %y {predicate = "lt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %1 = rlx.where %c, %x, %y : (tensor<2x1xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @cast(%x: tensor<2x8xf32>) {
  %0 = rlx.cast %x : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %1 = rlx.cast %x : (tensor<2x8xf32>) -> tensor<2x8xi32>
  func.return
}

func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  %0 = rlx.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return
}

func.func @reductions(%x: tensor<2x8xf32>) {
  %0 = rlx.reduce %x {kind = "sum", axes = array<i64: -1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<2xf32>
  %1 = rlx.reduce %x {kind = "max"} : (tensor<2x8xf32>) -> tensor<f32>
  %2 = rlx.softmax %x {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = rlx.cumsum %x {axis = 0 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @norms(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  %0 = rlx.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = rlx.rms_norm %x, %g {epsilon = 1.0e-06 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = rlx.rms_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @shape(%x: tensor<2x8xf32>, %i: tensor<3xi64>) {
  %0 = rlx.reshape %x : (tensor<2x8xf32>) -> tensor<4x4xf32>
  %1 = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
  %2 = rlx.slice %x {starts = array<i64: 0, 1>, limits = array<i64: 2, 7>, strides = array<i64: 1, 2>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
  %3 = rlx.concat %x, %x {axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  %4 = rlx.broadcast_to %x : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
  %5 = rlx.gather %x, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  func.return
}

func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %m: tensor<1x1x4x6xf32>) {
  %0 = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
  %1 = rlx.attention %q, %k, %k {mask_kind = "sliding_window", window = 2 : i64, scale = 0.5 : f64, softcap = 30.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
  %2 = rlx.attention %q, %k, %k, %m {mask_kind = "bias"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x1x4x6xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

func.func @attention_gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x6x8xf32>) {
  %0 = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x4x3x8xf32>
  func.return
}

func.func @attention_bshd(%q: tensor<1x3x4x8xf32>, %k: tensor<1x6x2x8xf32>, %m: tensor<1x1x3x6xf32>) {
  %0 = rlx.attention %q, %k, %k, %m {mask_kind = "bias", layout = "bshd"} : (tensor<1x3x4x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>, tensor<1x1x3x6xf32>) -> tensor<1x3x4x8xf32>
  func.return
}

func.func @rope(%x: tensor<1x2x4x8xf32>, %c: tensor<4x2xf32>) {
  %0 = rlx.rope %x, %c, %c {n_rot = 4 : i64} : (tensor<1x2x4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %r: tensor<1x6x4x4xf32>) {
  %0 = rlx.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %1 = rlx.pool2d %x {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %2 = rlx.pool2d %x {kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %3 = rlx.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "clip", clip = array<f64: 0.0, 6.0>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x4xf32>
  %4 = rlx.fused_conv2d_residual %x, %w, %r, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "relu"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %5 = rlx.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "silu", reduce = "mean"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x1x1xf32>
  %6 = rlx.fused_conv2d_residual %x, %w, %r {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, reduce = "mean"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x1x1xf32>
  func.return
}

func.func @nchwc(%x: tensor<2x16x5x5xf32>, %w: tensor<2x2x3x3x8x8xf32>, %wd: tensor<2x1x3x3x1x8xf32>, %b: tensor<16xf32>) {
  %0 = rlx.to_nchwc %x {block = 8 : i64} : (tensor<2x16x5x5xf32>) -> tensor<2x2x5x5x8xf32>
  %1 = rlx.conv2d %0, %w, %b {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
  %2 = rlx.conv2d %1, %wd {strides = array<i64: 2, 2>, groups = 16 : i64, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<2x2x2x2x8xf32>
  %3 = rlx.fused_conv2d_residual %1, %w, %1, %b {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<2x2x5x5x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
  %4 = rlx.pool2d %3 {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>) -> tensor<2x2x2x2x8xf32>
  %5 = rlx.from_nchwc %4 : (tensor<2x2x2x2x8xf32>) -> tensor<2x16x2x2xf32>
  func.return
}

func.func @winograd(%x: tensor<2x2x5x5x8xf32>, %u: tensor<16x2x2x8x8xf32>, %b: tensor<16xf32>) {
  %0 = rlx.conv2d %x, %u, %b {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc", winograd = true} : (tensor<2x2x5x5x8xf32>, tensor<16x2x2x8x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
  %1 = rlx.fused_conv2d_residual %x, %u, %0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc", winograd = true} : (tensor<2x2x5x5x8xf32>, tensor<16x2x2x8x8xf32>, tensor<2x2x5x5x8xf32>) -> tensor<2x2x5x5x8xf32>
  func.return
}

func.func @nchwc_stem(%x: tensor<1x3x9x9xf32>, %w: tensor<2x3x3x3x1x8xf32>, %b: tensor<16xf32>, %r: tensor<1x2x5x5x8xf32>) {
  %0 = rlx.reshape %x : (tensor<1x3x9x9xf32>) -> tensor<1x3x9x9x1xf32>
  %1 = rlx.conv2d %0, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu", layout = "nchwc"} : (tensor<1x3x9x9x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<16xf32>) -> tensor<1x2x5x5x8xf32>
  %2 = rlx.fused_conv2d_residual %0, %w, %r {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<1x3x9x9x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<1x2x5x5x8xf32>) -> tensor<1x2x5x5x8xf32>
  func.return
}

func.func @quant(%x: tensor<2x8xf32>, %q: tensor<2x8xi8>) {
  %0 = rlx.quantize %x {scale = 0.1 : f64, zero_point = 3 : i64} : (tensor<2x8xf32>) -> tensor<2x8xi8>
  %1 = rlx.dequantize %q {scale = array<f64: 0.1, 0.2>, zero_point = array<i64: 0, 1>, axis = 0 : i64} : (tensor<2x8xi8>) -> tensor<2x8xf32>
  %2 = rlx.fake_quantize %x {scale = 0.05 : f64, zero_point = 0 : i64, bits = 4 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return
}

func.func @scaled(%a: tensor<4x64xf32>, %b: tensor<3x64xf32>) {
  %0 = rlx.scaled_quant_scale %a {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>) -> tensor<1xf32>
  %1 = rlx.scaled_quantize %a, %0 {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>, tensor<1xf32>) -> tensor<4x64xui8>
  %2 = rlx.scaled_quant_scale %b {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>) -> tensor<3x2xui8>
  %3 = rlx.scaled_quantize %b, %2 {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>, tensor<3x2xui8>) -> tensor<3x64xui8>
  %4 = rlx.scaled_matmul %1, %1, %0, %0 {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xui8>, tensor<4x64xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x4xf32>
  func.return
}

func.func @packed(%x: tensor<2x64xf32>, %p: tensor<136xui8>) {
  %0 = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 2 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<136xui8>) -> tensor<2x2xf32>
  func.return
}

func.func @random() {
  %0 = rlx.rng_normal {mean = 0.0 : f64, std = 2.0 : f64, seed_offset = 1 : i64} : tensor<4x4xf32>
  %1 = rlx.rng_uniform {low = -1.0 : f64, high = 1.0 : f64} : tensor<8xf32>
  func.return
}

func.func @fused(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
  %0 = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = rlx.fused_swiglu %x, %w, %w : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %2 = rlx.fused_swiglu %x {gate_first = true} : (tensor<2x8xf32>) -> tensor<2x4xf32>
  %3 = rlx.fused_residual_layer_norm %x, %x, %b, %b {epsilon = 1.0e-12 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %4 = rlx.fused_residual_rms_norm %x, %x, %b : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return
}
func.func @scan(%init: tensor<8xf32>, %xs: tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x8xf32>) {
  %c, %ys = rlx.scan (%init) over (%xs) {length = 5 : i64} : (tensor<8xf32>), (tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x8xf32>) {
  ^bb0(%carry: tensor<8xf32>, %x: tensor<8xf32>):
    %n = rlx.add %carry, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    rlx.yield %n, %n : tensor<8xf32>, tensor<8xf32>
  }
  func.return %c, %ys : tensor<8xf32>, tensor<5x8xf32>
}

func.func @if(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    rlx.yield %n : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

func.func @elementwise_region(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32> {
  %r = rlx.elementwise_region %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    %t = math.tanh %s : f32
    rlx.yield %t : f32
  }
  func.return %r : tensor<2x8xf32>
}

func.func @gemm(%x: tensor<2x5x64xf32>, %w: tensor<64x40xf32>, %b: tensor<40xf32>) {
  %p = rlx.pack_rhs %w {width = 16 : i64} : (tensor<64x40xf32>) -> tensor<3x64x16xf32>
  %y = rlx.packed_matmul %x, %p, %b {n = 40 : i64, activation = "silu"} : (tensor<2x5x64xf32>, tensor<3x64x16xf32>, tensor<40xf32>) -> tensor<2x5x40xf32>
  %z = rlx.packed_matmul %x, %p {n = 33 : i64} : (tensor<2x5x64xf32>, tensor<3x64x16xf32>) -> tensor<2x5x33xf32>
  func.return
}

// CHECK-LABEL: func.func @leaves(%x: tensor<2x8xf32>) {
// CHECK-NEXT: %w = rlx.param "w1" : tensor<8x8xf32>
// CHECK-NEXT: %c = rlx.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: %ci = rlx.constant dense<3> : tensor<2x2xi32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @unary(%x: tensor<2x8xf32>) {
// CHECK-NEXT: %0 = rlx.neg %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %1 = rlx.abs %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = rlx.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %3 = rlx.log %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %4 = rlx.sqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %5 = rlx.rsqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %6 = rlx.sin %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %7 = rlx.cos %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %8 = rlx.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %9 = rlx.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %10 = rlx.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %11 = rlx.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %12 = rlx.gelu_tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %13 = rlx.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %14 = rlx.erf %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %15 = rlx.floor %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %16 = rlx.ceil %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %17 = rlx.round %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %18 = rlx.hard_swish %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @unary_bf16(%x: tensor<2x8xbf16>) {
// CHECK-NEXT: %0 = rlx.neg %x : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @binary(%x: tensor<2x8xf32>, %y: tensor<8xf32>) {
// CHECK-NEXT: %0 = rlx.add %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %1 = rlx.sub %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = rlx.mul %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %3 = rlx.div %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %4 = rlx.max %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %5 = rlx.min %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %6 = rlx.pow %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @binary_int(%i: tensor<3x1xi32>, %j: tensor<4xi32>) {
// CHECK-NEXT: %0 = rlx.add %i, %j : (tensor<3x1xi32>, tensor<4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @select(%x: tensor<2x8xf32>, %y: tensor<8xf32>, %c: tensor<2x1xi1>) {
// CHECK-NEXT: %0 = rlx.compare %x, %y {predicate = "lt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
// CHECK-NEXT: %1 = rlx.where %c, %x, %y : (tensor<2x1xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @cast(%x: tensor<2x8xf32>) {
// CHECK-NEXT: %0 = rlx.cast %x : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK-NEXT: %1 = rlx.cast %x : (tensor<2x8xf32>) -> tensor<2x8xi32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
// CHECK-NEXT: %0 = rlx.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @reductions(%x: tensor<2x8xf32>) {
// CHECK-NEXT: %0 = rlx.reduce %x {kind = "sum", axes = array<i64: -1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<2xf32>
// CHECK-NEXT: %1 = rlx.reduce %x {kind = "max"} : (tensor<2x8xf32>) -> tensor<f32>
// CHECK-NEXT: %2 = rlx.softmax %x {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %3 = rlx.cumsum %x {axis = 0 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @norms(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
// CHECK-NEXT: %0 = rlx.layer_norm %x, %g, %b {epsilon = 1.000000e-05 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %1 = rlx.rms_norm %x, %g {epsilon = 1.000000e-06 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = rlx.rms_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @shape(%x: tensor<2x8xf32>, %i: tensor<3xi64>) {
// CHECK-NEXT: %0 = rlx.reshape %x : (tensor<2x8xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %1 = rlx.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: %2 = rlx.slice %x {starts = array<i64: 0, 1>, limits = array<i64: 2, 7>, strides = array<i64: 1, 2>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %3 = rlx.concat %x, %x {axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %4 = rlx.broadcast_to %x : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
// CHECK-NEXT: %5 = rlx.gather %x, %i {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %m: tensor<1x1x4x6xf32>) {
// CHECK-NEXT: %0 = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: %1 = rlx.attention %q, %k, %k {mask_kind = "sliding_window", window = 2 : i64, scale = 5.000000e-01 : f64, softcap = 3.000000e+01 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: %2 = rlx.attention %q, %k, %k, %m {mask_kind = "bias"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x1x4x6xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @attention_gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x6x8xf32>) {
// CHECK-NEXT: %0 = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @attention_bshd(%q: tensor<1x3x4x8xf32>, %k: tensor<1x6x2x8xf32>, %m: tensor<1x1x3x6xf32>) {
// CHECK-NEXT: %0 = rlx.attention %q, %k, %k, %m {mask_kind = "bias", layout = "bshd"} : (tensor<1x3x4x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>, tensor<1x1x3x6xf32>) -> tensor<1x3x4x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @rope(%x: tensor<1x2x4x8xf32>, %c: tensor<4x2xf32>) {
// CHECK-NEXT: %0 = rlx.rope %x, %c, %c {n_rot = 4 : i64} : (tensor<1x2x4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %r: tensor<1x6x4x4xf32>) {
// CHECK-NEXT: %0 = rlx.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %1 = rlx.pool2d %x {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %2 = rlx.pool2d %x {kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %3 = rlx.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "clip", clip = array<f64: 0.000000e+00, 6.000000e+00>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %4 = rlx.fused_conv2d_residual %x, %w, %r, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "relu"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %5 = rlx.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "silu", reduce = "mean"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x1x1xf32>
// CHECK-NEXT: %6 = rlx.fused_conv2d_residual %x, %w, %r {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, reduce = "mean"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x1x1xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @nchwc(%x: tensor<2x16x5x5xf32>, %w: tensor<2x2x3x3x8x8xf32>, %wd: tensor<2x1x3x3x1x8xf32>, %b: tensor<16xf32>) {
// CHECK-NEXT: %0 = rlx.to_nchwc %x {block = 8 : i64} : (tensor<2x16x5x5xf32>) -> tensor<2x2x5x5x8xf32>
// CHECK-NEXT: %1 = rlx.conv2d %0, %w, %b {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
// CHECK-NEXT: %2 = rlx.conv2d %1, %wd {strides = array<i64: 2, 2>, groups = 16 : i64, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<2x2x2x2x8xf32>
// CHECK-NEXT: %3 = rlx.fused_conv2d_residual %1, %w, %1, %b {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<2x2x5x5x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
// CHECK-NEXT: %4 = rlx.pool2d %3 {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>) -> tensor<2x2x2x2x8xf32>
// CHECK-NEXT: %5 = rlx.from_nchwc %4 : (tensor<2x2x2x2x8xf32>) -> tensor<2x16x2x2xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @winograd(%x: tensor<2x2x5x5x8xf32>, %u: tensor<16x2x2x8x8xf32>, %b: tensor<16xf32>) {
// CHECK-NEXT: %0 = rlx.conv2d %x, %u, %b {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc", winograd = true} : (tensor<2x2x5x5x8xf32>, tensor<16x2x2x8x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
// CHECK-NEXT: %1 = rlx.fused_conv2d_residual %x, %u, %0 {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc", winograd = true} : (tensor<2x2x5x5x8xf32>, tensor<16x2x2x8x8xf32>, tensor<2x2x5x5x8xf32>) -> tensor<2x2x5x5x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @nchwc_stem(%x: tensor<1x3x9x9xf32>, %w: tensor<2x3x3x3x1x8xf32>, %b: tensor<16xf32>, %r: tensor<1x2x5x5x8xf32>) {
// CHECK-NEXT: %0 = rlx.reshape %x : (tensor<1x3x9x9xf32>) -> tensor<1x3x9x9x1xf32>
// CHECK-NEXT: %1 = rlx.conv2d %0, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu", layout = "nchwc"} : (tensor<1x3x9x9x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<16xf32>) -> tensor<1x2x5x5x8xf32>
// CHECK-NEXT: %2 = rlx.fused_conv2d_residual %0, %w, %r {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<1x3x9x9x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<1x2x5x5x8xf32>) -> tensor<1x2x5x5x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @quant(%x: tensor<2x8xf32>, %q: tensor<2x8xi8>) {
// CHECK-NEXT: %0 = rlx.quantize %x {scale = 1.000000e-01 : f64, zero_point = 3 : i64} : (tensor<2x8xf32>) -> tensor<2x8xi8>
// CHECK-NEXT: %1 = rlx.dequantize %q {scale = array<f64: 1.000000e-01, 2.000000e-01>, zero_point = array<i64: 0, 1>, axis = 0 : i64} : (tensor<2x8xi8>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = rlx.fake_quantize %x {scale = 5.000000e-02 : f64, zero_point = 0 : i64, bits = 4 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @scaled(%a: tensor<4x64xf32>, %b: tensor<3x64xf32>) {
// CHECK-NEXT: %0 = rlx.scaled_quant_scale %a {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>) -> tensor<1xf32>
// CHECK-NEXT: %1 = rlx.scaled_quantize %a, %0 {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>, tensor<1xf32>) -> tensor<4x64xui8>
// CHECK-NEXT: %2 = rlx.scaled_quant_scale %b {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>) -> tensor<3x2xui8>
// CHECK-NEXT: %3 = rlx.scaled_quantize %b, %2 {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>, tensor<3x2xui8>) -> tensor<3x64xui8>
// CHECK-NEXT: %4 = rlx.scaled_matmul %1, %1, %0, %0 {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xui8>, tensor<4x64xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @packed(%x: tensor<2x64xf32>, %p: tensor<136xui8>) {
// CHECK-NEXT: %0 = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 2 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<136xui8>) -> tensor<2x2xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @random() {
// CHECK-NEXT: %0 = rlx.rng_normal {mean = 0.000000e+00 : f64, std = 2.000000e+00 : f64, seed_offset = 1 : i64} : tensor<4x4xf32>
// CHECK-NEXT: %1 = rlx.rng_uniform {low = -1.000000e+00 : f64, high = 1.000000e+00 : f64} : tensor<8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @fused(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) {
// CHECK-NEXT: %0 = rlx.fused_matmul_bias_act %x, %w, %b {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %1 = rlx.fused_swiglu %x, %w, %w : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %2 = rlx.fused_swiglu %x {gate_first = true} : (tensor<2x8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %3 = rlx.fused_residual_layer_norm %x, %x, %b, %b {epsilon = 1.000000e-12 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %4 = rlx.fused_residual_rms_norm %x, %x, %b : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: func.return
// CHECK-NEXT: }
// CHECK-LABEL: func.func @scan(%init: tensor<8xf32>, %xs: tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x8xf32>) {
// CHECK-NEXT: %c, %ys = rlx.scan(%init) over(%xs) {length = 5 : i64} : (tensor<8xf32>), (tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x8xf32>) {
// CHECK-NEXT: ^bb0(%carry: tensor<8xf32>, %x: tensor<8xf32>):
// CHECK-NEXT: %n = rlx.add %carry, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: rlx.yield %n, %n : tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %c, %ys : tensor<8xf32>, tensor<5x8xf32>
// CHECK-NEXT: }
// CHECK-LABEL: func.func @if(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT: %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
// CHECK-NEXT: %n = rlx.neg %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: rlx.yield %n : tensor<4xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: rlx.yield %x : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %r : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-LABEL: func.func @elementwise_region(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT: %r = rlx.elementwise_region %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT: ^bb0(%a: f32, %b: f32):
// CHECK-NEXT: %s = arith.addf %a, %b : f32
// CHECK-NEXT: %t = math.tanh %s : f32
// CHECK-NEXT: rlx.yield %t : f32
// CHECK-NEXT: }

// CHECK-NEXT: func.return %r : tensor<2x8xf32>
// CHECK-NEXT: }
// CHECK-LABEL: func.func @gemm(%x: tensor<2x5x64xf32>, %w: tensor<64x40xf32>, %b: tensor<40xf32>) {
// CHECK-NEXT: %p = rlx.pack_rhs %w {width = 16 : i64} : (tensor<64x40xf32>) -> tensor<3x64x16xf32>
// CHECK-NEXT: %y = rlx.packed_matmul %x, %p, %b {n = 40 : i64, activation = "silu"} : (tensor<2x5x64xf32>, tensor<3x64x16xf32>, tensor<40xf32>) -> tensor<2x5x40xf32>
// CHECK-NEXT: %z = rlx.packed_matmul %x, %p {n = 33 : i64} : (tensor<2x5x64xf32>, tensor<3x64x16xf32>) -> tensor<2x5x33xf32>
// CHECK-NEXT: func.return

// GENERIC-LABEL: sym_name = "leaves"
// GENERIC: %w = "rlx.param"() {name = "w1"} : () -> tensor<8x8xf32>
// GENERIC: %c = "rlx.constant"() {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : () -> tensor<2xf32>
// GENERIC: %ci = "rlx.constant"() {value = dense<3> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
// GENERIC-LABEL: sym_name = "unary"
// GENERIC: %0 = "rlx.neg"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %1 = "rlx.abs"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %2 = "rlx.exp"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %3 = "rlx.log"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %4 = "rlx.sqrt"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %5 = "rlx.rsqrt"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %6 = "rlx.sin"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %7 = "rlx.cos"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %8 = "rlx.tanh"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %9 = "rlx.sigmoid"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %10 = "rlx.relu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %11 = "rlx.gelu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %12 = "rlx.gelu_tanh"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %13 = "rlx.silu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %14 = "rlx.erf"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %15 = "rlx.floor"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %16 = "rlx.ceil"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %17 = "rlx.round"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %18 = "rlx.hard_swish"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "unary_bf16"
// GENERIC: %0 = "rlx.neg"(%x) : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
// GENERIC-LABEL: sym_name = "binary"
// GENERIC: %0 = "rlx.add"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %1 = "rlx.sub"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %2 = "rlx.mul"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %3 = "rlx.div"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %4 = "rlx.max"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %5 = "rlx.min"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %6 = "rlx.pow"(%x, %y) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "binary_int"
// GENERIC: %0 = "rlx.add"(%i, %j) : (tensor<3x1xi32>, tensor<4xi32>) -> tensor<3x4xi32>
// GENERIC-LABEL: sym_name = "select"
// GENERIC: %0 = "rlx.compare"(%x, %y) {predicate = "lt"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
// GENERIC: %1 = "rlx.where"(%c, %x, %y) : (tensor<2x1xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "cast"
// GENERIC: %0 = "rlx.cast"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf16>
// GENERIC: %1 = "rlx.cast"(%x) : (tensor<2x8xf32>) -> tensor<2x8xi32>
// GENERIC-LABEL: sym_name = "matmul"
// GENERIC: %0 = "rlx.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// GENERIC-LABEL: sym_name = "reductions"
// GENERIC: %0 = "rlx.reduce"(%x) {kind = "sum", axes = array<i64: -1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<2xf32>
// GENERIC: %1 = "rlx.reduce"(%x) {kind = "max"} : (tensor<2x8xf32>) -> tensor<f32>
// GENERIC: %2 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC: %3 = "rlx.cumsum"(%x) {axis = 0 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "norms"
// GENERIC: %0 = "rlx.layer_norm"(%x, %g, %b) {epsilon = 1.000000e-05 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %1 = "rlx.rms_norm"(%x, %g) {epsilon = 1.000000e-06 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %2 = "rlx.rms_norm"(%x, %g, %b) : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "shape"
// GENERIC: %0 = "rlx.reshape"(%x) : (tensor<2x8xf32>) -> tensor<4x4xf32>
// GENERIC: %1 = "rlx.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
// GENERIC: %2 = "rlx.slice"(%x) {starts = array<i64: 0, 1>, limits = array<i64: 2, 7>, strides = array<i64: 1, 2>} : (tensor<2x8xf32>) -> tensor<2x3xf32>
// GENERIC: %3 = "rlx.concat"(%x, %x) {axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
// GENERIC: %4 = "rlx.broadcast_to"(%x) : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
// GENERIC: %5 = "rlx.gather"(%x, %i) {axis = 1 : i64} : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "attention"
// GENERIC: %0 = "rlx.attention"(%q, %k, %k) {mask_kind = "causal"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
// GENERIC: %1 = "rlx.attention"(%q, %k, %k) {mask_kind = "sliding_window", window = 2 : i64, scale = 5.000000e-01 : f64, softcap = 3.000000e+01 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x4x8xf32>
// GENERIC: %2 = "rlx.attention"(%q, %k, %k, %m) {mask_kind = "bias"} : (tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1x1x4x6xf32>) -> tensor<1x2x4x8xf32>
// GENERIC-LABEL: sym_name = "attention_gqa"
// GENERIC: %0 = "rlx.attention"(%q, %k, %k) {mask_kind = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x4x3x8xf32>
// GENERIC-LABEL: sym_name = "rope"
// GENERIC: %0 = "rlx.rope"(%x, %c, %c) {n_rot = 4 : i64} : (tensor<1x2x4x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4x8xf32>
// GENERIC-LABEL: sym_name = "conv"
// GENERIC: %0 = "rlx.conv2d"(%x, %w, %b) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// GENERIC: %1 = "rlx.pool2d"(%x) {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// GENERIC: %2 = "rlx.pool2d"(%x) {kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// GENERIC: %4 = "rlx.fused_conv2d_residual"(%x, %w, %r, %b) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "relu"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// GENERIC: %5 = "rlx.conv2d"(%x, %w) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64, activation = "silu", reduce = "mean"} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x1x1xf32>
// GENERIC-LABEL: sym_name = "nchwc"
// GENERIC: %0 = "rlx.to_nchwc"(%x) {block = 8 : i64} : (tensor<2x16x5x5xf32>) -> tensor<2x2x5x5x8xf32>
// GENERIC: %1 = "rlx.conv2d"(%0, %w, %b) {padding = array<i64: 1, 1, 1, 1>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
// GENERIC: %2 = "rlx.conv2d"(%1, %wd) {strides = array<i64: 2, 2>, groups = 16 : i64, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x1x3x3x1x8xf32>) -> tensor<2x2x2x2x8xf32>
// GENERIC: %3 = "rlx.fused_conv2d_residual"(%1, %w, %1, %b) {padding = array<i64: 1, 1, 1, 1>, activation = "relu", layout = "nchwc"} : (tensor<2x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<2x2x5x5x8xf32>, tensor<16xf32>) -> tensor<2x2x5x5x8xf32>
// GENERIC: %4 = "rlx.pool2d"(%3) {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<2x2x5x5x8xf32>) -> tensor<2x2x2x2x8xf32>
// GENERIC: %5 = "rlx.from_nchwc"(%4) : (tensor<2x2x2x2x8xf32>) -> tensor<2x16x2x2xf32>
// GENERIC-LABEL: sym_name = "nchwc_stem"
// GENERIC: %1 = "rlx.conv2d"(%0, %w, %b) {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, activation = "silu", layout = "nchwc"} : (tensor<1x3x9x9x1xf32>, tensor<2x3x3x3x1x8xf32>, tensor<16xf32>) -> tensor<1x2x5x5x8xf32>
// GENERIC-LABEL: sym_name = "quant"
// GENERIC: %0 = "rlx.quantize"(%x) {scale = 1.000000e-01 : f64, zero_point = 3 : i64} : (tensor<2x8xf32>) -> tensor<2x8xi8>
// GENERIC: %1 = "rlx.dequantize"(%q) {scale = array<f64: 1.000000e-01, 2.000000e-01>, zero_point = array<i64: 0, 1>, axis = 0 : i64} : (tensor<2x8xi8>) -> tensor<2x8xf32>
// GENERIC: %2 = "rlx.fake_quantize"(%x) {scale = 5.000000e-02 : f64, zero_point = 0 : i64, bits = 4 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "scaled"
// GENERIC: %0 = "rlx.scaled_quant_scale"(%a) {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>) -> tensor<1xf32>
// GENERIC: %1 = "rlx.scaled_quantize"(%a, %0) {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xf32>, tensor<1xf32>) -> tensor<4x64xui8>
// GENERIC: %2 = "rlx.scaled_quant_scale"(%b) {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>) -> tensor<3x2xui8>
// GENERIC: %3 = "rlx.scaled_quantize"(%b, %2) {format = "f4e3m0", scale_layout = "mx/32"} : (tensor<3x64xf32>, tensor<3x2xui8>) -> tensor<3x64xui8>
// GENERIC: %4 = "rlx.scaled_matmul"(%1, %1, %0, %0) {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<4x64xui8>, tensor<4x64xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x4xf32>
// GENERIC-LABEL: sym_name = "packed"
// GENERIC: %0 = "rlx.dequant_matmul"(%x, %p) {scheme = "q8_0", n = 2 : i64, k = 64 : i64} : (tensor<2x64xf32>, tensor<136xui8>) -> tensor<2x2xf32>
// GENERIC-LABEL: sym_name = "random"
// GENERIC: %0 = "rlx.rng_normal"() {mean = 0.000000e+00 : f64, std = 2.000000e+00 : f64, seed_offset = 1 : i64} : () -> tensor<4x4xf32>
// GENERIC: %1 = "rlx.rng_uniform"() {low = -1.000000e+00 : f64, high = 1.000000e+00 : f64} : () -> tensor<8xf32>
// GENERIC-LABEL: sym_name = "fused"
// GENERIC: %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %1 = "rlx.fused_swiglu"(%x, %w, %w) : (tensor<2x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
// GENERIC: %2 = "rlx.fused_swiglu"(%x) {gate_first = true} : (tensor<2x8xf32>) -> tensor<2x4xf32>
// GENERIC: %3 = "rlx.fused_residual_layer_norm"(%x, %x, %b, %b) {epsilon = 1.000000e-12 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC: %4 = "rlx.fused_residual_rms_norm"(%x, %x, %b) : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// GENERIC-LABEL: sym_name = "scan"
// GENERIC: %c, %ys = "rlx.scan"(%init, %xs) <{operandSegmentSizes = array<i32: 1, 1>}> ({
// GENERIC: %n = "rlx.add"(%carry, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// GENERIC: "rlx.yield"(%n, %n) : (tensor<8xf32>, tensor<8xf32>) -> ()
// GENERIC-LABEL: sym_name = "if"
// GENERIC: %r = "rlx.if"(%c) ({
// GENERIC: %n = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC: }, {
// GENERIC: "rlx.yield"(%x) : (tensor<4xf32>) -> ()
// GENERIC: }) : (tensor<i1>) -> tensor<4xf32>
// GENERIC-LABEL: sym_name = "elementwise_region"
// GENERIC: %r = "rlx.elementwise_region"(%x, %y) ({
// GENERIC: "rlx.yield"(%t) : (f32) -> ()
// GENERIC-LABEL: sym_name = "gemm"
// GENERIC: %p = "rlx.pack_rhs"(%w) {width = 16 : i64} : (tensor<64x40xf32>) -> tensor<3x64x16xf32>
// GENERIC: %y = "rlx.packed_matmul"(%x, %p, %b) {n = 40 : i64, activation = "silu"} : (tensor<2x5x64xf32>, tensor<3x64x16xf32>, tensor<40xf32>) -> tensor<2x5x40xf32>
