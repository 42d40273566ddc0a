// RUN: rlx-opt %s -p convert-rlx-to-linalg | filecheck %s
// RUN: rlx-opt %s --lower-to-llvm --emit=llvm-ir | filecheck %s --check-prefix=IR

// The innermost loop of an elementwise kernel whose body computes an expanded math
// function (here sigmoid's exp of -|x|) asks LLVM's loop vectorizer for an interleave
// count of 2 (`rlx.interleave`, rlx/lowering/loop_hints.py); a kernel of plain arithmetic
// (the add) is left to LLVM's own choice. The hint reaches the LLVM IR as !llvm.loop
// metadata on that loop's back edge only.
func.func @main(%x: tensor<4x37xf32>, %y: tensor<4x37xf32>) -> (tensor<4x37xf32>, tensor<4x37xf32>) {
  %0 = rlx.sigmoid %x : (tensor<4x37xf32>) -> tensor<4x37xf32>
  %1 = rlx.add %x, %y : (tensor<4x37xf32>, tensor<4x37xf32>) -> tensor<4x37xf32>
  func.return %0, %1 : tensor<4x37xf32>, tensor<4x37xf32>
}

// CHECK:       func.func private @{{.*}} attributes {rlx.kernel = "rlx.sigmoid (any shape)"} {
// CHECK:         scf.for
// CHECK:           %[[A:.*]] = math.absf %{{.*}} : f32
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[A]] : f32
// CHECK-NEXT:      %{{.*}} = math.exp %[[N]] : f32
// CHECK:         } {rlx.interleave = 2 : i64}
// CHECK:       func.func private @{{.*}} attributes {rlx.kernel = "rlx.add (any shape)"} {
// CHECK-NOT:     rlx.interleave
// CHECK:         func.return

// IR:          call float @__rlx_exp_nonpositive_f32
// IR:          br label %{{.*}}, !llvm.loop ![[L:[0-9]+]]
// IR-NOT:      !llvm.loop
// IR:          ![[L]] = distinct !{![[L]], ![[C:[0-9]+]]}
// IR-NEXT:     ![[C]] = !{!"llvm.loop.interleave.count", i32 2}
