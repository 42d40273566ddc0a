// RUN: rlx-opt %s -p 'split-graph{max-calls=2}' --split-input-file | filecheck %s
// RUN: rlx-opt %s --split-graph=2 --split-input-file | filecheck %s
// RUN: rlx-opt %s -p split-graph --split-input-file | filecheck %s --check-prefix=DEFAULT

// Five kernel calls, at most two per part: three private noinline parts taking the graph
// function's arguments (their rlx.* attributes, not llvm.* promises), called in order.
// A view or constant of an earlier part is rematerialised with its defining chain.

"memref.global"() <{sym_name = "cst", type = memref<4xf32>, initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, sym_visibility = "private", constant}> : () -> ()
func.func private @k1(memref<4xf32>, memref<4xf32>) -> ()
func.func private @k2(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
func.func private @k3(memref<2x2xf32>, memref<4xf32>, memref<4xf32>) -> ()
func.func private @half(memref<2xf32>, memref<2xf32>) -> ()

func.func @main(%x: memref<4xf32> {rlx.kind = "input", rlx.name = "x"}, %out0: memref<4xf32> {rlx.kind = "output", rlx.name = "out0"}, %arena: memref<64xi8> {rlx.kind = "arena", rlx.name = "arena", llvm.noalias}) attributes {rlx.arena_bytes = 64 : i64} {
  %c0 = arith.constant 0 : index
  %a = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
  func.call @k1(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %c16 = arith.constant 16 : index
  %b = memref.view %arena[%c16][] : memref<64xi8> to memref<4xf32>
  %w = memref.get_global @cst : memref<4xf32>
  func.call @k2(%a, %w, %b) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %c32 = arith.constant 32 : index
  %c = memref.view %arena[%c32][] : memref<64xi8> to memref<4xf32>
  %c2 = memref.expand_shape %c [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  func.call @k1(%b, %c) : (memref<4xf32>, memref<4xf32>) -> ()
  "rlx_rt.parallel_call"(%c, %a) <{callee = @half, tasks = 2 : i64, strides = array<i64: 8, 8>, max_threads = 1 : i64}> : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k3(%c2, %w, %out0) : (memref<2x2xf32>, memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME:      %x: memref<4xf32> {rlx.kind = "input", rlx.name = "x"}, %out0: memref<4xf32> {rlx.kind = "output", rlx.name = "out0"},
// CHECK-SAME:      %arena: memref<64xi8> {rlx.kind = "arena", rlx.name = "arena", llvm.noalias})
// CHECK-SAME:      attributes {rlx.arena_bytes = 64 : i64} {
// CHECK-NEXT:    func.call @main_part0(%x, %out0, %arena) : (memref<4xf32>, memref<4xf32>, memref<64xi8>) -> ()
// CHECK-NEXT:    func.call @main_part1(%x, %out0, %arena)
// CHECK-NEXT:    func.call @main_part2(%x, %out0, %arena)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @main_part0(
// CHECK-SAME:      %x: memref<4xf32> {rlx.kind = "input", rlx.name = "x"}, %out0: memref<4xf32> {rlx.kind = "output", rlx.name = "out0"},
// CHECK-SAME:      %arena: memref<64xi8> {rlx.kind = "arena", rlx.name = "arena"})
// CHECK-SAME:      attributes {passthrough = ["noinline"]} {
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %arena[%[[C0]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @k1(%x, %[[A]])
// CHECK-NEXT:    %[[W:.*]] = memref.get_global @cst : memref<4xf32>
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %arena[%[[C16]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @k2(%[[A]], %[[W]], %[[B]])
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @main_part1({{.*}}) attributes {passthrough = ["noinline"]} {
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %arena[%[[C16]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %arena[%[[C32]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    func.call @k1(%[[B]], %[[C]])
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %arena[%[[C0]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    "rlx_rt.parallel_call"(%[[C]], %[[A]]) <{callee = @half
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @main_part2({{.*}}) attributes {passthrough = ["noinline"]} {
// CHECK-NEXT:    %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[C:.*]] = memref.view %arena[%[[C32]]][] : memref<64xi8> to memref<4xf32>
// CHECK-NEXT:    %[[C2:.*]] = memref.expand_shape %[[C]] {{\[\[}}0 : i64, 1 : i64]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
// CHECK-NEXT:    %[[W:.*]] = memref.get_global @cst : memref<4xf32>
// CHECK-NEXT:    func.call @k3(%[[C2]], %[[W]], %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// Five calls are below the default limit (256).
// DEFAULT-NOT:   @main_part
// DEFAULT-LABEL: func.func @main(
// DEFAULT-NEXT:    arith.constant 0 : index
// DEFAULT-NOT:     @main_part
// DEFAULT:         func.call @k3
// DEFAULT-NEXT:    func.return
// DEFAULT-NEXT:  }
// DEFAULT-NEXT: }

// -----

// A loop counts its calls and moves whole; views it uses from an earlier part are
// rematerialised in front of it. An existing symbol is not reused for a part.

func.func private @k(memref<4xf32>, memref<4xf32>) -> ()
func.func private @g_part0() -> ()

func.func @g(%x: memref<4xf32>, %arena: memref<32xi8>) {
  %c0 = arith.constant 0 : index
  %a = memref.view %arena[%c0][] : memref<32xi8> to memref<4xf32>
  func.call @k(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %c16 = arith.constant 16 : index
  %b = memref.view %arena[%c16][] : memref<32xi8> to memref<4xf32>
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {
    func.call @k(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
    func.call @k(%b, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  }
  func.return
}

// CHECK-LABEL: func.func @g(%x: memref<4xf32>, %arena: memref<32xi8>) {
// CHECK-NEXT:    func.call @g_part0_1(%x, %arena) : (memref<4xf32>, memref<32xi8>) -> ()
// CHECK-NEXT:    func.call @g_part1(%x, %arena)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @g_part0_1(%x: memref<4xf32>, %arena: memref<32xi8>) attributes {passthrough = ["noinline"]} {
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    memref.view
// CHECK-NEXT:    func.call @k(
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @g_part1(%x: memref<4xf32>, %arena: memref<32xi8>) attributes {passthrough = ["noinline"]} {
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %arena[%[[C0]]][] : memref<32xi8> to memref<4xf32>
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[B:.*]] = memref.view %arena[%[[C16]]][] : memref<32xi8> to memref<4xf32>
// CHECK-NEXT:    scf.for %{{.*}} = %[[C0]] to %[[C3]] step %[[C1]] {
// CHECK-NEXT:      func.call @k(%[[A]], %[[B]])
// CHECK-NEXT:      func.call @k(%[[B]], %[[A]])
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// -----

// Not split: at most max-calls calls; a private function; an allocation plan-memory did
// not place; a value crossing a part boundary that is not a view or a constant.

func.func private @k(memref<4xf32>, memref<4xf32>) -> ()
func.func private @make() -> memref<4xf32>

func.func @few(%x: memref<4xf32>, %y: memref<4xf32>) {
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%y, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

func.func private @helper(%x: memref<4xf32>, %y: memref<4xf32>) {
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%y, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

func.func @unplanned(%x: memref<4xf32>, %y: memref<4xf32>) {
  %t = memref.alloc() : memref<4xf32>
  func.call @k(%x, %t) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%t, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%y, %t) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %t : memref<4xf32>
  func.return
}

func.func @result(%x: memref<4xf32>, %y: memref<4xf32>) {
  %r = func.call @make() : () -> memref<4xf32>
  func.call @k(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%y, %x) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @k(%r, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK-NOT:   _part
// CHECK-LABEL: func.func @few(
// CHECK-NEXT:    func.call @k(%x, %y)
// CHECK-NEXT:    func.call @k(%y, %x)
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @helper(
// CHECK-COUNT-3: func.call @k(
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @unplanned(
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() : memref<4xf32>
// CHECK-COUNT-3: func.call @k(
// CHECK-NEXT:    memref.dealloc %[[T]]
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @result(
// CHECK-NEXT:    %[[R:.*]] = func.call @make()
// CHECK-NEXT:    func.call @k(%x, %y)
// CHECK-NEXT:    func.call @k(%y, %x)
// CHECK-NEXT:    func.call @k(%[[R]], %y)
// CHECK-NEXT:    func.return
// CHECK-NOT:   _part
