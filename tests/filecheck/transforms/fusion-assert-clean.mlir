// RUN: rlx-opt %s -p 'fusion{assert-clean=true}' --split-input-file --verify-diagnostics | filecheck %s

// One chunk per near-miss reason: `assert-clean` fails at the first missed op with
// "fusion contract violated: N missed patterns" followed by the fusion report.

func.func @several_users(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}matmul_bias_act @ {{.*}} (rlx.matmul) — matmul has several users → }}
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  func.return %a, %mm : tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

func.func @not_add(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>) -> tensor<2x16xf32> {
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}matmul's single user is not an add}}
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %r = rlx.relu %mm : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %r : tensor<2x16xf32>
}

// -----

func.func @bias_rank(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}bias rank > 1 (rank 2)}}
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %a : tensor<2x16xf32>
}

// -----

func.func @activation(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}activation not fusable (rlx.tanh) → only relu, gelu, gelu_tanh and silu epilogues fuse}}
  %t = rlx.tanh %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %t : tensor<2x16xf32>
}

// -----

// The second weight is computed after the first matmul, so the group cannot be merged.
func.func @shared(%x: tensor<2x16xf32>, %w1: tensor<16x8xf32>, %p: tensor<8x16xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}shared-input matmuls left unfused (2 matmuls)}}
  %a = rlx.matmul %x, %w1 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  %w2 = rlx.transpose %p {permutation = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %b = rlx.matmul %x, %w2 : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

func.func @swiglu_inputs(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x32xf32>) -> tensor<4x32xf32> {
  %g = rlx.matmul %a, %wg : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %u = rlx.matmul %b, %wu : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %s = rlx.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  // expected-error-re @+1 {{fusion contract violated: 1 missed patterns{{[\s\S]*}}swiglu operands not sharing their input}}
  %m = rlx.mul %u, %s : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// -----

// Two misses: the count covers both, the error points at the first one.
func.func @two(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  // expected-error-re @+1 {{fusion contract violated: 2 missed patterns{{[\s\S]*}}missed=2}}
  %m1 = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %r1 = rlx.relu %m1 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = rlx.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m2 = rlx.matmul %y, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %r2 = rlx.sigmoid %m2 : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %r1, %r2 : tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// A clean graph passes and is fused.
// CHECK-LABEL: func.func @clean
// CHECK-NEXT:    rlx.fused_matmul_bias_act %x, %w, %b {activation = "silu"}
func.func @clean(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %s = rlx.silu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %s : tensor<2x16xf32>
}
