// RUN: rlx-opt %s -p convert-to-llvm --split-input-file --verify-diagnostics

// The bare-pointer convention cannot pass dynamic sizes.
// expected-error @+1 {{convert-func-to-llvm: @dynamic_arg: only memrefs with static shape, strides and offset are supported, got memref<?xf32>}}
func.func @dynamic_arg(%a: memref<?xf32>) {
  func.return
}

// -----

func.func @dynamic_alloc(%n: index) {
  // expected-error @+1 {{convert-memref-to-llvm: 'memref.alloc' with dynamic sizes is not supported}}
  %b = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  func.return
}

// -----

func.func @ipowi(%a: i32, %b: i32) -> i32 {
  // expected-error @+1 {{convert-math-to-llvm: unsupported operation 'math.ipowi'}}
  %c = math.ipowi %a, %b : i32
  func.return %c : i32
}

// -----

func.func @vector_constant() -> vector<4xf32> {
  // expected-error @+1 {{convert-arith-to-llvm: only scalar constants are supported}}
  %c = arith.constant dense<1.0> : vector<4xf32>
  func.return %c : vector<4xf32>
}

// -----

func.func @switch(%i: i32) {
  // expected-error @+1 {{convert-to-llvm: unsupported operation 'cf.switch'}}
  cf.switch %i : i32, [
    default: ^bb1,
    0: ^bb1
  ]
^bb1:
  func.return
}
