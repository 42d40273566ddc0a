"""End-to-end tests of the loops -> llvm lowering and the JIT: hand-written memref/linalg IR,
LOOPS_TO_LLVM, llvmlite MCJIT, ctypes calls on NumPy arrays compared with NumPy. Loops,
reductions, integer ops, calls, the passes and the JIT API here; math and narrow floats in
`test_lowering_llvm_math.py`, memory in `test_lowering_llvm_memory.py` (helpers: `llvm_jit`)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llvm_jit import F16_KERNEL, I64, RNG, P, aligned, host_has, jit_module, lower, ptrs
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass
from xdsl.utils.exceptions import PassFailedException

from rlx.lowering import get_all_lowering_passes
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.runtime.jit import JitModule, to_llvm_ir

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
    jit = jit_module(BCAST_ADD)
    a = aligned((4, 8), np.float32, RNG.standard_normal((4, 8)))
    b = aligned((8,), np.float32, RNG.standard_normal(8))
    c = aligned((4, 8), np.float32, 0)
    jit.cfunc("bcast_add", None, P, P, P)(*ptrs(a, b, c))
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
    module = lower(_rowsum_src(16, 256))
    ir = to_llvm_ir(module)
    assert "fadd fast float" in ir
    jit = JitModule(ir)
    a = aligned((16, 256), np.float32, RNG.standard_normal((16, 256)))
    c = aligned((16,), np.float32, 0)
    jit.cfunc("rowsum", None, P, P)(*ptrs(a, c))
    np.testing.assert_allclose(c, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
    if host_has("avx2"):
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
    jit = jit_module(MATMUL)
    a = aligned((16, 32), np.float32, RNG.standard_normal((16, 32)))
    b = aligned((32, 24), np.float32, RNG.standard_normal((32, 24)))
    c = aligned((16, 24), np.float32, 0)
    jit.cfunc("matmul", None, P, P, P)(*ptrs(a, b, c))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    if host_has("fma"):
        assert "vfmadd" in jit.asm


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
    jit = jit_module(INT_OPS)
    x = aligned((16,), np.int64, [-7, -6, -1, 0, 1, 2, 3, 5, 6, 100, -100, 41, 9, 8, 7, 2**63 - 1])
    f = aligned((16,), np.float32, RNG.uniform(-100, 100, 16))
    o = aligned((16, 10), np.int64, 0)
    of = aligned((16, 2), np.float32, 0)
    o8 = aligned((16,), np.int8, 0)
    fn = jit.cfunc("ints", None, P, P, P, P, P, I64)
    fn(*ptrs(x, f, o, of, o8), 2)
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
    ir = to_llvm_ir(lower(CALLS))
    assert "define internal { float, i64 } @helper" in ir
    jit = JitModule(ir)
    a = aligned((4,), np.float32, [1.0, 2.0, 4.0, 8.0])
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
        lower(src)


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
    one = to_llvm_ir(lower(src))
    many = to_llvm_ir(lower(src, staged))
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
    jit = jit_module(BCAST_ADD)
    assert jit.address("bcast_add") > 0
    with pytest.raises(KeyError):
        jit.address("missing")
    assert "define void @bcast_add" in jit.llvm_ir
    assert "bcast_add:" in jit.asm


def test_concurrent_calls() -> None:
    """Compiled functions can run on several threads at once (ctypes drops the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    fn = jit_module(_rowsum_src(64, 512)).cfunc("rowsum", None, P, P)

    def work(seed: int) -> float:
        rng = np.random.default_rng(seed)
        a = aligned((64, 512), np.float32, rng.standard_normal((64, 512)))
        c = aligned((64,), np.float32, 0)
        for _ in range(20):
            c[:] = 0
            fn(*ptrs(a, c))
        return float(np.abs(c - a.astype(np.float64).sum(1)).max())

    with ThreadPoolExecutor(4) as pool:
        assert max(pool.map(work, range(8))) < 1e-3


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
    jit = jit_module(AFFINE)
    x = aligned((19,), np.int64, np.arange(-9, 10))
    o = aligned((19, 4), np.int64, 0)
    jit.cfunc("affine", None, P, P)(*ptrs(x, o))
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
    jit = jit_module(BROADCAST_COLUMN)
    a = aligned((4, 1), np.float32, RNG.standard_normal((4, 1)))
    b = aligned((3,), np.float32, RNG.standard_normal(3))
    c = aligned((4, 3), np.float32, 0)
    jit.cfunc("bcast_col", None, P, P, P)(*ptrs(a, b, c))
    np.testing.assert_array_equal(c, a + b)
