// RUN: rlx-opt %s --pass-pipeline='builtin.module(fusion{swiglu=false},dce)' | filecheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(fusion{swiglu=false}),dce)' | filecheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(fusion{swiglu=false},dce)' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(fusion' 2>&1 | filecheck %s --check-prefix=UNBALANCED
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(nope)' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not rlx-opt %s --pass-pipeline='builtin.module(dce)' -p dce 2>&1 | filecheck %s --check-prefix=BOTH

// --pass-pipeline takes MLIR's textual pipeline; op anchors (builtin.module, func.func)
// are flattened, since rlx passes are module passes. --dump-pass-pipeline prints it back.

// CHECK-LABEL: func.func @swiglu
// CHECK-NEXT:    %[[M:.*]] = rlx.fused_matmul_bias_act
// CHECK-NOT:     rlx.fused_swiglu
func.func @swiglu(%x: tensor<4x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %mm = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %a = rlx.add %mm, %b : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %dead = rlx.relu %a : (tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %a : tensor<4x32xf32>
}

// DUMP:       Pass Manager with 2 passes:
// DUMP-NEXT:  builtin.module(fusion{swiglu=false},dce)
// UNBALANCED: rlx-opt: error: invalid pass pipeline 'builtin.module(fusion': unbalanced brackets or quotes
// UNKNOWN:    rlx-opt: error: unknown pass 'nope'
// BOTH:       rlx-opt: error: -p/--passes cannot be combined with --pass-pipeline
