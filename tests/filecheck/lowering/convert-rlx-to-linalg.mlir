// RUN: rlx-opt %s -p convert-rlx-to-linalg --split-input-file | filecheck %s

// Elementwise ops call a shape-generic worker with a table of sizes, offsets and strides:
// broadcasting is explicit in the strides (a size-1 dim broadcast against a larger one and
// a missing leading dim step by 0). Elementwise ops only allow `contract`.

func.func @bcast_add(%a: tensor<4x1xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %c = rlx.add %a, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %c : tensor<4x3xf32>
}

// CHECK:       "memref.global"() <{sym_name = "[[T:rlx_table[0-9]+]]", type = memref<11xi64>, initial_value = dense<[4, 3, 0, 1, 0, 0, 0, 1, 0, 3, 1]> : tensor<11xi64>
// CHECK-LABEL: func.func @bcast_add(
// CHECK-SAME:    %a: memref<4x1xf32> {rlx.kind = "input", rlx.name = "arg0"},
// CHECK-SAME:    %b: memref<3xf32> {rlx.kind = "input", rlx.name = "arg1"},
// CHECK-SAME:    %out0: memref<4x3xf32> {rlx.kind = "output", rlx.name = "out0"}) {
// CHECK-NEXT:    func.call @[[K:rlx_k[0-9]+]](%a, %b, %out0) : (memref<4x1xf32>, memref<3xf32>, memref<4x3xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK:       func.func private @[[W:rlx_k[0-9]+]](%{{.*}}: memref<11xi64> {llvm.noalias}, %{{.*}}: memref<2147483647xf32> {llvm.noalias}, %{{.*}}: memref<2147483647xf32> {llvm.noalias}, %{{.*}}: memref<2147483647xf32> {llvm.noalias}) attributes {rlx.kernel = "rlx.add (any shape)"}
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK:       func.func private @[[K]](%{{.*}}: memref<4x1xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<4x3xf32>) attributes {rlx.kernel = "rlx.add"}
// CHECK:         %[[TV:.*]] = memref.get_global @[[T]] : memref<11xi64>
// CHECK-NEXT:    func.call @[[W]](%[[TV]], %{{.*}}, %{{.*}}, %{{.*}})

// -----

// A last-axis float sum: one row at a time, the sum carried through the inner loop
// (scf.for iter_args, starting at the identity) and stored once per row; it may be
// reassociated.

func.func @reduce(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %s = rlx.reduce %x {kind = "sum", axes = array<i64: -1>} : (tensor<8x16xf32>) -> tensor<8xf32>
  func.return %s : tensor<8xf32>
}

// CHECK-LABEL: func.func @reduce(
// CHECK:       func.func private @rlx_k0(
// CHECK-SAME:    %[[X:.*]]: memref<8x16xf32>, %[[O:.*]]: memref<8xf32>) attributes {rlx.kernel = "rlx.reduce"}
// CHECK-DAG:     %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [8, 16], strides: [16, 1]
// CHECK-DAG:     %[[OV:.*]] = memref.reinterpret_cast %[[O]] to offset: [0], sizes: [8], strides: [1]
// CHECK-DAG:     %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      %[[S:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[A:.*]] = %[[Z]]) -> (f32) {
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[XV]][%[[I]], %[[J]]] : memref<8x16xf32>
// CHECK-NEXT:        %[[N:.*]] = arith.addf %[[A]], %[[V]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:        scf.yield %[[N]] : f32
// CHECK:           memref.store %[[S]], %[[OV]][%[[I]]] : memref<8xf32>
// CHECK-NOT:     linalg.fill

// -----

// matmul: iteration (batch, i, k, j) with j innermost; the size-1 batch dim of the lhs
// broadcasts (maps to 0), the rank-2 rhs has no batch dim.

func.func @matmul(%a: tensor<1x5x7xf32>, %b: tensor<7x3xf32>, %c: tensor<4x7x3xf32>) -> tensor<4x5x3xf32> {
  %m = rlx.matmul %a, %c : (tensor<1x5x7xf32>, tensor<4x7x3xf32>) -> tensor<4x5x3xf32>
  func.return %m : tensor<4x5x3xf32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK:       func.func private @rlx_k0(
// CHECK-SAME:    attributes {rlx.kernel = "rlx.matmul"}
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (0, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK:         %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK-NEXT:    arith.addf %{{.*}}, %[[P]] fastmath<reassoc,contract> : f32

// -----

// Structurally identical ops share one kernel (two calls, one definition); a kernel with
// several call sites is marked noinline so LLVM compiles it once.

func.func @dedup(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = rlx.tanh %x : (tensor<16xf32>) -> tensor<16xf32>
  %b = rlx.tanh %a : (tensor<16xf32>) -> tensor<16xf32>
  %c = rlx.exp %b : (tensor<16xf32>) -> tensor<16xf32>
  func.return %c : tensor<16xf32>
}

// CHECK-LABEL: func.func @dedup(
// CHECK:         %[[A:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT:    func.call @[[T:rlx_k[0-9]+]](%x, %[[A]])
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT:    func.call @[[T]](%[[A]], %[[B]])
// CHECK-NEXT:    func.call @[[E:rlx_k[0-9]+]](%[[B]], %out0)
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK-NEXT:    func.return
// CHECK:       func.func private @[[T]](%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>) attributes {rlx.kernel = "rlx.tanh", passthrough = ["noinline"]}
// CHECK:       func.func private @[[E]](%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>) attributes {rlx.kernel = "rlx.exp"}
// CHECK-NOT:     rlx.kernel

// -----

// ABI: inputs (rlx.name kept), then one argument per distinct param in order of first
// appearance, then one output per result. A returned input is copied; a value returned
// twice is computed into the first output and copied into the second.

func.func @abi(%x: tensor<2x3xf32> {rlx.name = "tokens"}) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = rlx.param "layer.w" : tensor<2x3xf32>
  %b = rlx.param "layer.b" : tensor<3xf32>
  %w2 = rlx.param "layer.w" : tensor<2x3xf32>
  %y = rlx.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %z = rlx.add %y, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %v = rlx.add %z, %w2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %v, %x, %v : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @abi(
// CHECK-SAME:    %x: memref<2x3xf32> {rlx.kind = "input", rlx.name = "tokens"},
// CHECK-SAME:    %layer_w: memref<2x3xf32> {rlx.kind = "param", rlx.name = "layer.w"},
// CHECK-SAME:    %layer_b: memref<3xf32> {rlx.kind = "param", rlx.name = "layer.b"},
// CHECK-SAME:    %out0: memref<2x3xf32> {rlx.kind = "output", rlx.name = "out0"},
// CHECK-SAME:    %out1: memref<2x3xf32> {rlx.kind = "output", rlx.name = "out1"},
// CHECK-SAME:    %out2: memref<2x3xf32> {rlx.kind = "output", rlx.name = "out2"}) {
// CHECK:         func.call @{{.*}}(%{{.*}}, %layer_w, %out0)
// CHECK-NEXT:    func.call @[[COPY:rlx_k[0-9]+]](%x, %out1)
// CHECK-NEXT:    func.call @[[COPY]](%out0, %out2)
// CHECK:         func.return
// CHECK-NOT:     -> (memref

// -----

// Constants become private memref.globals (splats a fill kernel); reshape is a view.

func.func @consts(%x: tensor<2x2xf32>) -> tensor<4xf32> {
  %c = rlx.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %y = rlx.add %x, %c : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %r = rlx.reshape %y : (tensor<2x2xf32>) -> tensor<4xf32>
  %h = rlx.constant dense<0.5> : tensor<4xf32>
  %o = rlx.mul %r, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %o : tensor<4xf32>
}

// CHECK:       "memref.global"() <{sym_name = "[[G:rlx_const[0-9]+]]", type = memref<2x2xf32>, initial_value = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>, sym_visibility = "private", constant, alignment = 64 : i64}>
// CHECK-LABEL: func.func @consts(
// CHECK:         %[[C:.*]] = memref.get_global @[[G]] : memref<2x2xf32>
// CHECK:         func.call @{{.*}}(%x, %[[C]], %[[Y:.*]]) :
// CHECK-NEXT:    %[[R:.*]] = memref.collapse_shape %[[Y]] {{\[}}[0 : i64, 1 : i64]] : memref<2x2xf32> into memref<4xf32>
// CHECK:         func.call @[[FILL:rlx_k[0-9]+]](%[[H:.*]]) : (memref<4xf32>) -> ()
// CHECK-NEXT:    func.call @{{.*}}(%[[R]], %[[H]], %out0)
// CHECK:       func.func private @[[FILL]](%{{.*}}: memref<4xf32>) attributes {rlx.kernel = "rlx.constant"}
// CHECK:         linalg.fill


// -----

// Softmax over the last axis, row after row (as MLAS): the row max from two integer
// reductions of the bits carried in registers (maxsi: the max float if any sign bit is
// clear; minui: else), one vector op each, not maximumf's six vector ops nor maxnumf, whose
// vectorized reduction llvmlite 0.50's LLVM mis-compiles; the pick turned back into a
// float), then exp(x - max) written once while
// the row sum is carried by the inline non-positive exp (no math.exp: bit-built 2^n,
// x < -87 selected to exactly 0), then the scale by 1 / sum.

func.func @softmax(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {
  %s = rlx.softmax %x {axis = -1 : i64} : (tensor<3x7xf32>) -> tensor<3x7xf32>
  func.return %s : tensor<3x7xf32>
}

// CHECK-LABEL: func.func private @{{.*}} attributes {rlx.kernel = "rlx.softmax"}
// CHECK-NOT:     linalg.generic
// CHECK:         scf.for %[[R:.*]] = {{.*}} {
// CHECK:           %[[SMAX:.*]], %[[UMIN:.*]] = scf.for {{.*}} iter_args({{.*}}) -> (i32, i32) {
// CHECK:             arith.bitcast {{.*}} : f32 to i32
// CHECK-NEXT:        arith.maxsi
// CHECK-NEXT:        arith.minui
// CHECK:           arith.cmpi sge, %[[SMAX]]
// CHECK:           arith.select {{.*}}, %[[SMAX]], %[[UMIN]]
// CHECK:           %[[M:.*]] = arith.bitcast {{.*}} : i32 to f32
// CHECK:           %[[S:.*]] = scf.for {{.*}} -> (f32) {
// CHECK-NOT:         math.exp
// CHECK:             arith.subf {{.*}}, %[[M]]
// CHECK:             arith.shli
// CHECK:             arith.cmpf olt, {{.*}}, %{{.*}} : f32
// CHECK:             arith.select
// CHECK:             memref.store
// CHECK:             arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK:           arith.divf {{.*}}, %[[S]]
// CHECK:           scf.for
// CHECK:             arith.mulf
// CHECK:             memref.store

// -----

// Softmax over another axis: the same passes as linalg.generic nests over the whole tensor,
// the max keys, maxes and sums in scratch rows.

func.func @softmax_axis0(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {
  %s = rlx.softmax %x {axis = 0 : i64} : (tensor<3x7xf32>) -> tensor<3x7xf32>
  func.return %s : tensor<3x7xf32>
}

// CHECK-LABEL: func.func private @{{.*}} attributes {rlx.kernel = "rlx.softmax"}
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-SAME:      outs({{.*}} : memref<7xi32>)
// CHECK:           arith.maxsi
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK:           arith.bitcast {{.*}} : i32 to f32
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK-NOT:       math.exp
// CHECK:           arith.shli
// CHECK:           linalg.yield
// CHECK:         arith.divf
// CHECK:         arith.mulf

// -----

// An elementwise region's float adds / subs / muls without flags get `contract` (the flag the
// unfused ops carry): x * a + b may become one FMA. Ops with flags keep theirs; divf, math
// ops and compares are left as they are.

func.func @region_contract(%x: tensor<4x8xf32>, %a: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = rlx.elementwise_region %x, %a : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: f32, %q: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %q : f32
    %f = arith.subf %s, %p fastmath<fast> : f32
    %d = arith.divf %f, %q : f32
    %e = math.exp %d : f32
    rlx.yield %e : f32
  }
  func.return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func private @{{.*}} attributes {rlx.kernel = "rlx.elementwise_region (any shape)"}
// CHECK:         arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT:    arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT:    arith.subf %{{.*}}, %{{.*}} fastmath<fast> : f32
// CHECK-NEXT:    arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    math.exp %{{.*}} : f32
