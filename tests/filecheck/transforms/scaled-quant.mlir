// RUN: rlx-opt %s --split-input-file --scaled-quant=fp8-e4m3 | filecheck %s
// RUN: rlx-opt %s --split-input-file --scaled-quant=mxfp8 | filecheck %s --check-prefix=MX
// RUN: rlx-opt %s --split-input-file --scaled-quant=f8e4m3,f8e5m2,layout=nvfp4/16 | filecheck %s --check-prefix=NV
// RUN: rlx-opt %s --split-input-file -p 'scaled-quant{formats="f4e3m0,layout=mx"}' | filecheck %s --check-prefix=F4

// One matmul: 1 transpose, 2 scales, 2 quantizations, 1 scaled_matmul.
func.func @one(%x: tensor<2x64xf32>) -> tensor<2x3xf32> {
  %w = rlx.param "w" : tensor<64x3xf32>
  %y = rlx.matmul %x, %w : (tensor<2x64xf32>, tensor<64x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @one
// CHECK-NEXT:  %[[XS:.*]] = rlx.scaled_quant_scale %x {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<2x64xf32>) -> tensor<1xf32>
// CHECK-NEXT:  %[[XQ:.*]] = rlx.scaled_quantize %x, %[[XS]] {format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<2x64xf32>, tensor<1xf32>) -> tensor<2x64xui8>
// CHECK-NEXT:  %w = rlx.param "w" : tensor<64x3xf32>
// CHECK-NEXT:  %[[WT:.*]] = rlx.transpose %w {permutation = array<i64: 1, 0>} : (tensor<64x3xf32>) -> tensor<3x64xf32>
// CHECK-NEXT:  %[[WS:.*]] = rlx.scaled_quant_scale %[[WT]] {{.*}} -> tensor<1xf32>
// CHECK-NEXT:  %[[WQ:.*]] = rlx.scaled_quantize %[[WT]], %[[WS]] {{.*}} -> tensor<3x64xui8>
// CHECK-NEXT:  %y = rlx.scaled_matmul %[[XQ]], %[[WQ]], %[[XS]], %[[WS]] {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "per_tensor"} : (tensor<2x64xui8>, tensor<3x64xui8>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  func.return %y
// CHECK-NOT:   rlx.matmul
// MX-LABEL:    func.func @one
// MX:          rlx.scaled_matmul {{.*}} {lhs_format = "f8e4m3", rhs_format = "f8e4m3", scale_layout = "mx"} : (tensor<2x64xui8>, tensor<3x64xui8>, tensor<2x2xui8>, tensor<3x2xui8>) -> tensor<2x3xf32>
// NV-LABEL:    func.func @one
// NV:          rlx.scaled_matmul {{.*}} {lhs_format = "f8e4m3", rhs_format = "f8e5m2", scale_layout = "nvfp4"} : (tensor<2x64xui8>, tensor<3x64xui8>, tensor<2x4xui8>, tensor<3x4xui8>) -> tensor<2x3xf32>
// F4-LABEL:    func.func @one
// F4:          rlx.scaled_matmul {{.*}} {lhs_format = "f4e3m0", rhs_format = "f4e3m0", scale_layout = "mx"}

// -----

// Two matmuls sharing x: 3 quantizations (x, w, v), not 4.
func.func @shared(%x: tensor<2x64xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>) {
  %w = rlx.param "w" : tensor<64x3xf32>
  %v = rlx.param "v" : tensor<64x5xf32>
  %a = rlx.matmul %x, %w : (tensor<2x64xf32>, tensor<64x3xf32>) -> tensor<2x3xf32>
  %b = rlx.matmul %x, %v : (tensor<2x64xf32>, tensor<64x5xf32>) -> tensor<2x5xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x5xf32>
}
// CHECK-LABEL:   func.func @shared
// CHECK-COUNT-3: rlx.scaled_quantize
// CHECK-NOT:     rlx.scaled_quantize
// CHECK-COUNT-2: rlx.scaled_matmul %x_q,
// CHECK-NOT:     rlx.matmul

// -----

// A weight shared by two matmuls is transposed (and quantized) once.
func.func @shared_weight(%x: tensor<2x64xf32>, %z: tensor<4x64xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %w = rlx.param "w" : tensor<64x3xf32>
  %a = rlx.matmul %x, %w : (tensor<2x64xf32>, tensor<64x3xf32>) -> tensor<2x3xf32>
  %c = rlx.matmul %z, %w : (tensor<4x64xf32>, tensor<64x3xf32>) -> tensor<4x3xf32>
  func.return %a, %c : tensor<2x3xf32>, tensor<4x3xf32>
}
// CHECK-LABEL:   func.func @shared_weight
// CHECK:         rlx.transpose %w
// CHECK-NOT:     rlx.transpose
// CHECK:         rlx.scaled_matmul %x_q, %w_t_q
// CHECK-NEXT:    rlx.scaled_matmul %z_q, %w_t_q

// -----

// Left alone: batched (rank-3) matmuls, non-f32 matmuls, dynamic dims.
func.func @untouched(%x: tensor<2x2x8xf32>, %y: tensor<2x8x4xf32>, %h: tensor<2x8xf16>, %g: tensor<8x4xf16>, %d: tensor<?x8xf32>, %w: tensor<8x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x4xf16>, tensor<?x4xf32>) {
  %a = rlx.matmul %x, %y : (tensor<2x2x8xf32>, tensor<2x8x4xf32>) -> tensor<2x2x4xf32>
  %b = rlx.matmul %h, %g : (tensor<2x8xf16>, tensor<8x4xf16>) -> tensor<2x4xf16>
  %c = rlx.matmul %d, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  func.return %a, %b, %c : tensor<2x2x4xf32>, tensor<2x4xf16>, tensor<?x4xf32>
}
// CHECK-LABEL:   func.func @untouched
// CHECK-COUNT-3: rlx.matmul
// CHECK-NOT:     rlx.scaled
