"""The loops -> llvm lowering of math and narrow float types, end to end (LOOPS_TO_LLVM, the JIT,
ctypes calls compared with NumPy): unary math in f32 / f64 (expansions, vectorization),
f16 and bf16 computation, buffers and literals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from llvm_jit import F16_KERNEL, RNG, P, aligned, jit_module, lower, needs_avx2, ptrs

from rlx.runtime.jit import JitModule, to_llvm_ir


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
    jit = jit_module(_unary_src("f", op, n, ty))
    a = aligned((n,), dtype, x)
    c = aligned((n,), dtype, 0)
    jit.cfunc("f", None, P, P)(*ptrs(a, c))
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
        module = lower(_unary_src("f", op, 256))
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


def test_f16_computation() -> None:
    jit = jit_module(F16_KERNEL)
    a = aligned((64,), np.float16, RNG.uniform(-2, 2, 64))
    b = aligned((64,), np.float16, RNG.uniform(-2, 2, 64))
    c = aligned((64,), np.float16, 0)
    jit.cfunc("f16", None, P, P, P)(*ptrs(a, b, c))
    s = (a * b).astype(np.float16)
    e = np.exp(s.astype(np.float32)).astype(np.float16)
    want = np.maximum(np.tanh(e.astype(np.float32)).astype(np.float16), a)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3)


def test_bf16_exp() -> None:
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    src = _unary_src("f", "math.exp", 32, "bf16")
    jit = jit_module(src)
    x = np.linspace(-4, 4, 32).astype(bf16)
    a = aligned((32,), bf16, x)
    c = aligned((32,), bf16, 0)
    jit.cfunc("f", None, P, P)(*ptrs(a, c))
    want = np.exp(x.astype(np.float32)).astype(bf16)
    np.testing.assert_array_equal(c.astype(np.float32), want.astype(np.float32))


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
    jit = jit_module(MIXED)
    h = aligned((8,), np.float16, np.arange(8) - 3.5)
    b = aligned((8,), bf16, (np.arange(8) * 0.75).astype(bf16))
    m = aligned((8,), np.bool_, [True, False] * 4)
    o = aligned((8,), np.float32, 0)
    jit.cfunc("mixed", None, P, P, P, P)(*ptrs(h, b, m, o))
    x2 = (h * np.float16(1.5)).astype(np.float32)
    y2 = (b.astype(np.float32) - 2.25).astype(bf16).astype(np.float32)
    np.testing.assert_array_equal(o, np.where(m, x2 + y2, 0).astype(np.float32))


def test_bf16_literals_round_once_from_f64() -> None:
    """1 + 2^-8 + 2^-30 lies just above the midpoint of bf16 1.0 (0x3F80) and 1 + 2^-7
    (0x3F81): rounded once it is 0x3F81; through f32 (which drops the 2^-30) it would tie
    to even, 0x3F80."""
    from xdsl.dialects.builtin import BFloat16Type

    from rlx.lowering.llvm_ir_spelling import float_literal

    assert float_literal(1.0 + 2**-8 + 2**-30, BFloat16Type()) == "0xR3F81"
    assert float_literal(1.0 + 2**-8, BFloat16Type()) == "0xR3F80"  # an exact tie: even
    assert float_literal(float("nan"), BFloat16Type()) == "0xR7FC0"
