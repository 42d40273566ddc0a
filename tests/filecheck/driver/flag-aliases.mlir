// Flags named after CompileOptions fields run the pass that implements the field.
// RUN: rlx-opt %s --rng-seed=7 | filecheck %s --check-prefix=RNG
// RUN: rlx-opt %s --dim-binding=batch=2 | filecheck %s --check-prefix=DIMS
// RUN: rlx-opt %s --scan-unroll-max-length=0 | filecheck %s --check-prefix=SCAN
// RUN: rlx-opt --help | filecheck %s --check-prefix=HELP

func.func @main(%x: tensor<?x4xf32> {rlx.dims = ["batch", 4]}) -> (tensor<?x4xf32>, tensor<4xf32>) {
  %r = rlx.rng_uniform : tensor<4xf32>
  %y = rlx.add %x, %r : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return %y, %r : tensor<?x4xf32>, tensor<4xf32>
}

// RNG: builtin.module attributes {rlx.rng_seed = 7 : i64, rlx.rng_backend = "philox"}
// DIMS: func.func @main(%x: tensor<2x4xf32>
// SCAN: rlx.rng_uniform
// HELP: --dim-binding {{.*}}alias of --bind-dims
