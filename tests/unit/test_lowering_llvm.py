"""End-to-end tests of the loops -> llvm lowering and the JIT: hand-written memref/linalg IR,
LOOPS_TO_LLVM, llvmlite MCJIT, ctypes calls on NumPy arrays compared with NumPy."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass
from xdsl.utils.exceptions import PassFailedException

from rlx.lowering import get_all_lowering_passes
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.runtime.jit import JitModule, compile_module, to_llvm_ir

P = ctypes.c_void_p
I64 = ctypes.c_int64


def _ctx() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def _lower(src: str, passes: tuple[ModulePass, ...] = LOOPS_TO_LLVM) -> ModuleOp:
    ctx = _ctx()
    module = Parser(ctx, src).parse_module()
    for p in passes:
        p.apply(ctx, module)
        module.verify()
    return module


def _jit(src: str) -> JitModule:
    return compile_module(_lower(src))


def _aligned(shape: tuple[int, ...], dtype: type | np.dtype, fill: object = None) -> np.ndarray:
    """A C-contiguous array whose data is 64-byte aligned (the entry-point contract)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    arr = raw[off : off + n].view(dt).reshape(shape)
    if fill is not None:
        arr[...] = fill
    return arr


def _ptrs(*arrays: np.ndarray) -> list[int]:
    return [a.ctypes.data for a in arrays]


RNG = np.random.default_rng(0)


def _host_has(feature: str) -> bool:
    import llvmlite.binding as llvm_binding

    return bool(llvm_binding.get_host_cpu_features().get(feature, False))


needs_avx2 = pytest.mark.skipif(not _host_has("avx2"), reason="vector checks assume AVX2")


# ---------------------------------------------------------------------------------------


BCAST_ADD = """
func.func @bcast_add(%a: memref<4x8xf32>, %b: memref<8xf32>, %c: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
    ins(%a, %b : memref<4x8xf32>, memref<8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_broadcast_add() -> None:
    jit = _jit(BCAST_ADD)
    a = _aligned((4, 8), np.float32, RNG.standard_normal((4, 8)))
    b = _aligned((8,), np.float32, RNG.standard_normal(8))
    c = _aligned((4, 8), np.float32, 0)
    jit.cfunc("bcast_add", None, P, P, P)(*_ptrs(a, b, c))
    np.testing.assert_array_equal(c, a + b)


def _rowsum_src(m: int, n: int) -> str:
    return f"""
func.func @rowsum(%a: memref<{m}x{n}xf32>, %c: memref<{m}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}}
    ins(%a : memref<{m}x{n}xf32>) outs(%c : memref<{m}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o fastmath<fast> : f32
    linalg.yield %s : f32
  }}
  func.return
}}
"""


def test_rowsum_reduction_fastmath() -> None:
    module = _lower(_rowsum_src(16, 256))
    ir = to_llvm_ir(module)
    assert "fadd fast float" in ir
    jit = JitModule(ir)
    a = _aligned((16, 256), np.float32, RNG.standard_normal((16, 256)))
    c = _aligned((16,), np.float32, 0)
    jit.cfunc("rowsum", None, P, P)(*_ptrs(a, c))
    np.testing.assert_allclose(c, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    if _host_has("avx2"):
        assert "vaddps" in jit.asm and "ymm" in jit.asm


MATMUL = """
func.func @matmul(%a: memref<16x32xf32>, %b: memref<32x24xf32>, %c: memref<16x24xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>,
                                   affine_map<(i, j, k) -> (k, j)>,
                                   affine_map<(i, j, k) -> (i, j)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a, %b : memref<16x32xf32>, memref<32x24xf32>) outs(%c : memref<16x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y fastmath<contract> : f32
    %s = arith.addf %acc, %p fastmath<contract> : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_matmul_loop_nest() -> None:
    jit = _jit(MATMUL)
    a = _aligned((16, 32), np.float32, RNG.standard_normal((16, 32)))
    b = _aligned((32, 24), np.float32, RNG.standard_normal((32, 24)))
    c = _aligned((16, 24), np.float32, 0)
    jit.cfunc("matmul", None, P, P, P)(*_ptrs(a, b, c))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    if _host_has("fma"):
        assert "vfmadd" in jit.asm


def _unary_src(name: str, op: str, n: int, ty: str = "f32") -> str:
    return f"""
func.func @{name}(%a: memref<{n}x{ty}>, %c: memref<{n}x{ty}>) {{
  linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}}
    ins(%a : memref<{n}x{ty}>) outs(%c : memref<{n}x{ty}>) {{
  ^bb0(%x: {ty}, %o: {ty}):
    %y = {op} %x : {ty}
    linalg.yield %y : {ty}
  }}
  func.return
}}
"""


_F32_SPECIAL = [0.0, -0.0, 1e-30, -1e-8, 3e-4, 0.5, -0.9, 1.0, 2.5, -3.99, 4.2, 9.0, -20.0, 88.0]


def _run_unary(op: str, x: np.ndarray, ty: str = "f32") -> np.ndarray:
    dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[ty]
    n = x.size
    jit = _jit(_unary_src("f", op, n, ty))
    a = _aligned((n,), dtype, x)
    c = _aligned((n,), dtype, 0)
    jit.cfunc("f", None, P, P)(*_ptrs(a, c))
    return c


@pytest.mark.parametrize(
    ("op", "ref", "xs", "rtol"),
    [
        ("math.exp", np.exp, np.linspace(-87, 88, 4001), 3e-7),
        ("math.tanh", np.tanh, np.linspace(-12, 12, 4001), 1e-6),
        ("math.erf", np.vectorize(math.erf), np.linspace(-5, 5, 4001), 1e-6),
        ("math.log1p", np.log1p, np.linspace(-0.9, 50, 4001), 1e-6),
        ("math.expm1", np.expm1, np.linspace(-10, 10, 4001), 1e-6),
        ("math.rsqrt", lambda v: 1 / np.sqrt(v), np.linspace(0.01, 100, 4001), 1e-6),
        ("math.sqrt", np.sqrt, np.linspace(0, 100, 4001), 1e-7),
        ("math.log", np.log, np.linspace(0.01, 100, 4001), 1e-6),
        ("math.sin", np.sin, np.linspace(-10, 10, 4001), 1e-5),
        ("math.atan", np.arctan, np.linspace(-10, 10, 4001), 1e-6),
        ("math.roundeven", np.round, np.linspace(-5, 5, 41), 0),
        ("math.absf", np.abs, np.linspace(-5, 5, 41), 0),
    ],
)
def test_unary_math_f32(op: str, ref: object, xs: np.ndarray, rtol: float) -> None:
    x = np.concatenate([xs, _F32_SPECIAL if op in ("math.tanh", "math.erf") else []])
    x = x.astype(np.float32)
    got = _run_unary(op, x)
    want = ref(x.astype(np.float64))  # type: ignore[operator]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30)


def test_exp_f32_extremes() -> None:
    x = np.array([-200.0, -104.0, -95.0, -88.0, 88.7, 89.0, 1000.0, np.inf, -np.inf, np.nan])
    got = _run_unary("math.exp", x.astype(np.float32))
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float32))
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=2e-45)


@needs_avx2
def test_tanh_erf_f32_are_expanded_and_vectorized() -> None:
    for op, bad in (("math.tanh", "tanhf"), ("math.erf", "erff"), ("math.exp", "expf")):
        module = _lower(_unary_src("f", op, 256))
        ir = to_llvm_ir(module)
        assert bad not in ir and "llvm.exp" not in ir
        asm = JitModule(ir).asm
        assert "ymm" in asm or "zmm" in asm, op  # 256- or 512-bit vectors (AVX2 or AVX-512 host)
        assert "call" not in asm, op


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("math.erf", np.vectorize(math.erf)),
        ("math.tanh", np.tanh),
        ("math.exp", np.exp),
        ("math.expm1", np.expm1),
    ],
)
def test_unary_math_f64(op: str, ref: object) -> None:
    x = np.linspace(-6, 6, 1001)
    got = _run_unary(op, x, "f64")
    np.testing.assert_allclose(got, ref(x), rtol=1e-13, atol=1e-300)  # type: ignore[operator]


F16_KERNEL = """
func.func @f16(%a: memref<64xf16>, %b: memref<64xf16>, %c: memref<64xf16>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
    ins(%a, %b : memref<64xf16>, memref<64xf16>) outs(%c : memref<64xf16>) {
  ^bb0(%x: f16, %y: f16, %o: f16):
    %s = arith.mulf %x, %y : f16
    %e = math.exp %s : f16
    %w = arith.extf %e : f16 to f32
    %t = math.tanh %w : f32
    %r = arith.truncf %t : f32 to f16
    %m = arith.maximumf %r, %x : f16
    linalg.yield %m : f16
  }
  func.return
}
"""


def test_f16_computation() -> None:
    jit = _jit(F16_KERNEL)
    a = _aligned((64,), np.float16, RNG.uniform(-2, 2, 64))
    b = _aligned((64,), np.float16, RNG.uniform(-2, 2, 64))
    c = _aligned((64,), np.float16, 0)
    jit.cfunc("f16", None, P, P, P)(*_ptrs(a, b, c))
    s = (a * b).astype(np.float16)
    e = np.exp(s.astype(np.float32)).astype(np.float16)
    want = np.maximum(np.tanh(e.astype(np.float32)).astype(np.float16), a)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3)


def test_bf16_exp() -> None:
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    src = _unary_src("f", "math.exp", 32, "bf16")
    jit = _jit(src)
    x = np.linspace(-4, 4, 32).astype(bf16)
    a = _aligned((32,), bf16, x)
    c = _aligned((32,), bf16, 0)
    jit.cfunc("f", None, P, P)(*_ptrs(a, c))
    want = np.exp(x.astype(np.float32)).astype(bf16)
    np.testing.assert_array_equal(c.astype(np.float32), want.astype(np.float32))


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
    module = _lower(GLOBAL_CONST)
    ir = to_llvm_ir(module)
    assert "@w = private constant [24 x i8]" in ir
    jit = JitModule(ir)
    a = _aligned((2, 3), np.float32, RNG.standard_normal((2, 3)))
    c = _aligned((2, 3), np.float32, 0)
    d = _aligned((3,), np.int32, 0)
    jit.cfunc("add_const", None, P, P, P)(*_ptrs(a, c, d))
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
    module = _lower(ARENA)
    ir = to_llvm_ir(module)
    assert "alloca i8, i64 1024, align 64" in ir  # small, local: on the stack
    assert "@aligned_alloc(i64 64, i64 32768)" in ir and "@free(" in ir
    jit = JitModule(ir)
    a = _aligned((8,), np.float32, RNG.standard_normal(8))
    out = _aligned((8,), np.float32, 0)
    jit.cfunc("arena", None, P, P)(*_ptrs(a, out))
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
    jit = _jit(SUBVIEW)
    a = _aligned((6, 8), np.float32, RNG.standard_normal((6, 8)))
    c = _aligned((2, 3), np.float32, 0)
    jit.cfunc("subview", None, P, P)(*_ptrs(a, c))
    np.testing.assert_array_equal(c, -a[1:5:2, 2:5])


INT_OPS = """
func.func @ints(%x: memref<16xi64>, %f: memref<16xf32>, %o: memref<16x10xi64>,
                %of: memref<16x2xf32>, %o8: memref<16xi8>, %k: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %three = arith.constant 3 : i64
  %i8c = arith.constant 100 : i8
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xi64>
    %fv = memref.load %f[%i] : memref<16xf32>
    %fd = arith.floordivsi %v, %three : i64
    %cd = arith.ceildivsi %v, %three : i64
    %r = arith.remsi %v, %three : i64
    %mx = arith.maxsi %v, %k : i64
    %mn = arith.minui %v, %k : i64
    %sh = arith.shrsi %v, %three : i64
    %ii = arith.index_cast %i : index to i64
    %cmp = arith.cmpi sgt, %v, %ii : i64
    %sel = arith.select %cmp, %v, %ii : i64
    %fi = arith.fptosi %fv : f32 to i32
    %fie = arith.extsi %fi : i32 to i64
    %xo = arith.xori %v, %ii : i64
    memref.store %fd, %o[%i, %c0] : memref<16x10xi64>
    memref.store %cd, %o[%i, %c1] : memref<16x10xi64>
    memref.store %r, %o[%i, %c2] : memref<16x10xi64>
    memref.store %mx, %o[%i, %c3] : memref<16x10xi64>
    memref.store %mn, %o[%i, %c4] : memref<16x10xi64>
    memref.store %sh, %o[%i, %c5] : memref<16x10xi64>
    memref.store %sel, %o[%i, %c6] : memref<16x10xi64>
    memref.store %fie, %o[%i, %c7] : memref<16x10xi64>
    memref.store %xo, %o[%i, %c8] : memref<16x10xi64>
    %vi = arith.index_cast %v : i64 to index
    %cd2 = arith.ceildivui %vi, %c4 : index
    %cd2i = arith.index_cast %cd2 : index to i64
    memref.store %cd2i, %o[%i, %c9] : memref<16x10xi64>
    %u = arith.uitofp %v : i64 to f32
    %s = arith.sitofp %v : i64 to f32
    memref.store %u, %of[%i, %c0] : memref<16x2xf32>
    memref.store %s, %of[%i, %c1] : memref<16x2xf32>
    %t = arith.trunci %v : i64 to i8
    %t2 = arith.addi %t, %i8c : i8
    memref.store %t2, %o8[%i] : memref<16xi8>
  }
  func.return
}
"""


def test_integer_ops() -> None:
    jit = _jit(INT_OPS)
    x = _aligned((16,), np.int64, [-7, -6, -1, 0, 1, 2, 3, 5, 6, 100, -100, 41, 9, 8, 7, 2**63 - 1])
    f = _aligned((16,), np.float32, RNG.uniform(-100, 100, 16))
    o = _aligned((16, 10), np.int64, 0)
    of = _aligned((16, 2), np.float32, 0)
    o8 = _aligned((16,), np.int8, 0)
    fn = jit.cfunc("ints", None, P, P, P, P, P, I64)
    fn(*_ptrs(x, f, o, of, o8), 2)
    xs = x.tolist()
    idx = list(range(16))
    assert o[:, 0].tolist() == [v // 3 for v in xs]
    assert o[:, 1].tolist() == [-((-v) // 3) for v in xs]
    assert o[:, 2].tolist() == [abs(v) % 3 * (1 if v >= 0 else -1) for v in xs]
    assert o[:, 3].tolist() == [max(v, 2) for v in xs]
    assert o[:, 4].tolist() == [v if 0 <= v < 2 else 2 for v in xs]
    assert o[:, 5].tolist() == [v >> 3 for v in xs]
    assert o[:, 6].tolist() == [v if v > i else i for v, i in zip(xs, idx, strict=True)]
    assert o[:, 7].tolist() == [int(v) for v in f.tolist()]
    assert o[:, 8].tolist() == [v ^ i for v, i in zip(xs, idx, strict=True)]
    assert o[:, 9].tolist() == [
        -(-(v % 2**64) // 4) % 2**64 - (2**64 if -(-(v % 2**64) // 4) >= 2**63 else 0) for v in xs
    ]
    np.testing.assert_array_equal(
        of[:, 0], np.array([v % 2**64 for v in xs], np.float64).astype(np.float32)
    )
    np.testing.assert_array_equal(of[:, 1], x.astype(np.float32))
    np.testing.assert_array_equal(o8, (x.astype(np.int8) + np.int8(100)).astype(np.int8))


CALLS = """
func.func private @helper(%a: memref<4xf32>, %i: index) -> (f32, index) {
  %v = memref.load %a[%i] : memref<4xf32>
  %c1 = arith.constant 1 : index
  %j = arith.addi %i, %c1 : index
  func.return %v, %j : f32, index
}
func.func @caller(%a: memref<4xf32>, %k: index) -> f32 {
  %v, %j = func.call @helper(%a, %k) : (memref<4xf32>, index) -> (f32, index)
  %w = memref.load %a[%j] : memref<4xf32>
  %s = arith.addf %v, %w : f32
  func.return %s : f32
}
"""


def test_calls_and_scalar_results() -> None:
    ir = to_llvm_ir(_lower(CALLS))
    assert "define internal { float, i64 } @helper" in ir
    jit = JitModule(ir)
    a = _aligned((4,), np.float32, [1.0, 2.0, 4.0, 8.0])
    fn = jit.cfunc("caller", ctypes.c_float, P, I64)
    assert fn(a.ctypes.data, 1) == 6.0
    assert fn(a.ctypes.data, 2) == 12.0


@pytest.mark.parametrize(
    ("src", "message"),
    [
        (
            "func.func @f(%a: memref<?xf32>) {\n func.return\n}",
            "static shape",
        ),
        (
            "func.func @f(%a: memref<4xf32>, %n: index) {\n %b = memref.alloc(%n) : memref<?xf32>\n"
            " func.return\n}",
            "dynamic sizes",
        ),
        (
            "func.func @f(%a: i32, %b: i32) -> i32 {\n %c = math.ipowi %a, %b : i32\n"
            " func.return %c : i32\n}",
            "math.ipowi",
        ),
    ],
)
def test_unsupported_input_raises(src: str, message: str) -> None:
    with pytest.raises(PassFailedException, match=message):
        _lower(src)


def test_individual_passes_compose() -> None:
    """The five passes run one at a time give the same LLVM IR as convert-to-llvm."""
    passes = get_all_lowering_passes()
    staged = (
        LOOPS_TO_LLVM[0],
        LOOPS_TO_LLVM[1],
        passes["convert-memref-to-llvm"]()(),
        passes["convert-math-to-llvm"]()(),
        passes["convert-arith-to-llvm"]()(),
        passes["convert-cf-to-llvm"]()(),
        passes["convert-func-to-llvm"]()(),
        ReconcileUnrealizedCastsPass(),
    )
    src = MATMUL + F16_KERNEL
    one = to_llvm_ir(_lower(src))
    many = to_llvm_ir(_lower(src, staged))
    assert one == many


def test_registry_and_pass_docstrings() -> None:
    passes = get_all_lowering_passes()
    assert set(passes) >= {
        "convert-arith-to-llvm",
        "convert-math-to-llvm",
        "convert-func-to-llvm",
        "convert-cf-to-llvm",
        "convert-memref-to-llvm",
        "convert-to-llvm",
    }
    for name, factory in passes.items():
        cls = factory()
        assert cls.name == name
        assert cls.__doc__ and cls.__doc__.strip().splitlines()[0]


def test_jit_module_api() -> None:
    jit = _jit(BCAST_ADD)
    assert jit.address("bcast_add") > 0
    with pytest.raises(KeyError):
        jit.address("missing")
    assert "define void @bcast_add" in jit.llvm_ir
    assert "bcast_add:" in jit.asm


def test_concurrent_calls() -> None:
    """Compiled functions can run on several threads at once (ctypes drops the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    fn = _jit(_rowsum_src(64, 512)).cfunc("rowsum", None, P, P)

    def work(seed: int) -> float:
        rng = np.random.default_rng(seed)
        a = _aligned((64, 512), np.float32, rng.standard_normal((64, 512)))
        c = _aligned((64,), np.float32, 0)
        for _ in range(20):
            c[:] = 0
            fn(*_ptrs(a, c))
        return float(np.abs(c - a.astype(np.float64).sum(1)).max())

    with ThreadPoolExecutor(4) as pool:
        assert max(pool.map(work, range(8))) < 1e-3


MIXED = """
func.func @mixed(%h: memref<8xf16>, %b: memref<8xbf16>, %m: memref<8xi1>, %o: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %hc = arith.constant 1.5 : f16
  %bc = arith.constant -2.25 : bf16
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %h[%i] : memref<8xf16>
    %y = memref.load %b[%i] : memref<8xbf16>
    %k = memref.load %m[%i] : memref<8xi1>
    %x2 = arith.mulf %x, %hc : f16
    %y2 = arith.addf %y, %bc : bf16
    %xf = arith.extf %x2 : f16 to f32
    %yf = arith.extf %y2 : bf16 to f32
    %s = arith.addf %xf, %yf : f32
    %r = arith.select %k, %s, %zero : f32
    memref.store %r, %o[%i] : memref<8xf32>
  }
  func.return
}
"""


def test_f16_bf16_i1_buffers_and_constants() -> None:
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    jit = _jit(MIXED)
    h = _aligned((8,), np.float16, np.arange(8) - 3.5)
    b = _aligned((8,), bf16, (np.arange(8) * 0.75).astype(bf16))
    m = _aligned((8,), np.bool_, [True, False] * 4)
    o = _aligned((8,), np.float32, 0)
    jit.cfunc("mixed", None, P, P, P, P)(*_ptrs(h, b, m, o))
    x2 = (h * np.float16(1.5)).astype(np.float32)
    y2 = (b.astype(np.float32) - 2.25).astype(bf16).astype(np.float32)
    np.testing.assert_array_equal(o, np.where(m, x2 + y2, 0).astype(np.float32))


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
    jit = _jit(STATE)
    state = np.ctypeslib.as_array((ctypes.c_float * 4).from_address(jit.global_address("state")))
    assert state.tolist() == [0, 0, 0, 0]
    jit.cfunc("put", None, ctypes.c_float)(3.5)
    assert jit.cfunc("get", ctypes.c_float)() == 3.5
    assert state.tolist() == [0, 0, 3.5, 0]


AFFINE = """
func.func @affine(%x: memref<19xi64>, %o: memref<19x4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c19 = arith.constant 19 : index
  scf.for %i = %c0 to %c19 step %c1 {
    %v = memref.load %x[%i] : memref<19xi64>
    %d = arith.index_cast %v : i64 to index
    %a = affine.apply affine_map<(d0, d1)[s0] -> (d0 * 3 + d1 - s0)> (%d, %i)[%c2]
    %m = affine.apply affine_map<(d0) -> (d0 mod 4)> (%d)
    %f = affine.apply affine_map<(d0) -> (d0 floordiv 4)> (%d)
    %e = affine.apply affine_map<(d0) -> (d0 ceildiv 4)> (%d)
    %ai = arith.index_cast %a : index to i64
    %mi = arith.index_cast %m : index to i64
    %fi = arith.index_cast %f : index to i64
    %ei = arith.index_cast %e : index to i64
    memref.store %ai, %o[%i, %c0] : memref<19x4xi64>
    memref.store %mi, %o[%i, %c1] : memref<19x4xi64>
    memref.store %fi, %o[%i, %c2] : memref<19x4xi64>
    memref.store %ei, %o[%i, %c3] : memref<19x4xi64>
  }
  func.return
}
"""


def test_affine_apply() -> None:
    """convert-linalg-to-loops leaves affine.apply for non-identity maps; it is lowered."""
    jit = _jit(AFFINE)
    x = _aligned((19,), np.int64, np.arange(-9, 10))
    o = _aligned((19, 4), np.int64, 0)
    jit.cfunc("affine", None, P, P)(*_ptrs(x, o))
    xs = x.tolist()
    assert o[:, 0].tolist() == [v * 3 + i - 2 for i, v in enumerate(xs)]
    assert o[:, 1].tolist() == [v % 4 for v in xs]
    assert o[:, 2].tolist() == [v // 4 for v in xs]
    assert o[:, 3].tolist() == [-(-v // 4) for v in xs]


BROADCAST_COLUMN = """
func.func @bcast_col(%a: memref<4x1xf32>, %b: memref<3xf32>, %c: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, 0)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
    ins(%a, %b : memref<4x1xf32>, memref<3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_broadcast_with_constant_index_map() -> None:
    jit = _jit(BROADCAST_COLUMN)
    a = _aligned((4, 1), np.float32, RNG.standard_normal((4, 1)))
    b = _aligned((3,), np.float32, RNG.standard_normal(3))
    c = _aligned((4, 3), np.float32, 0)
    jit.cfunc("bcast_col", None, P, P, P)(*_ptrs(a, b, c))
    np.testing.assert_array_equal(c, a + b)


def test_bf16_literals_round_once_from_f64() -> None:
    """1 + 2^-8 + 2^-30 lies just above the midpoint of bf16 1.0 (0x3F80) and 1 + 2^-7
    (0x3F81): rounded once it is 0x3F81; through f32 (which drops the 2^-30) it would tie
    to even, 0x3F80."""
    from xdsl.dialects.builtin import BFloat16Type

    from rlx.lowering.llvm_ir import _float_literal

    assert _float_literal(1.0 + 2**-8 + 2**-30, BFloat16Type()) == "0xR3F81"
    assert _float_literal(1.0 + 2**-8, BFloat16Type()) == "0xR3F80"  # an exact tie: even
    assert _float_literal(float("nan"), BFloat16Type()) == "0xR7FC0"
