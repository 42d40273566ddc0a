"""The softmax row kernel (integer-key row max, `fast_exp.exp_nonpositive`, the scale by
1 / sum) compiled for three x86-64 targets and run on this host against the reference
interpreter: the host CPU, an AVX2 + FMA CPU (haswell) and baseline x86-64 (SSE2, no FMA),
so that the AVX2 and generic vector code LLVM makes of it is tested on an AVX-512 machine
too. Row lengths 1, primes and lengths that are not multiples of any vector width, with
the special rows of `test_row_kernels` (-inf masks, NaN, +inf, far below the max)."""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest
from test_exp_ldexp import CPUS
from test_row_kernels import _special_rows
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.parser import Parser

import rlx
from rlx.interpreter import run as reference_run
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.runtime.jit import JitModule, to_llvm_ir
from rlx.runtime.llvm_host import HOST_TUNING, host_target

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 targets"
)

ROWS = 12


def _src(n: int, rows: int = ROWS) -> str:
    t = f"tensor<{rows}x{n}xf32>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %y = rlx.softmax %x {{axis = -1 : i64}} : ({t}) -> {t}
  func.return %y : {t}
}}"""


def _ir(src: str) -> str:
    """The module at the `loops` stage, lowered to LLVM IR."""
    ctx = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, rlx.compile(src).ir("loops")).parse_module()
    for p in LOOPS_TO_LLVM:
        p.apply(ctx, module)
    return to_llvm_ir(module)


def _jit(src: str, cpu: str) -> JitModule:
    """The module at the `loops` stage, lowered to LLVM and compiled for `cpu`."""
    name, feats = CPUS[cpu]
    return JitModule(_ir(src), cpu=name, features=feats)


def _aligned(shape: tuple[int, ...]) -> np.ndarray:
    """A 64-byte aligned f32 array (the kernels' output and arena arguments are `align 64`)."""
    size = int(np.prod(shape))
    buf = np.empty(size * 4 + 64, np.uint8)
    off = (-buf.ctypes.data) % 64
    arr = buf[off : off + size * 4].view(np.float32).reshape(shape)
    arr[...] = 7.0
    return arr


@pytest.mark.parametrize("cpu", list(CPUS))
@pytest.mark.parametrize("n", [1, 13, 97])
def test_softmax_kernel_on_each_isa(cpu: str, n: int) -> None:
    src = _src(n)
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((ROWS, n)) * 5).astype(np.float32)
    if n > 1:
        x[: len(_special_rows(n))] = _special_rows(n)
    x[-1, n // 2] = 40.0  # a max in the middle of a row
    (want,) = reference_run(src, [x])
    jit = _jit(src, cpu)
    out, arena = _aligned(x.shape), _aligned((1 << 14,))
    ptr = ctypes.c_void_p
    jit.cfunc("main", None, ptr, ptr, ptr)(x.ctypes.data, out.ctypes.data, arena.ctypes.data)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-8)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    if n > 1:
        assert (out[0, : n // 2] == 0).all()  # masked entries are exactly 0


@pytest.mark.parametrize("cpu", list(CPUS))
def test_exp_nonpositive_through_softmax_on_each_isa(cpu: str) -> None:
    """`fast_exp.exp_nonpositive` over [-87, 0]: softmax of the rows [0, d] is
    [1, e^d] / (1 + e^d), so out[:, 1] / out[:, 0] is e^d up to two roundings; within 2
    ulp of the f64 exp (the polynomial itself: < 0.9 ulp), and exactly 0 below LO."""
    rows = 4096
    d = np.concatenate([-np.geomspace(1e-7, 87.0, rows - 8), [0.0, -87.5, -100.0, -1e30]])
    d = np.concatenate([d, np.zeros(rows - len(d))]).astype(np.float32)
    x = np.stack([np.zeros(rows, np.float32), d], 1)
    out = _aligned(x.shape)
    arena = _aligned((1 << 14,))
    ptr = ctypes.c_void_p
    _jit(_src(2, rows), cpu).cfunc("main", None, ptr, ptr, ptr)(
        x.ctypes.data, out.ctypes.data, arena.ctypes.data
    )
    ok = d >= -87.0
    got = out[ok, 1].astype(np.float64) / out[ok, 0].astype(np.float64)
    want = np.exp(d[ok].astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    err = np.abs(got - want) / ulp
    assert err.max() < 2.0, err.max()  # 1.21 on znver4, haswell and x86-64
    assert (out[~ok, 1] == 0).all() and (out[~ok, 0] == 1).all()


@pytest.mark.parametrize("dtype", ["f64", "f16", "bf16"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_other_types_both_paths(dtype: str, axis: int) -> None:
    """f64 (i64 keys), f16 and bf16 (f32 keys, exp recomputed for the output) on the row
    path (last axis) and the generic path (axis 0), special rows included, through
    `rlx.compile` against the reference interpreter."""
    import ml_dtypes

    np_t = {"f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    x = _special_rows(13).astype(np_t)
    x = x if axis == -1 else np.ascontiguousarray(x.T)
    t = f"tensor<{x.shape[0]}x{x.shape[1]}x{dtype}>"
    src = f"""func.func @main(%x: {t}) -> {t} {{
  %y = rlx.softmax %x {{axis = {axis} : i64}} : ({t}) -> {t}
  func.return %y : {t}
}}"""
    (want,) = reference_run(src, [x])
    (got,) = rlx.compile(src).run(x)
    tol = {"f64": 1e-12, "f16": 1e-3, "bf16": 8e-3}[dtype]  # about one ulp of the output
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * 1e-3)
    np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64))


def test_host_code_uses_the_full_vector_width() -> None:
    """`llvm_host.host_target` lifts the 256-bit cap LLVM's tuning of Intel's AVX-512 cores
    puts on its vectorizers: the softmax row kernel compiled for the host is in zmm
    registers exactly where the host has AVX-512 (with the cap, on Ice Lake: ymm only)."""
    _, feats = host_target()
    wide = "+avx512f" in feats.split(",")
    assert feats.endswith("," + HOST_TUNING) == wide
    assert ("zmm" in _jit(_src(97), "host").asm) == wide
