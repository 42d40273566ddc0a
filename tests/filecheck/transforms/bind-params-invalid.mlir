// RUN: python -c "import numpy as np; np.savez('%t.npz', w=np.zeros((3, 2), np.float32))"
// RUN: python -c "import numpy as np; np.savez('%t.int.npz', w=np.zeros((2, 3), np.int32))"
// RUN: not rlx-opt %s --bind-params=%t.npz 2>&1 | filecheck %s --check-prefix=SHAPE
// RUN: not rlx-opt %s --bind-params=%t.int.npz 2>&1 | filecheck %s --check-prefix=DTYPE
// RUN: not rlx-opt %s --bind-params=%t.missing.npz 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not rlx-opt %s --bind-params 2>&1 | filecheck %s --check-prefix=NOPATH

func.func @main() -> tensor<2x3xf32> {
  %w = rlx.param "w" : tensor<2x3xf32>
  func.return %w : tensor<2x3xf32>
}

// SHAPE: param 'w' has shape [2, 3], the binding has shape [3, 2]
// DTYPE: param 'w' is f32, the binding is int32
// MISSING: weight file not found
// NOPATH: bind-params needs a weight file
