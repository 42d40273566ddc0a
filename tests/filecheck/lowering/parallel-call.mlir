// RUN: rlx-opt %s -p convert-rlx-to-linalg --split-input-file | filecheck %s
// RUN: rlx-opt %s -p 'convert-rlx-to-linalg{parallel=false}' --split-input-file | filecheck %s --check-prefix=OFF

// Large row-parallel ops become an rlx_rt.parallel_call of the op's kernel on a chunk of
// rows (16K elements): 64 rows of 1024 -> 4 chunks of 16 rows, 64 KiB apart. Softmax makes
// three passes, so it is chunked (kept in cache) even where one thread runs it
// (max_threads = 1: 64K elements make one thread's share).

func.func @softmax_rows(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %y = rlx.softmax %x {axis = -1 : i64} : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  func.return %y : tensor<64x1024xf32>
}

// CHECK-LABEL: func.func @softmax_rows(
// CHECK-NEXT:    "rlx_rt.parallel_call"(%x, %out0) <{callee = @[[K:rlx_k[0-9]+]], tasks = 4 : i64, strides = array<i64: 65536, 65536>, max_threads = 1 : i64}> : (memref<64x1024xf32>, memref<64x1024xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK:       func.func private @[[K]](%{{.*}}: memref<16x1024xf32> {llvm.noalias}, %{{.*}}: memref<16x1024xf32> {llvm.noalias}) attributes {rlx.kernel = "rlx.softmax"}

// OFF-LABEL: func.func @softmax_rows(
// OFF-NEXT:    func.call @{{rlx_k[0-9]+}}(%x, %out0) : (memref<64x1024xf32>, memref<64x1024xf32>) -> ()

// -----

// An elementwise op is chunked only when several threads may share it (256K elements:
// up to 4). The row-broadcast operand %b has stride 0: every task reads all of it.

func.func @add_rows(%x: tensor<512x512xf32>, %b: tensor<512xf32>) -> tensor<512x512xf32> {
  %y = rlx.add %x, %b : (tensor<512x512xf32>, tensor<512xf32>) -> tensor<512x512xf32>
  func.return %y : tensor<512x512xf32>
}

// CHECK-LABEL: func.func @add_rows(
// CHECK-NEXT:    "rlx_rt.parallel_call"(%x, %b, %out0) <{callee = @[[K:rlx_k[0-9]+]], tasks = 16 : i64, strides = array<i64: 65536, 0, 65536>, max_threads = 4 : i64}>
// CHECK:       func.func private @[[K]](%{{.*}}: memref<32x512xf32> {llvm.noalias}, %{{.*}}: memref<512xf32> {llvm.noalias}, %{{.*}}: memref<32x512xf32> {llvm.noalias}) attributes {rlx.kernel = "rlx.add"}

// OFF-LABEL: func.func @add_rows(
// OFF-NEXT:    func.call

// -----

// Leading size-1 dims are skipped: the split is on the first dim larger than 1; a size-1
// operand dim there (%col) is a broadcast.

func.func @leading_one(%x: tensor<1x256x1024xf32>, %col: tensor<1x256x1xf32>) -> tensor<1x256x1024xf32> {
  %y = rlx.mul %x, %col : (tensor<1x256x1024xf32>, tensor<1x256x1xf32>) -> tensor<1x256x1024xf32>
  func.return %y : tensor<1x256x1024xf32>
}

// CHECK-LABEL: func.func @leading_one(
// CHECK-NEXT:    "rlx_rt.parallel_call"(%x, %col, %out0) <{callee = @[[K:rlx_k[0-9]+]], tasks = 16 : i64, strides = array<i64: 65536, 64, 65536>, max_threads = 4 : i64}>
// CHECK:       func.func private @[[K]](%{{.*}}: memref<1x16x1024xf32> {llvm.noalias}, %{{.*}}: memref<1x16x1xf32> {llvm.noalias}, %{{.*}}: memref<1x16x1024xf32> {llvm.noalias})

// -----

// Not chunked: a small op, an elementwise op one thread handles (64K elements), a softmax
// over the leading axis (rows are not contiguous), and ops that are not row-parallel.

func.func @plain(%s: tensor<16x64xf32>, %m: tensor<64x1024xf32>, %w: tensor<1024x64xf32>) -> (tensor<16x64xf32>, tensor<64x1024xf32>, tensor<64x1024xf32>, tensor<64x64xf32>) {
  %a = rlx.softmax %s {axis = -1 : i64} : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %b = rlx.exp %m : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %c = rlx.softmax %m {axis = 0 : i64} : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %d = rlx.matmul %m, %w : (tensor<64x1024xf32>, tensor<1024x64xf32>) -> tensor<64x64xf32>
  func.return %a, %b, %c, %d : tensor<16x64xf32>, tensor<64x1024xf32>, tensor<64x1024xf32>, tensor<64x64xf32>
}

// CHECK-LABEL: func.func @plain(
// CHECK-NOT:     rlx_rt.parallel_call
// CHECK:         func.return

// -----

// Ops that call BLAS are not chunked (concurrent OpenBLAS calls were slower): attention
// keeps one kernel call.

func.func @attention_heads(%q: tensor<1x12x128x32xf32>, %k: tensor<1x12x128x32xf32>, %v: tensor<1x12x128x32xf32>, %m: tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32> {
  %y = rlx.attention %q, %k, %v, %m {mask_kind = "bias"} : (tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x12x128x32xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x32xf32>
  func.return %y : tensor<1x12x128x32xf32>
}

// CHECK-LABEL: func.func @attention_heads(
// CHECK-NEXT:    func.call @{{rlx_k[0-9]+}}(%q, %k, %v, %m, %out0)
