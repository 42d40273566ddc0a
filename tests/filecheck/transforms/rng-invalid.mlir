// RUN: not rlx-opt %s --rng='backend=ort' 2>&1 | filecheck %s --check-prefix=BACKEND
// RUN: not rlx-opt %s --rng=-1 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not rlx-opt %s --rng=lots 2>&1 | filecheck %s --check-prefix=NOTINT

func.func @main() -> tensor<4xf32> {
  %a = rlx.rng_uniform : tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// BACKEND: error: unknown rng backend 'ort'; expected one of philox, zero
// NEGATIVE: error: rng seed must be in [0, 2**64), got -1
// NOTINT: error: --rng: invalid value 'lots' for option 'seed' of pass 'rng'
