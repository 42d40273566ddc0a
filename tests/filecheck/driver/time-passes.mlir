// RUN: rlx-opt %s --cse --canonicalize --time-passes 2>&1 >/dev/null | filecheck %s

// --time-passes prints an mlir-opt-like wall-time report to stderr.

func.func @f() {
  func.return
}

// CHECK:      ... Execution time report ...
// CHECK:      Total Execution Time: {{[0-9.]+}} seconds
// CHECK:      ----Wall Time----  ----Name----
// CHECK:      ({{ *[0-9.]+}}%)  parse
// CHECK:      ({{ *[0-9.]+}}%)  cse
// CHECK:      ({{ *[0-9.]+}}%)  canonicalize
// CHECK:      (100.0%)  Total
