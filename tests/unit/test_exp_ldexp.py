"""The two f32 exp expansions of `convert-math-to-llvm` (`@__rlx_exp_f32`): exponent bits
with fix-ups (`_exp_f32`) and `llvm.ldexp` scaling (`_exp_f32_ldexp`, the default on
AVX-512 hosts, one `vscalefps`). Both against f64 NumPy over a sweep of f32 bit patterns
of the whole finite range of exp, the denormal results, and the specials (+-inf, NaN,
the overflow and underflow edges), compiled at O3 through the JIT."""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.parser import Parser

from rlx.lowering import convert_math_to_llvm as cm
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.runtime.jit import JitModule, to_llvm_ir

N = 1 << 16


def _src(n: int) -> str:
    return f"""
func.func @f(%a: memref<{n}xf32>, %c: memref<{n}xf32>) {{
  linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}}
    ins(%a : memref<{n}xf32>) outs(%c : memref<{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  }}
  func.return
}}
"""


def _lowered(ldexp: bool, mp: pytest.MonkeyPatch) -> object:
    mp.setattr(cm, "host_has_scalef", lambda: ldexp)
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, _src(N)).parse_module()
    for p in LOOPS_TO_LLVM:
        p.apply(ctx, module)
    return module


def _bits(hi: float, step: int) -> np.ndarray:
    """Every `step`-th f32 in [0, hi) by bit pattern (all binades, subnormals included)."""
    return np.arange(0, np.float32(hi).view(np.uint32), step, dtype=np.uint32).view(np.float32)


def _inputs() -> np.ndarray:
    sweep = np.concatenate([-_bits(110.0, 40009), _bits(100.0, 40009)])
    denormal = np.linspace(-103.98, -87.3, 2000, dtype=np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72283, 88.7229, 89.0, -103.97,
                        -103.98, -104.0, -120.0, 1e30, -1e30, 1e-30], np.float32)  # fmt: skip
    x = np.concatenate([special, denormal, sweep]).astype(np.float32)
    return np.resize(x, N)


CPUS = {
    "host": (None, None),
    "avx2": ("haswell", "+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2"),
    "generic": ("x86-64", ""),
}
"""Targets the expansions are compiled for: the host (AVX-512 here), an AVX2 + FMA CPU and
baseline x86-64 (SSE2, no FMA: the polynomial's multiply-adds round twice); the code of
the last two also runs on this host."""


@pytest.mark.parametrize("cpu", list(CPUS))
@pytest.mark.parametrize("ldexp", [False, True])
def test_exp_f32_expansions_match_f64(
    ldexp: bool, cpu: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if cpu != "host" and platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("x86-64 targets")
    module = _lowered(ldexp, monkeypatch)
    ir = to_llvm_ir(module)
    assert ("llvm.ldexp.f32.i32" in ir) == ldexp
    name, feats = CPUS[cpu]
    jit = JitModule(ir, cpu=name, features=feats)
    x = _inputs()
    buf = np.empty(2 * N * 4 + 128, np.uint8)
    off = (-buf.ctypes.data) % 64
    a = buf[off : off + N * 4].view(np.float32)
    c = buf[off + N * 4 + 64 : off + 2 * N * 4 + 64].view(np.float32)
    a[...] = x
    jit.cfunc("f", None, ctypes.c_void_p, ctypes.c_void_p)(a.ctypes.data, c.ctypes.data)
    with np.errstate(over="ignore"):
        want64 = np.exp(x.astype(np.float64))
        want = want64.astype(np.float32)
    nan = np.isnan(x)
    assert np.isnan(c[nan]).all()
    got, want, want64 = c[~nan], want[~nan], want64[~nan]
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])  # overflow (and exp(inf)) is inf
    fin = ~inf
    tiny = np.finfo(np.float32).tiny
    normal = fin & (want >= tiny)
    ulp = np.spacing(want[normal])
    err = np.abs(got[normal].astype(np.float64) - want64[normal]) / ulp
    assert err.max() < 1.0, (err.max(), x[~nan][normal][err.argmax()])
    sub = fin & (want < tiny)  # denormal results: within one denormal step, 0 below
    assert np.abs(got[sub].astype(np.float64) - want64[sub]).max() <= 2.0**-149
    assert c[x == -np.inf][0] == 0 and c[x == -120][0] == 0 and c[x == -103.98][0] == 0


def test_ldexp_is_the_default_where_the_host_has_avx512() -> None:
    from rlx import host_cpu

    feats = host_cpu.features() or {}
    assert cm.host_has_scalef() == bool(feats.get("avx512f"))
