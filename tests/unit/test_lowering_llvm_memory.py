"""The loops -> llvm lowering of memory, end to end (LOOPS_TO_LLVM, the JIT, ctypes calls
compared with NumPy): memref globals (constant and mutable), alloc / view / copy in an
arena, strided subviews."""

from __future__ import annotations

import ctypes

import numpy as np
from llvm_jit import RNG, P, aligned, jit_module, lower, ptrs

from rlx.runtime.jit import JitModule, to_llvm_ir

GLOBAL_CONST = """
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2x3xf32>,
  initial_value = dense<[[1.0, 2.0, 3.0], [4.5, -5.0, 6.25]]> : tensor<2x3xf32>,
  constant}> : () -> ()
"memref.global"() <{sym_name = "s", sym_visibility = "private", type = memref<3xi32>,
  initial_value = dense<7> : tensor<3xi32>, constant}> : () -> ()
func.func @add_const(%a: memref<2x3xf32>, %c: memref<2x3xf32>, %d: memref<3xi32>) {
  %w = memref.get_global @w : memref<2x3xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
    ins(%a, %w : memref<2x3xf32>, memref<2x3xf32>) outs(%c : memref<2x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  %s = memref.get_global @s : memref<3xi32>
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %v = memref.load %s[%i1] : memref<3xi32>
  memref.store %v, %d[%i2] : memref<3xi32>
  func.return
}
"""


def test_memref_global_constant() -> None:
    module = lower(GLOBAL_CONST)
    ir = to_llvm_ir(module)
    assert "@w = private constant [24 x i8]" in ir
    jit = JitModule(ir)
    a = aligned((2, 3), np.float32, RNG.standard_normal((2, 3)))
    c = aligned((2, 3), np.float32, 0)
    d = aligned((3,), np.int32, 0)
    jit.cfunc("add_const", None, P, P, P)(*ptrs(a, c, d))
    np.testing.assert_array_equal(c, a + np.array([[1, 2, 3], [4.5, -5, 6.25]], np.float32))
    assert d.tolist() == [0, 0, 7]


ARENA = """
func.func @arena(%a: memref<8xf32>, %out: memref<8xf32>) {
  %arena = memref.alloc() : memref<1024xi8>
  %off0 = arith.constant 0 : index
  %off1 = arith.constant 64 : index
  %t0 = memref.view %arena[%off0][] : memref<1024xi8> to memref<8xf32>
  %t1 = memref.view %arena[%off1][] : memref<1024xi8> to memref<2x4xf32>
  %big = memref.alloc() : memref<8192xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %t0[%i] : memref<8xf32>
    memref.store %y, %big[%i] : memref<8192xf32>
  }
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %k0 = arith.muli %i, %c4 : index
      %k = arith.addi %k0, %j : index
      %x = memref.load %t0[%k] : memref<8xf32>
      %z = memref.load %big[%k] : memref<8192xf32>
      %y = arith.addf %x, %z : f32
      memref.store %y, %t1[%i, %j] : memref<2x4xf32>
    }
  }
  %flat = memref.collapse_shape %t1 [[0, 1]] : memref<2x4xf32> into memref<8xf32>
  "memref.copy"(%flat, %out) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %big : memref<8192xf32>
  memref.dealloc %arena : memref<1024xi8>
  func.return
}
"""


def test_alloc_view_copy() -> None:
    module = lower(ARENA)
    ir = to_llvm_ir(module)
    assert "alloca i8, i64 1024, align 64" in ir  # small, local: on the stack
    assert "@aligned_alloc(i64 64, i64 32768)" in ir and "@free(" in ir
    jit = JitModule(ir)
    a = aligned((8,), np.float32, RNG.standard_normal(8))
    out = aligned((8,), np.float32, 0)
    jit.cfunc("arena", None, P, P)(*ptrs(a, out))
    np.testing.assert_array_equal(out, 4 * a)


SUBVIEW = """
func.func @subview(%a: memref<6x8xf32>, %c: memref<2x3xf32>) {
  %s = memref.subview %a[1, 2] [2, 3] [2, 1]
      : memref<6x8xf32> to memref<2x3xf32, strided<[16, 1], offset: 10>>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
    ins(%s : memref<2x3xf32, strided<[16, 1], offset: 10>>) outs(%c : memref<2x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  func.return
}
"""


def test_strided_subview() -> None:
    jit = jit_module(SUBVIEW)
    a = aligned((6, 8), np.float32, RNG.standard_normal((6, 8)))
    c = aligned((2, 3), np.float32, 0)
    jit.cfunc("subview", None, P, P)(*ptrs(a, c))
    np.testing.assert_array_equal(c, -a[1:5:2, 2:5])


STATE = """
"memref.global"() <{sym_name = "state", sym_visibility = "public", type = memref<4xf32>,
  initial_value}> : () -> ()
func.func @put(%x: f32) {
  %g = memref.get_global @state : memref<4xf32>
  %c2 = arith.constant 2 : index
  memref.store %x, %g[%c2] : memref<4xf32>
  func.return
}
func.func @get() -> f32 {
  %g = memref.get_global @state : memref<4xf32>
  %c2 = arith.constant 2 : index
  %v = memref.load %g[%c2] : memref<4xf32>
  func.return %v : f32
}
"""


def test_mutable_global() -> None:
    jit = jit_module(STATE)
    state = np.ctypeslib.as_array((ctypes.c_float * 4).from_address(jit.global_address("state")))
    assert state.tolist() == [0, 0, 0, 0]
    jit.cfunc("put", None, ctypes.c_float)(3.5)
    assert jit.cfunc("get", ctypes.c_float)() == 3.5
    assert state.tolist() == [0, 0, 3.5, 0]
