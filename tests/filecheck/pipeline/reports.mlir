// RUN: rlx-opt %s --fusion --fusion-report -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSED
// RUN: rlx-opt %s --fusion --fusion-report --lower-to-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSED
// RUN: env RLX_FUSION_REPORT=1 rlx-opt %s --fusion --lower-to-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSED
// RUN: rlx-opt %s --fusion-report --lower-to-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=UNFUSED
// RUN: not rlx-opt %s --fusion --assert-fusion-clean 2>&1 | filecheck %s --check-prefix=CLEAN
// RUN: not rlx-opt %s --assert-fusion-clean --lower-to-llvm 2>&1 | filecheck %s --check-prefix=CLEAN-NOFUSION
// RUN: rlx-opt %s --kernel-dispatch=common --dispatch-report --lower-to-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=DISPATCH
// RUN: rlx-opt %s --dispatch-report -o /dev/null 2>&1 | filecheck %s --check-prefix=DISPATCH-NONE

// Graph reports of rlx-opt: they compare the module before the pipeline with the module
// just before lowering (--lower-to-llvm), and go to stderr.

func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %w2: tensor<16x4xf32>) -> tensor<2x4xf32> {
  %mm = rlx.matmul %x, %w : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = rlx.add %mm, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %h = rlx.gelu %a : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %d = rlx.matmul %h, %w2 : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %o = rlx.tanh %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %o : tensor<2x4xf32>
}

// FUSED:      fusion report:
// FUSED-NEXT:   nodes=9→7 matmul=2→1 fused_mm_act=1 fused_swiglu=0 elementwise_region=0 attention=0 missed=1
// FUSED-NEXT:   fused: fused_matmul_bias_act=1
// FUSED-NEXT:   missed patterns:
// FUSED-NEXT:     matmul_bias_act @ {{.*}}reports.mlir:17:3 (rlx.matmul) — matmul's single user is not an add
// FUSED-NOT:  fusion report

// Without a fusion pass, the report describes the graph as it is.
// UNFUSED:      fusion report:
// UNFUSED-NEXT:   nodes=9→9 matmul=2→2 fused_mm_act=0 fused_swiglu=0 elementwise_region=0 attention=0 missed=2
// UNFUSED-NEXT:   missed patterns:
// UNFUSED-NEXT:     matmul_bias_act @ {{.*}}reports.mlir:14:3 (rlx.matmul) — matmul + bias left unfused
// UNFUSED-NEXT:     matmul_bias_act @ {{.*}}reports.mlir:17:3 (rlx.matmul) — matmul's single user is not an add

// CLEAN:      reports.mlir:17:3: error: fusion contract violated: 1 missed patterns
// CLEAN-NEXT: fusion report:

// CLEAN-NOFUSION:      reports.mlir:14:3: error: fusion contract violated: 2 missed patterns
// CLEAN-NOFUSION-NEXT: fusion report:

// DISPATCH:      rlx dispatch report — backend "cpu", policy common, supported_ops claim=0
// DISPATCH:        common-ir lowering (claim the kind in supported_ops for the native fast path):
// DISPATCH-NEXT:     - gelu
// DISPATCH:        common-ir:
// DISPATCH-NEXT:     - gelu ×1 op logical
// DISPATCH-NEXT:   compile-ready: yes

// DISPATCH-NONE:      rlx dispatch report — backend "cpu", policy prefer-native, supported_ops claim=0
// DISPATCH-NONE:        native:
// DISPATCH-NONE-NEXT:     - add ×1 op
// DISPATCH-NONE-NEXT:     - gelu ×1 op
// DISPATCH-NONE-NEXT:     - matmul ×2 ops
// DISPATCH-NONE-NEXT:     - tanh ×1 op
// DISPATCH-NONE-NEXT:   compile-ready: yes
