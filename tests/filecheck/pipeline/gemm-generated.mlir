// RUN: env RLX_BLAS=0 RLX_GEMM_ISA=avx2 rlx-opt %s -p convert-rlx-to-linalg | filecheck %s
// RUN: env RLX_BLAS=0 RLX_GEMM_ISA=avx2 rlx-opt %s --dispatch-report -p convert-rlx-to-linalg 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: env RLX_BLAS=0 RLX_GEMM_ISA=generic rlx-opt %s --lower-to-llvm --emit=llvm-ir | filecheck %s --check-prefix=IR

// The generated GEMM in the printed stages (AVX2 tile 6x16, forced): the matmul kernel
// packs B in place and runs the tile worker over C blocks; the microkernel is llvm-dialect
// vector code (12 accumulators, broadcasts of A, fmuladd). A small f32 A (K <= 512, packed
// by one serial call otherwise) is read in place by the "rows ukernel" (8 arguments: lda
// and the row count); a larger one (K = 520 here) is packed on the pool for the packed
// microkernel. The packing task and the workers are shape-generic: flat views of the
// buffers and a table of sizes, so the two in-place GEMM shapes share one worker.

func.func @main(%a: tensor<40x64xf32>, %b: tensor<64x48xf32>, %c: tensor<50x48xf32>, %d: tensor<48x24xf32>, %e: tensor<30x520xf32>, %f: tensor<520x24xf32>) -> (tensor<40x48xf32>, tensor<50x24xf32>, tensor<30x24xf32>) {
  %m = rlx.matmul %a, %b : (tensor<40x64xf32>, tensor<64x48xf32>) -> tensor<40x48xf32>
  %n = rlx.matmul %c, %d : (tensor<50x48xf32>, tensor<48x24xf32>) -> tensor<50x24xf32>
  %o = rlx.matmul %e, %f : (tensor<30x520xf32>, tensor<520x24xf32>) -> tensor<30x24xf32>
  func.return %m, %n, %o : tensor<40x48xf32>, tensor<50x24xf32>, tensor<30x24xf32>
}

// CHECK:      func.func private @[[RUK:rlx_k[0-9]+]](%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) attributes {rlx.kernel = "rows ukernel avx2 6x16"
// CHECK:        arith.minsi
// CHECK-COUNT-12: llvm.load %{{.*}} : !llvm.ptr -> vector<8xf32>
// CHECK:        scf.for {{.*}} iter_args(
// CHECK:          llvm.insertelement
// CHECK-NEXT:     llvm.shufflevector %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK-NEXT:     llvm.call_intrinsic "llvm.fmuladd.v8f32"
// CHECK:      func.func private @[[RWORK:rlx_k[0-9]+]]({{.*}}) attributes {rlx.kernel = "gemm worker avx2 6x16 (any shape)"}
// CHECK:        func.call @[[RUK]](
// CHECK:      func.func private @{{rlx_k[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.matmul", rlx.gemm = "generated avx2 6x16"}
// CHECK:        memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2147483647], strides: [1] : memref<40x64xf32> to memref<2147483647xf32>
// CHECK-NOT:    strides = array<i64: 8, 0, 0, 0>,
// CHECK:        "rlx_rt.parallel_call"(%{{.*}}) <{callee = @[[RWORK]], {{.*}}strides = array<i64: 8, 0, 0, 0, 0>{{.*}} : (memref<{{[0-9]+}}xi64>, memref<11xi64>, memref<2147483647xf32>, memref<2147483647xf32>, memref<2147483647xf32>) -> ()
// CHECK:      func.func private @{{rlx_k[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.matmul", rlx.gemm = "generated avx2 6x16"}
// CHECK-NOT:    strides = array<i64: 8, 0, 0, 0>,
// CHECK:        "rlx_rt.parallel_call"(%{{.*}}) <{callee = @[[RWORK]],
// CHECK:      func.func private @[[PACK:rlx_k[0-9]+]](%{{.*}}: memref<1xi64> {{.*}}, %{{.*}}: memref<4xi64> {{.*}}, %{{.*}}: memref<2147483647xf32> {{.*}}, %{{.*}}: memref<2147483647xf32> {{.*}}) attributes {rlx.kernel = "gemm pack A avx2 6x16 (any shape)"}
// CHECK:      func.func private @[[UK:rlx_k[0-9]+]](%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) attributes {rlx.kernel = "ukernel avx2 6x16"
// CHECK:      func.func private @[[WORK:rlx_k[0-9]+]]({{.*}}) attributes {rlx.kernel = "gemm worker avx2 6x16 (any shape)"}
// CHECK:        func.call @[[UK]](
// CHECK:      func.func private @{{rlx_k[0-9]+}}({{.*}}) attributes {rlx.kernel = "rlx.matmul", rlx.gemm = "generated avx2 6x16"}
// CHECK:        "rlx_rt.parallel_call"(%{{.*}}) <{callee = @[[PACK]], {{.*}}strides = array<i64: 8, 0, 0, 0>{{.*}} : (memref<1xi64>, memref<4xi64>, memref<2147483647xf32>, memref<2147483647xf32>) -> ()
// CHECK:        "rlx_rt.parallel_call"(%{{.*}}) <{callee = @[[WORK]],
// CHECK-NOT:  rlx.kernel = "gemm

// REPORT: gemm (mode generated: RLX_BLAS=1 openblas, 0 generated, unset auto):
// REPORT-NEXT: - matmul ×3: generated avx2 6x16

// IR: shufflevector <4 x float>
// IR: call <4 x float> @llvm.fmuladd.v4f32(<4 x float>
