// The shipped examples after --fusion --dce contain the expected fused ops, and
// --verbose prints every pass with its op counts before/after.
// RUN: rlx-opt %S/../../../examples/mlp.mlir --fusion --dce | filecheck %s --check-prefix=MLP
// RUN: rlx-opt %S/../../../examples/transformer_block.mlir --fusion --dce | filecheck %s --check-prefix=BLOCK
// RUN: rlx-opt %S/../../../examples/mlp.mlir --fusion --dce --verbose 2>&1 >/dev/null | filecheck %s --check-prefix=VERBOSE

// MLP-COUNT-2: rlx.fused_matmul_bias_act
// MLP-NOT: rlx.matmul
// MLP: rlx.softmax

// BLOCK: rlx.layer_norm
// q/k/v: one GEMM with N = 3 * 64 (shared_input_matmul on the biased projections)
// BLOCK: rlx.concat %wq, %wk, %wv
// BLOCK: rlx.concat %bq, %bk, %bv
// BLOCK: rlx.fused_matmul_bias_act {{.*}}{activation = "none"} : {{.*}} -> tensor<16x192xf32>
// BLOCK-COUNT-3: rlx.slice
// BLOCK: rlx.attention
// BLOCK: rlx.fused_matmul_bias_act {{.*}}{activation = "none"}
// BLOCK: rlx.layer_norm
// BLOCK: rlx.fused_matmul_bias_act {{.*}}{activation = "gelu"}
// BLOCK-NOT: rlx.matmul

// VERBOSE: [rlx] pass fusion: [[BEFORE:[0-9]+]] -> [[AFTER:[0-9]+]] ops, {{.*}} ms
// VERBOSE-NEXT: [rlx] pass dce: [[AFTER]] -> {{[0-9]+}} ops, {{.*}} ms
