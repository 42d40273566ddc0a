// RUN: rlx-opt --version | filecheck %s
// RUN: rlx-opt -v | filecheck %s

// CHECK: rlx-opt {{[0-9]+\.[0-9]+\.[0-9]+.*}} (xDSL {{[0-9]+\.[0-9]+\.[0-9]+.*}})
