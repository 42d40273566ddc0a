// RUN: rlx-opt %s --cse --mlir-timing 2>&1 >/dev/null | filecheck %s

// --mlir-timing is mlir-opt's name of --time-passes.

func.func @f() {
  func.return
}

// CHECK:      ... Execution time report ...
// CHECK:      ({{ *[0-9.]+}}%)  cse
// CHECK:      (100.0%)  Total
