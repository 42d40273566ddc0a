// Verifier diagnostics of every rlx op (MLIR-style expectations).
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @f0(%x: tensor<2xf32>) {
  // expected-error @+1 {{param name must be a non-empty string}}
  %0 = rlx.param "" : tensor<2xf32>
  func.return
}

// -----

func.func @f1(%x: tensor<2xf32>) {
  // expected-error @+1 {{differs from the value's type}}
  %0 = "rlx.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  func.return
}

// -----

func.func @f2(%x: tensor<2xi32>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.exp %x : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----

func.func @f3(%x: tensor<2xi1>) {
  // expected-error @+1 {{numeric element type}}
  %0 = rlx.neg %x : (tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f4(%x: tensor<2xi1>) {
  // expected-error @+1 {{numeric element type}}
  %0 = rlx.abs %x : (tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f5(%x: tensor<2xi1>) {
  // expected-error @+1 {{numeric element type}}
  %0 = rlx.relu %x : (tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f6(%x: tensor<2xi32>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.log %x : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----

func.func @f7(%x: tensor<2xf32>) {
  // expected-error @+1 {{result #0 has type tensor<3xf32>}}
  %0 = rlx.sqrt %x : (tensor<2xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f8(%x: tensor<2xi8>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.rsqrt %x : (tensor<2xi8>) -> tensor<2xi8>
  func.return
}

// -----

func.func @f9(%x: tensor<2xi8>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.sin %x : (tensor<2xi8>) -> tensor<2xi8>
  func.return
}

// -----

func.func @f10(%x: tensor<2xi8>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.cos %x : (tensor<2xi8>) -> tensor<2xi8>
  func.return
}

// -----

func.func @f11(%x: tensor<2xf32>) {
  // expected-error @+1 {{result #0 has type tensor<2xf16>}}
  %0 = rlx.tanh %x : (tensor<2xf32>) -> tensor<2xf16>
  func.return
}

// -----

func.func @f12(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.sigmoid %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f13(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.gelu %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f14(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.gelu_tanh %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f15(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.silu %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f16(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.erf %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f17(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.floor %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f18(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.ceil %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f19(%x: tensor<2xi64>) {
  // expected-error @+1 {{floating-point element type}}
  %0 = rlx.round %x : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// -----

func.func @f20(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f21(%x: tensor<2x3xf32>, %y: tensor<3xf16>) {
  // expected-error @+1 {{must have the same element type}}
  %0 = rlx.sub %x, %y : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f22(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{result #0 has type tensor<3xf32>}}
  %0 = rlx.mul %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f23(%x: tensor<2xi1>, %y: tensor<2xi1>) {
  // expected-error @+1 {{numeric element type}}
  %0 = rlx.div %x, %y : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f24(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.max %x, %y : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f25(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.min %x, %y : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f26(%x: tensor<2x3xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.pow %x, %y : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f27(%x: tensor<2xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{attribute 'predicate' must be one of eq, ne, lt, le, gt, ge}}
  %0 = rlx.compare %x, %y {predicate = "less"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f28(%x: tensor<2xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{missing required attribute 'predicate'}}
  %0 = rlx.compare %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  func.return
}

// -----

func.func @f29(%x: tensor<2xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{condition must have element type i1}}
  %0 = rlx.where %x, %x, %y : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f30(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cast must keep the shape}}
  %0 = rlx.cast %x : (tensor<2x3xf32>) -> tensor<3x2xf16>
  func.return
}

// -----

func.func @f31(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{contracting dimensions differ}}
  %0 = rlx.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @f32(%a: tensor<3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{matmul operands must have rank >= 2}}
  %0 = rlx.matmul %a, %b : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @f33(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'kind' must be one of sum, mean, max, min, prod}}
  %0 = rlx.reduce %x {kind = "avg", axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @f34(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{reduction axis 2 is out of range for rank 2}}
  %0 = rlx.reduce %x {kind = "sum", axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @f35(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = rlx.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f36(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{unknown attribute 'dim'}}
  %0 = rlx.softmax %x {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f37(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = rlx.cumsum %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f38(%x: tensor<2x3xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{gamma must have shape [3]}}
  %0 = rlx.layer_norm %x, %g, %g : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f39(%x: tensor<2x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = rlx.rms_norm %x, %g {epsilon = -1.0 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f40(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{reshape from tensor<2x3> (6 elements) to tensor<4x2> (8 elements)}}
  %0 = rlx.reshape %x : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @f41(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{is not a permutation of the 2 axes}}
  %0 = rlx.transpose %x {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @f42(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{slice [0:4] of axis 1 is out of bounds for size 3}}
  %0 = rlx.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 2, 4>} : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f43(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error @+1 {{concat operands differ on axis 1}}
  %0 = rlx.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @f44(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.broadcast_to %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f45(%x: tensor<2x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{indices must be integers}}
  %0 = rlx.gather %x, %i : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f46gqa(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{k/v heads (2) must divide q heads (3) (grouped-query attention)}}
  %0 = rlx.attention %q, %k, %k : (tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x3x4x8xf32>
  func.return
}

// -----

func.func @f46(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{q and k head_dim differ}}
  %0 = rlx.attention %q, %k, %k : (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// -----

func.func @f47(%q: tensor<1x2x4x8xf32>) {
  // expected-error @+1 {{attribute 'window' is required by (and only by) mask_kind = "sliding_window"}}
  %0 = rlx.attention %q, %q, %q {mask_kind = "sliding_window"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

func.func @f47layout(%q: tensor<1x3x4x8xf32>) {
  // expected-error @+1 {{attribute 'layout' must be one of bhsd, bshd; got "bsdh"}}
  %0 = rlx.attention %q, %q, %q {layout = "bsdh"} : (tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>) -> tensor<1x3x4x8xf32>
  func.return
}

// -----

func.func @f47bshd(%q: tensor<1x4x3x8xf32>, %k: tensor<1x6x2x8xf32>) {
  // expected-error @+1 {{k/v heads (2) must divide q heads (3) (grouped-query attention)}}
  %0 = rlx.attention %q, %k, %k {layout = "bshd"} : (tensor<1x4x3x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x4x3x8xf32>
  func.return
}

// -----

func.func @f47bshdres(%q: tensor<1x3x4x8xf32>, %k: tensor<1x6x2x8xf32>) {
  // expected-error @+1 {{result #0 has type tensor<1x4x3x8xf32>, but the operands and attributes give tensor<1x3x4x8xf32>}}
  %0 = rlx.attention %q, %k, %k {layout = "bshd"} : (tensor<1x3x4x8xf32>, tensor<1x6x2x8xf32>, tensor<1x6x2x8xf32>) -> tensor<1x4x3x8xf32>
  func.return
}

// -----

func.func @f48(%x: tensor<1x2x4x8xf32>, %c: tensor<4x3xf32>) {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = rlx.rope %x, %c, %c : (tensor<1x2x4x8xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

func.func @f49(%x: tensor<1x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+1 {{w has 3 input channels per group, x has 4 channels in 1 groups}}
  %0 = rlx.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return
}

// -----

func.func @f50(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{kernel must be 2 positive values}}
  %0 = rlx.pool2d %x {kind = "max", kernel = array<i64: 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return
}

// -----

func.func @f51(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %0 = rlx.quantize %x {scale = -1.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xi8>
  func.return
}

// -----

func.func @f52(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{dequantize needs an i8 operand}}
  %0 = rlx.dequantize %x {scale = 1.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f53(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{3 scales for axis 0 of size 2}}
  %0 = rlx.fake_quantize %x {scale = array<f64: 1.0, 2.0, 3.0>, axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f54(%x: tensor<2x32xf32>) {
  // expected-error @+1 {{attribute 'format': unknown low-precision format 'f9e4m4'; accepted: f8e4m3}}
  %0 = rlx.scaled_quant_scale %x {format = "f9e4m4", scale_layout = "per_tensor"} : (tensor<2x32xf32>) -> tensor<1xf32>
  func.return
}

// -----

func.func @f55(%x: tensor<2x32xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{attribute 'scale_layout': unknown scale layout 'tile'}}
  %0 = rlx.scaled_quantize %x, %s {format = "f8e4m3", scale_layout = "tile"} : (tensor<2x32xf32>, tensor<1xf32>) -> tensor<2x32xui8>
  func.return
}

// -----

func.func @f56(%a: tensor<2x32xui8>, %b: tensor<3x16xui8>, %s: tensor<1xf32>) {
  // expected-error @+1 {{lhs has K=32, rhs has K=16}}
  %0 = rlx.scaled_matmul %a, %b, %s, %s {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<2x32xui8>, tensor<3x16xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f57(%x: tensor<2x48xf32>, %p: tensor<102xui8>) {
  // expected-error @+1 {{k (48) must be a multiple of the q8_0 block size 32}}
  %0 = rlx.dequant_matmul %x, %p {scheme = "q8_0", n = 2 : i64, k = 48 : i64} : (tensor<2x48xf32>, tensor<102xui8>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @f58(%x: tensor<2xf32>) {
  // expected-error @+1 {{std must be non-negative}}
  %0 = rlx.rng_normal {std = -1.0 : f64} : tensor<4xf32>
  func.return
}

// -----

func.func @f59(%x: tensor<2xf32>) {
  // expected-error @+1 {{random tensors must be floating point}}
  %0 = rlx.rng_uniform {low = 1.0 : f64, high = 0.0 : f64} : tensor<4xi32>
  func.return
}

// -----

func.func @f60(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{bias must have rank <= 1}}
  %0 = rlx.fused_matmul_bias_act %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f61(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'activation' must be one of none, relu, gelu, gelu_tanh, silu}}
  %0 = rlx.fused_matmul_bias_act %x, %w, %b {activation = "tanh"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @f62(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{packed operand needs an even last dim}}
  %0 = rlx.fused_swiglu %x : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @f63(%x: tensor<2x3xf32>, %r: tensor<2x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{x and residual must have the same type}}
  %0 = rlx.fused_residual_layer_norm %x, %r, %g, %g : (tensor<2x3xf32>, tensor<2x4xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @f64(%x: tensor<2x3xf32>, %r: tensor<2x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{x and residual must have the same type}}
  %0 = rlx.fused_residual_rms_norm %x, %r, %g : (tensor<2x3xf32>, tensor<2x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @scan_bad_carry(%init: tensor<8xf32>, %xs: tensor<5x8xf32>) {
  // expected-error @+1 {{yielded carry #0 has type tensor<4xf32>}}
  %c, %ys = rlx.scan (%init) over (%xs) {length = 5 : i64} : (tensor<8xf32>), (tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x4xf32>) {
  ^bb0(%carry: tensor<8xf32>, %x: tensor<8xf32>):
    %n = rlx.slice %x {starts = array<i64: 0>, limits = array<i64: 4>} : (tensor<8xf32>) -> tensor<4xf32>
    rlx.yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return
}

// -----

func.func @scan_bad_length(%init: tensor<8xf32>, %xs: tensor<5x8xf32>) {
  // expected-error @+1 {{each xs must have leading dim length=4}}
  %c, %ys = rlx.scan (%init) over (%xs) {length = 4 : i64} : (tensor<8xf32>), (tensor<5x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  ^bb0(%carry: tensor<8xf32>, %x: tensor<8xf32>):
    rlx.yield %carry, %x : tensor<8xf32>, tensor<8xf32>
  }
  func.return
}

// -----

func.func @if_bad_cond(%c: tensor<2xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{condition must be a one-element tensor of i1, got tensor<2xi1>}}
  %r = rlx.if %c : tensor<2xi1> -> (tensor<4xf32>) {
    rlx.yield %x : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @if_float_cond(%c: tensor<f32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{condition must be a one-element tensor of i1, got tensor<f32>}}
  %r = rlx.if %c : tensor<f32> -> (tensor<4xf32>) {
    rlx.yield %x : tensor<4xf32>
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @if_branch_types(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{the else region yields (tensor<2xf32>), the results are (tensor<4xf32>)}}
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    rlx.yield %x : tensor<4xf32>
  } else {
    rlx.yield %y : tensor<2xf32>
  }
  func.return
}

// -----

func.func @if_then_count(%c: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{the then region yields (), the results are (tensor<4xf32>)}}
  %r = rlx.if %c : tensor<i1> -> (tensor<4xf32>) {
    rlx.yield
  } else {
    rlx.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @region_bad_args(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{body arguments must be the scalar element types of the inputs}}
  %r = rlx.elementwise_region %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: f16):
    rlx.yield %a : f16
  }
  func.return
}

// -----

func.func private @g(f32) -> f32

func.func @region_bad_body(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{body may only contain arith and math ops, found func.call}}
  %r = rlx.elementwise_region %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: f32):
    %b = func.call @g(%a) : (f32) -> f32
    rlx.yield %b : f32
  }
  func.return
}

// -----

func.func @g0(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{reduce needs a numeric operand, got i1}}
  %0 = rlx.reduce %x {kind = "sum"} : (tensor<2x3xi1>) -> tensor<i1>
  func.return
}

// -----

func.func @g1(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{cumsum needs a numeric operand, got i1}}
  %0 = rlx.cumsum %x : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return
}

// -----

func.func @g2(%x: tensor<1x2x4x8xi32>, %c: tensor<4x4xi32>) {
  // expected-error @+1 {{rope needs floating-point operands, got i32}}
  %0 = rlx.rope %x, %c, %c : (tensor<1x2x4x8xi32>, tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<1x2x4x8xi32>
  func.return
}

// -----

func.func @g3(%x: tensor<1x1x4x4xi1>) {
  // expected-error @+1 {{pool2d needs a floating-point operand, got i1}}
  %0 = rlx.pool2d %x {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x1x4x4xi1>) -> tensor<1x1x2x2xi1>
  func.return
}

// -----

func.func @g4(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{missing required attribute 'axis'}}
  %0 = rlx.concat %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @hard_swish_int(%x: tensor<2xi32>) {
  // expected-error @+1 {{operand must have a floating-point element type, got i32}}
  %0 = rlx.hard_swish %x : (tensor<2xi32>) -> tensor<2xi32>
  func.return
}

// -----

func.func @conv_activation_int(%x: tensor<1x2x4x4xi32>, %w: tensor<2x2x3x3xi32>) {
  // expected-error @+1 {{activation 'relu' needs floating-point operands, got i32}}
  %0 = rlx.conv2d %x, %w {activation = "relu"} : (tensor<1x2x4x4xi32>, tensor<2x2x3x3xi32>) -> tensor<1x2x2x2xi32>
  func.return
}

// -----

func.func @conv_activation_unknown(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{attribute 'activation' must be one of none, relu, gelu, gelu_tanh, silu, sigmoid, hard_swish, clip; got "tanh"}}
  %0 = rlx.conv2d %x, %w {activation = "tanh"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_clip_missing(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{activation 'clip' needs the clip attribute [min, max]}}
  %0 = rlx.conv2d %x, %w {activation = "clip"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_clip_order(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{clip must be [min, max] with min <= max, got [6.0, 0.0]}}
  %0 = rlx.conv2d %x, %w {activation = "clip", clip = array<f64: 6.0, 0.0>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_clip_without_clip(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{clip applies only to activation 'clip', got activation 'relu'}}
  %0 = rlx.conv2d %x, %w {activation = "relu", clip = array<f64: 0.0, 6.0>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_residual_type(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %r: tensor<1x2x3x3xf32>) {
  // expected-error @+1 {{residual must have the convolution's result type tensor<1x2x2x2xf32>, got tensor<1x2x3x3xf32>}}
  %0 = rlx.fused_conv2d_residual %x, %w, %r : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_residual_arity(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{Expected 3 or 4 operands, but got 2}}
  %0 = rlx.fused_conv2d_residual %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @f(%w: tensor<2x64x40xf32>) {
  // expected-error @+1 {{pack_rhs needs a rank-2 operand [K, N], got tensor<2x64x40>}}
  %p = rlx.pack_rhs %w {width = 16 : i64} : (tensor<2x64x40xf32>) -> tensor<3x64x16xf32>
  func.return
}

// -----

func.func @f(%w: tensor<64x40xf32>) {
  // expected-error @+1 {{attribute 'width' must be a positive integer}}
  %p = rlx.pack_rhs %w {width = 0 : i64} : (tensor<64x40xf32>) -> tensor<3x64x16xf32>
  func.return
}

// -----

func.func @f(%w: tensor<64x40xi32>) {
  // expected-error @+1 {{pack_rhs needs a float operand, got i32}}
  %p = rlx.pack_rhs %w {width = 16 : i64} : (tensor<64x40xi32>) -> tensor<3x64x16xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x64xf32>, %p: tensor<3x64x16xf32>) {
  // expected-error @+1 {{n=50 does not match 3 panels of width 16}}
  %y = rlx.packed_matmul %x, %p {n = 50 : i64} : (tensor<5x64xf32>, tensor<3x64x16xf32>) -> tensor<5x50xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x63xf32>, %p: tensor<3x64x16xf32>) {
  // expected-error @+1 {{contracting dimensions differ: x has K=63, w_packed K=64}}
  %y = rlx.packed_matmul %x, %p {n = 40 : i64} : (tensor<5x63xf32>, tensor<3x64x16xf32>) -> tensor<5x40xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x64xf32>, %p: tensor<3x64x16xf32>, %b: tensor<41xf32>) {
  // expected-error @+1 {{bias tensor<41> must broadcast to [40]}}
  %y = rlx.packed_matmul %x, %p, %b {n = 40 : i64} : (tensor<5x64xf32>, tensor<3x64x16xf32>, tensor<41xf32>) -> tensor<5x40xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x64xf32>, %p: tensor<3x64x16xf16>) {
  // expected-error @+1 {{packed_matmul needs f32 packed panels}}
  %y = rlx.packed_matmul %x, %p {n = 40 : i64} : (tensor<5x64xf32>, tensor<3x64x16xf16>) -> tensor<5x40xf32>
  func.return
}

// -----

func.func @f(%x: tensor<5x64xf32>, %p: tensor<3x64x16xf32>) {
  // expected-error @+1 {{result #0 has type tensor<5x41xf32>, but the operands and attributes give tensor<5x40xf32>}}
  %y = rlx.packed_matmul %x, %p {n = 40 : i64} : (tensor<5x64xf32>, tensor<3x64x16xf32>) -> tensor<5x41xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x16x5xf32>) {
  // expected-error @+1 {{to_nchwc needs an NCHW operand (rank 4), got tensor<1x16x5>}}
  %y = rlx.to_nchwc %x {block = 8 : i64} : (tensor<1x16x5xf32>) -> tensor<1x2x5x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x12x5x5xf32>) {
  // expected-error @+1 {{block must be a power of two, got 6}}
  %y = rlx.to_nchwc %x {block = 6 : i64} : (tensor<1x12x5x5xf32>) -> tensor<1x2x5x5x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x12x5x5xf32>) {
  // expected-error @+1 {{channels (12) not divisible by block (8)}}
  %y = rlx.to_nchwc %x {block = 8 : i64} : (tensor<1x12x5x5xf32>) -> tensor<1x1x5x5x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x16x5x5xf32>) {
  // expected-error @+1 {{missing required attribute 'block'}}
  %y = rlx.to_nchwc %x : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x16x5x5xf32>) {
  // expected-error @+1 {{from_nchwc's operand must be NCHWc [N, C/B, H, W, B] (rank 5), got tensor<1x16x5x5>}}
  %y = rlx.from_nchwc %x : (tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x6xf32>) {
  // expected-error @+1 {{the block (last dim of from_nchwc's operand) must be a power of two, got 6}}
  %y = rlx.from_nchwc %x : (tensor<1x2x5x5x6xf32>) -> tensor<1x12x5x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>) {
  // expected-error @+1 {{result #0 has type tensor<1x8x5x5xf32>, but the operands and attributes give tensor<1x16x5x5xf32>}}
  %y = rlx.from_nchwc %x : (tensor<1x2x5x5x8xf32>) -> tensor<1x8x5x5xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x16x5x5xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{x must be NCHWc [N, C/B, H, W, B] (rank 5), got tensor<1x16x5x5>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x16x5x5xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<16x16x3x3xf32>) {
  // expected-error @+1 {{w must be [F/B, C/B, KH, KW, B, B] (rank 6) for layout "nchwc", got tensor<16x16x3x3>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x4x8xf32>) {
  // expected-error @+1 {{w must be tensor<2x2x3x3x8x8> for x tensor<1x2x5x5x8> with groups = 1 (block 8), got tensor<2x2x3x3x4x8>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x4x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x5x5x1xf32>, %w: tensor<2x3x3x3x8x8xf32>) {
  // expected-error @+1 {{w must be tensor<2x3x3x3x1x8> for x tensor<1x3x5x5x1> with groups = 1 (block 1), got tensor<2x3x3x3x8x8>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x3x5x5x1xf32>, tensor<2x3x3x3x8x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x5x5x1xf32>, %w: tensor<2x3x3x3x1x8xf32>) {
  // expected-error @+1 {{result #0 has type tensor<1x2x3x3x1xf32>, but the operands and attributes give tensor<1x2x3x3x8xf32>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x3x5x5x1xf32>, tensor<2x3x3x3x1x8xf32>) -> tensor<1x2x3x3x1xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x3x5x5x1xf32>, %w: tensor<2x3x3x3x1x6xf32>) {
  // expected-error @+1 {{the output block (last dim of w) must be a power of two, got 6}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x3x5x5x1xf32>, tensor<2x3x3x3x1x6xf32>) -> tensor<1x2x3x3x6xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x1x3x3x8x8xf32>) {
  // expected-error @+1 {{layout "nchwc" needs groups == 1 or a depthwise conv (groups == channels == filters), got groups = 2 with 16 channels}}
  %y = rlx.conv2d %x, %w {groups = 2 : i64, layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<2x1x3x3x8x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{result #0 has type tensor<1x16x3x3xf32>, but the operands and attributes give tensor<1x2x3x3x8xf32>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x16x3x3xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{attribute 'layout' must be one of nchw, nchwc; got "nhwc"}}
  %y = rlx.conv2d %x, %w {layout = "nhwc"} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %r: tensor<1x16x3x3xf32>) {
  // expected-error @+1 {{residual must have the convolution's result type tensor<1x2x3x3x8xf32>, got tensor<1x16x3x3xf32>}}
  %y = rlx.fused_conv2d_residual %x, %w, %r {layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>, tensor<1x16x3x3xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x16x4x4xf32>) {
  // expected-error @+1 {{x must be NCHWc [N, C/B, H, W, B] (rank 5), got tensor<1x16x4x4>}}
  %y = rlx.pool2d %x {kind = "max", kernel = array<i64: 2, 2>, layout = "nchwc"} : (tensor<1x16x4x4xf32>) -> tensor<1x2x2x2x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x4x4x8xf32>) {
  // expected-error @+1 {{x must be NCHW (rank 4), got tensor<1x2x4x4x8>}}
  %y = rlx.pool2d %x {kind = "max", kernel = array<i64: 2, 2>} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x2x2x8xf32>
  func.return
}

// -----

func.func @f(%x: tensor<1x2x5x5x8xf32>, %w: tensor<1x1x3x3x1x8xf32>) {
  // expected-error @+1 {{a depthwise nchwc conv needs filters == channels (16), got 8}}
  %y = rlx.conv2d %x, %w {groups = 16 : i64, layout = "nchwc"} : (tensor<1x2x5x5x8xf32>, tensor<1x1x3x3x1x8xf32>) -> tensor<1x1x3x3x8xf32>
  func.return
}

// -----

func.func @conv_reduce_type(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{result #0 has type tensor<1x2x2x2xf32>, but the operands and attributes give tensor<1x2x1x1xf32>}}
  %0 = rlx.conv2d %x, %w {reduce = "mean"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @conv_reduce_int(%x: tensor<1x2x4x4xi32>, %w: tensor<2x2x3x3xi32>) {
  // expected-error @+1 {{reduce 'mean' needs floating-point operands, got i32}}
  %0 = rlx.conv2d %x, %w {reduce = "mean"} : (tensor<1x2x4x4xi32>, tensor<2x2x3x3xi32>) -> tensor<1x2x1x1xi32>
  func.return
}

// -----

func.func @conv_reduce_unknown(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) {
  // expected-error @+1 {{attribute 'reduce' must be one of none, mean; got "max"}}
  %0 = rlx.conv2d %x, %w {reduce = "max"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x1x1xf32>
  func.return
}

// -----

func.func @conv_reduce_residual(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %r: tensor<1x2x1x1xf32>) {
  // expected-error @+1 {{residual must have the convolution's result type tensor<1x2x2x2xf32>, got tensor<1x2x1x1xf32>}}
  %0 = rlx.fused_conv2d_residual %x, %w, %r {reduce = "mean"} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32>
  func.return
}

// -----

func.func @conv_reduce_nchwc(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{reduce 'mean' needs layout 'nchw'}}
  %y = rlx.conv2d %x, %w {layout = "nchwc", reduce = "mean"} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x1x1xf32>
  func.return
}

// -----

func.func @winograd_shape(%x: tensor<1x2x5x5x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) {
  // expected-error @+1 {{winograd weights must be [16, F/B, C/B, B, B], got tensor<2x2x3x3x8x8>}}
  %y = rlx.conv2d %x, %w {layout = "nchwc", winograd = true} : (tensor<1x2x5x5x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x3x3x8xf32>
  func.return
}

// -----

func.func @winograd_nchw(%x: tensor<1x16x5x5xf32>, %u: tensor<16x2x2x8x8xf32>) {
  // expected-error @+1 {{winograd weights need layout "nchwc"}}
  %y = rlx.conv2d %x, %u {winograd = true} : (tensor<1x16x5x5xf32>, tensor<16x2x2x8x8xf32>) -> tensor<1x16x3x3xf32>
  func.return
}

// -----

func.func @winograd_stride(%x: tensor<1x2x5x5x8xf32>, %u: tensor<16x2x2x8x8xf32>) {
  // expected-error @+1 {{winograd weights need strides and dilations [1, 1], got [2, 2], [1, 1]}}
  %y = rlx.fused_conv2d_residual %x, %u, %x {strides = array<i64: 2, 2>, layout = "nchwc", winograd = true} : (tensor<1x2x5x5x8xf32>, tensor<16x2x2x8x8xf32>, tensor<1x2x5x5x8xf32>) -> tensor<1x2x2x2x8xf32>
  func.return
}
