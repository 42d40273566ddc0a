// RUN: rlx-opt %s --view-op-graph | filecheck %s
// RUN: rlx-opt %s --view-op-graph -o %t.dot && filecheck %s < %t.dot

// One DOT digraph per function: ops are nodes labelled with their attributes, block
// arguments are nodes, every use is an edge labelled with the value's type.

func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = rlx.softmax %x {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = rlx.relu %s : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK:      digraph "main" {
// CHECK:        [[X:arg[0-9]+]] [shape=ellipse, label="%x"];
// CHECK:        [[S:op[0-9]+]] [label="rlx.softmax\naxis = -1 : i64"];
// CHECK:        [[R:op[0-9]+]] [label="rlx.relu"];
// CHECK:        [[RET:op[0-9]+]] [label="func.return"];
// CHECK:        [[X]] -> [[S]] [label="tensor<2x4xf32>"];
// CHECK:        [[S]] -> [[R]] [label="tensor<2x4xf32>"];
// CHECK:        [[R]] -> [[RET]] [label="tensor<2x4xf32>"];
// CHECK:      }
