// RUN: rlx-opt %s | rlx-opt | filecheck %s

// rlx_rt.parallel_call round-trips: one chunk kernel over four 16-row chunks of %x and
// %y; %b (stride 0) is passed whole to every task.

func.func private @chunk(%a: memref<16x8xf32>, %b: memref<8xf32>, %c: memref<16x8xf32>)

func.func @f(%x: memref<64x8xf32>, %b: memref<8xf32>, %y: memref<64x8xf32>) {
  "rlx_rt.parallel_call"(%x, %b, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512, 0, 512>, max_threads = 2 : i64}> : (memref<64x8xf32>, memref<8xf32>, memref<64x8xf32>) -> ()
  func.return
}

// CHECK: "rlx_rt.parallel_call"(%x, %b, %y) <{callee = @chunk, tasks = 4 : i64, strides = array<i64: 512, 0, 512>, max_threads = 2 : i64}> : (memref<64x8xf32>, memref<8xf32>, memref<64x8xf32>) -> ()
