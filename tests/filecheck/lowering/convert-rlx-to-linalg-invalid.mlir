// RUN: not rlx-opt %s -p convert-rlx-to-linalg 2>&1 | filecheck %s

// Every dimension must be static: a dynamic one names the value and points to bind-dims.

func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = rlx.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// CHECK: convert-rlx-to-linalg: %x in @dynamic has dynamic shape tensor<?x4xf32>; run `bind-dims` (dim_binding) to give every dimension a static size first
