// RUN: not rlx-opt %s -p 'split-graph{max-calls=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not rlx-opt %s --split-graph=-3 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not rlx-opt %s -p 'split-graph{max-calls=many}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not rlx-opt %s -p 'split-graph{max-cals=8}' 2>&1 | filecheck %s --check-prefix=NAME

func.func private @k(memref<4xf32>) -> ()

func.func @main(%x: memref<4xf32>) {
  func.call @k(%x) : (memref<4xf32>) -> ()
  func.return
}

// ZERO: split-graph-invalid.mlir: error: split-graph: max-calls must be at least 1, got 0
// NEG: split-graph-invalid.mlir: error: split-graph: max-calls must be at least 1, got -3
// TYPE: rlx-opt: error: invalid options for pass 'split-graph': Incompatible types: given ('many',), expected int
// NAME: rlx-opt: error: unknown option 'max-cals' for pass 'split-graph' (options: max-calls); did you mean 'max-calls'?
