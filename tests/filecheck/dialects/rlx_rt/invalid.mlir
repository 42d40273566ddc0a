// Verifier diagnostics of rlx_rt.parallel_call.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @strides(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{has 2 operands but 1 strides}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512>, max_threads = 1 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func @missing(%x: memref<64x8xf32>) {
  // expected-error @+1 {{callee @nowhere is not defined}}
  "rlx_rt.parallel_call"(%x) <{callee = @nowhere, tasks = 4 : i64, strides = array<i64: 512>, max_threads = 1 : i64}> : (memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @arity(%x: memref<64x8xf32>) {
  // expected-error @+1 {{callee @chunk takes 2 arguments, 1 given}}
  "rlx_rt.parallel_call"(%x) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512>, max_threads = 1 : i64}> : (memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @overflow(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{5 chunks of memref<16x8xf32> at a stride of 512 bytes do not fit in memref<64x8xf32>}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 5 : i64, strides = array<i64: 512, 512>, max_threads = 1 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @overlap(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{do not fit in memref<64x8xf32> without overlapping}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 256, 512>, max_threads = 1 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf64>, %c: memref<16x8xf32>)

func.func @elem(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{argument #0: element type f32 but the callee takes f64}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512, 512>, max_threads = 1 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @tasks(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{needs tasks >= 1}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 0 : i64, strides = array<i64: 512, 512>, max_threads = 1 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// -----

func.func private @chunk(%a: memref<16x8xf32>, %c: memref<16x8xf32>)

func.func @threads(%x: memref<64x8xf32>, %y: memref<64x8xf32>) {
  // expected-error @+1 {{needs max_threads >= 1}}
  "rlx_rt.parallel_call"(%x, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512, 512>, max_threads = 0 : i64}> : (memref<64x8xf32>, memref<64x8xf32>) -> ()
  func.return
}
