// RUN: not rlx-opt %s --bind-dims=batch=0 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not rlx-opt %s --bind-dims=batch 2>&1 | filecheck %s --check-prefix=MALFORMED
// RUN: not rlx-opt %s --bind-dims=batch=3 2>&1 | filecheck %s --check-prefix=CONFLICT

func.func @main(%x: tensor<?x2xf32> {rlx.dims = ["batch", "two"]}, %y: tensor<2x2xf32>) -> tensor<?x2xf32> {
  %z = rlx.add %x, %y : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  func.return %z : tensor<?x2xf32>
}

// ZERO: malformed dim binding 'batch=0'
// MALFORMED: malformed dim binding 'batch': expected NAME=SIZE
// CONFLICT: after binding {'batch': 3}: operands are not broadcast-compatible
