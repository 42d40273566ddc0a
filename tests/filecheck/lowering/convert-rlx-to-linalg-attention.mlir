// RUN: env RLX_BLAS=1 RLX_GEMM_ISA=avx2 rlx-opt %s -p 'convert-rlx-to-linalg{parallel=false}' --split-input-file | filecheck %s

// (Chunking over heads, rlx_rt.parallel_call, is off here: tests/filecheck/lowering/parallel-call.mlir.)

// f32 attention: the flash kernel (attention_flash.py). The op's kernel is one
// rlx_rt.parallel_call of the flash worker over (batch, head, query block) tasks (a table
// of task ids, 8 bytes per task); the worker packs Q^T once (8x32x16), then per key block
// packs K (32x32x4) and V (2x128x16), calls the GEMM microkernel for S^T = K Q^T (row
// stride nr = 16 straight into the score tile, 8x128x16), runs the online softmax
// (running max and sum; exp of arguments <= 0 built from the exponent bits: arith.shli)
// writing P packed (32x128x4), and calls the microkernel again for O += P V (128x32).
// No BLAS call, no S x S buffer.
// MiniLM-shaped: 128 query rows make one block, 128 keys one block; the 6-row AVX2 tile
// becomes 4 rows (4 | nr = 16).

func.func @attention_bias(%q: tensor<1x12x128x32xf32>, %k: tensor<1x12x128x32xf32>, %v: tensor<1x12x128x32xf32>, %m: tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32> {
  %y = rlx.attention %q, %k, %v, %m {mask_kind = "bias"} : (tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32>
  func.return %y : tensor<1x12x128x32xf32>
}

// CHECK-LABEL: func.func @attention_bias(
// CHECK-NOT:   rlx_blas
// CHECK:       func.func private @[[UK:rlx_k[0-9]+]](%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) attributes {rlx.kernel = "ukernel avx2 4x16"
// CHECK:       func.func private @[[W:rlx_k[0-9]+]]({{.*}}) attributes {rlx.kernel = "rlx.attention flash avx2 4x16 bq=128 bk=128"}
// CHECK-DAG:     memref.alloc() {alignment = 64 : i64} : memref<8x128x16xf32>
// CHECK-DAG:     memref.alloca() {alignment = 64 : i64} : memref<32x32x4xf32>
// CHECK-DAG:     memref.alloca() {alignment = 64 : i64} : memref<2x128x16xf32>
// CHECK-DAG:     memref.alloc() {alignment = 64 : i64} : memref<32x128x4xf32>
// CHECK:         scf.for
// CHECK:           func.call @[[UK]](
// CHECK:           arith.shli
// CHECK:           arith.shli
// CHECK:           func.call @[[UK]](
// CHECK:       func.func private @rlx_k{{[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.attention"}
// CHECK:         "rlx_rt.parallel_call"(%{{.*}}) <{callee = @[[W]], tasks = 12 : i64, strides = array<i64: 8, 0, 0, 0, 0, 0>, max_threads = 12 : i64}>
// CHECK-NOT:   rlx_blas

// -----

// Causal with Sq > Sk, f64: dgemm, 160 query rows in blocks of 128 (the last one
// partial); a block whose rows see no key skips both GEMMs (scf.if) and writes zeros.

func.func @attention_causal(%q: tensor<1x2x160x16xf64>, %k: tensor<1x2x96x16xf64>) -> tensor<1x2x160x16xf64> {
  %y = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x2x160x16xf64>, tensor<1x2x96x16xf64>, tensor<1x2x96x16xf64>) -> tensor<1x2x160x16xf64>
  func.return %y : tensor<1x2x160x16xf64>
}

// CHECK-LABEL: func.func @attention_causal(
// CHECK:       func.func private @rlx_blas_dgemm(
// CHECK:       func.func private @rlx_k{{[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.attention"}
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<128x96xf64>
// CHECK:         scf.if
// CHECK:           func.call @rlx_blas_dgemm(
// CHECK:           func.call @rlx_blas_dgemm(
// CHECK:         } else {
// CHECK-NOT:       func.call
// CHECK:           memref.store %{{.*}} : memref<1x2x160x16xf64>
// CHECK:         }

// -----

// f16 takes the flash kernel too (f32 packing and accumulators); decode steps (fewer
// than 4 query rows), tiny problems and RLX_BLAS=0 f64 keep the loop kernel.

func.func @attention_f16(%q: tensor<1x12x128x32xf16>, %k: tensor<1x12x128x32xf16>) -> tensor<1x12x128x32xf16> {
  %y = rlx.attention %q, %k, %k : (tensor<1x12x128x32xf16>, tensor<1x12x128x32xf16>, tensor<1x12x128x32xf16>) -> tensor<1x12x128x32xf16>
  func.return %y : tensor<1x12x128x32xf16>
}

// CHECK-LABEL: func.func @attention_f16(
// CHECK-NOT:   rlx_blas
// CHECK:       attributes {rlx.kernel = "rlx.attention flash avx2 4x16 bq=128 bk=128"}
// CHECK:         arith.extf
// CHECK:         arith.shli
// CHECK:         arith.truncf
// CHECK-NOT:   rlx_blas

// -----

func.func @attention_decode(%q: tensor<1x8x1x64xf32>, %k: tensor<1x8x512x64xf32>) -> tensor<1x8x1x64xf32> {
  %y = rlx.attention %q, %k, %k {mask_kind = "causal"} : (tensor<1x8x1x64xf32>, tensor<1x8x512x64xf32>, tensor<1x8x512x64xf32>) -> tensor<1x8x1x64xf32>
  func.return %y : tensor<1x8x1x64xf32>
}

// CHECK-LABEL: func.func @attention_decode(
// CHECK-NOT:   rlx_blas
// CHECK:       func.func private @rlx_k{{[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.attention"}
// CHECK-NOT:   rlx_blas
