// RUN: rlx-opt %s --rng | filecheck %s --check-prefix=DEFAULT
// RUN: rlx-opt %s --rng=7 | filecheck %s --check-prefix=SEED
// RUN: rlx-opt %s --rng='seed=7 backend=zero' | filecheck %s --check-prefix=ZERO
// RUN: rlx-opt %s -p 'rng{seed=18446744073709551615}' | filecheck %s --check-prefix=MAX
// RUN: rlx-opt %s -p cse | filecheck %s --check-prefix=CSE

// The pass only records the configuration; the random ops are unchanged.
func.func @main() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
  %b = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
  %c = rlx.rng_normal {seed_offset = 2 : i64} : tensor<4xf32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// DEFAULT: builtin.module attributes {rlx.rng_seed = 42 : i64, rlx.rng_backend = "philox"} {
// DEFAULT:   rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
// SEED:    builtin.module attributes {rlx.rng_seed = 7 : i64, rlx.rng_backend = "philox"} {
// ZERO:    builtin.module attributes {rlx.rng_seed = 7 : i64, rlx.rng_backend = "zero"} {
// ZERO:      %a = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
// The u64 seed is stored as its i64 bit pattern.
// MAX:     builtin.module attributes {rlx.rng_seed = -1 : i64, rlx.rng_backend = "philox"} {

// CSE never merges two rng ops, even identical ones (allocation-like effect).
// CSE-LABEL: func.func @main
// CSE-NEXT:    %a = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
// CSE-NEXT:    %b = rlx.rng_uniform {seed_offset = 1 : i64} : tensor<4xf32>
// CSE-NEXT:    %c = rlx.rng_normal {seed_offset = 2 : i64} : tensor<4xf32>
// CSE-NEXT:    func.return %a, %b, %c
