// RUN: env RLX_BLAS=1 rlx-opt %s -p 'convert-rlx-to-linalg{parallel=false}' --split-input-file | filecheck %s

// (Chunking over heads, rlx_rt.parallel_call, is off here: tests/filecheck/lowering/parallel-call.mlir.)

// f32 attention with BLAS: per (batch, head) and block of query rows, S = scale * Q K^T
// is one sgemm (K read in place: transpose flag "T" = 84), the row softmax runs on S in
// place, then O = P V is a second sgemm into the output, and each output row is scaled
// by 1 / sum. MiniLM-shaped: 128 query rows make one block.

func.func @attention_bias(%q: tensor<1x12x128x32xf32>, %k: tensor<1x12x128x32xf32>, %v: tensor<1x12x128x32xf32>, %m: tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32> {
  %y = rlx.attention %q, %k, %v, %m {mask_kind = "bias"} : (tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32>
  func.return %y : tensor<1x12x128x32xf32>
}

// CHECK-DAG:   "memref.global"() <{sym_name = "[[N:rlx_table[0-9]+]]", type = memref<1xi8>, initial_value = dense<78> : tensor<1xi8>
// CHECK-DAG:   "memref.global"() <{sym_name = "[[T:rlx_table[0-9]+]]", type = memref<1xi8>, initial_value = dense<84> : tensor<1xi8>
// CHECK-LABEL: func.func @attention_bias(
// CHECK:       func.func private @rlx_blas_sgemm(index, index, index, index, index, index, index, index, index, index, index, index, index)
// CHECK:       func.func private @rlx_k{{[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.attention"}
// CHECK-DAG:     %[[NG:.*]] = memref.get_global @[[N]]
// CHECK-DAG:     %[[NP:.*]] = "memref.extract_aligned_pointer_as_index"(%[[NG]])
// CHECK-DAG:     %[[TG:.*]] = memref.get_global @[[T]]
// CHECK-DAG:     %[[TP:.*]] = "memref.extract_aligned_pointer_as_index"(%[[TG]])
// CHECK-DAG:     %{{.*}} = memref.alloc() {alignment = 64 : i64} : memref<128x128xf32>
// CHECK-DAG:     %[[SCALE:.*]] = arith.constant 0.176776692 : f32
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               memref.store %[[SCALE]], %{{.*}}[%{{.*}}] : memref<1xf32>
// CHECK:               func.call @rlx_blas_sgemm(%[[TP]], %[[NP]],
// CHECK:               scf.for
// CHECK:                 scf.for {{.*}} iter_args
// CHECK:                   memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<128x128xf32>
// CHECK:                   memref.load %{{.*}} : memref<1x1x1x128xf32>
// CHECK:                   arith.maximumf
// CHECK:                 scf.for {{.*}} iter_args
// CHECK:                   math.exp
// CHECK:                   arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:               func.call @rlx_blas_sgemm(%[[NP]], %[[NP]],
// CHECK:               scf.for
// CHECK:                 arith.divf
// CHECK:                 scf.for
// CHECK:                   memref.load %{{.*}} : memref<1x12x128x32xf32>
// CHECK:                   arith.mulf
// CHECK:                   memref.store %{{.*}} : memref<1x12x128x32xf32>
// CHECK-NOT:   func.call @rlx_blas_sgemm(
// CHECK:         func.return

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

// f16 (and decode steps, tiny problems, RLX_BLAS=0) keep the loop kernel: no GEMM call.

func.func @attention_f16(%q: tensor<1x12x128x32xf16>, %k: tensor<1x12x128x32xf16>) -> tensor<1x12x128x32xf16> {
  %y = rlx.attention %q, %k, %k : (tensor<1x12x128x32xf16>, tensor<1x12x128x32xf16>, tensor<1x12x128x32xf16>) -> tensor<1x12x128x32xf16>
  func.return %y : tensor<1x12x128x32xf16>
}

// CHECK-LABEL: func.func @attention_f16(
// CHECK-NOT:   rlx_blas
// CHECK:       func.func private @rlx_k{{[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.attention"}
// CHECK-NOT:   rlx_blas
// CHECK:         arith.extf
// CHECK:         math.exp
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
