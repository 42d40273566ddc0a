// RUN: rlx-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: not rlx-opt %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: "mydialect.op"() {a = 1 : i64} : () -> ()
// ERR:   allow-unregistered-dialect.mlir:6:15: error: Operation mydialect.op is not registered
"mydialect.op"() {a = 1 : i64} : () -> ()
