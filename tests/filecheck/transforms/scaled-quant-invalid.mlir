// RUN: not rlx-opt %s --scaled-quant 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not rlx-opt %s --scaled-quant=f9e4m4 2>&1 | filecheck %s --check-prefix=FORMAT
// RUN: not rlx-opt %s --scaled-quant=f8e4m3,layout=tile 2>&1 | filecheck %s --check-prefix=LAYOUT
// RUN: not rlx-opt %s --scaled-quant=f8e4m3,f8e4m3,f8e4m3 2>&1 | filecheck %s --check-prefix=MALFORMED
// RUN: not rlx-opt %s --scaled-quant=fp8 2>&1 | filecheck %s --check-prefix=PRESET

func.func @main(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %y = rlx.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// EMPTY: error: scaled-quant needs formats: a preset (fp8-e4m3 = f8e4m3/f8e4m3/per_tensor, mxfp8 = f8e4m3/f8e4m3/mx) or 'LHS[,RHS][,layout=LAYOUT]'
// FORMAT: error: scaled-quant formats 'f9e4m4': unknown low-precision format 'f9e4m4'; accepted: f8e4m3, f8e5m2, f8e4m3fnuz, f8e5m2fnuz, f6e2m3, f6e3m2, f4e2m1, or a custom 'fNeXmY'
// LAYOUT: error: scaled-quant formats 'f8e4m3,layout=tile': unknown scale layout 'tile'; accepted:
// MALFORMED: error: malformed scaled-quant formats 'f8e4m3,f8e4m3,f8e4m3'; expected a preset
// PRESET: error: scaled-quant formats 'fp8': unknown low-precision format 'fp8'; accepted: {{.*}}; the option takes a preset (fp8-e4m3, mxfp8) or 'LHS[,RHS][,layout=LAYOUT]'
