"""The three forms of the cheap exp for x <= 0 give the same bits: the scalar one of softmax
and flash attention (`fast_exp.exp_nonpositive`, arith ops that LLVM's loop vectorizer
widens), the vector one of the conv epilogues' sigmoid / silu (`gemm.vector_act.
exp_nonpositive`, explicit `vector<8 x f32>` llvm ops) and `math.exp` of `-|x|` as
`convert-math-to-llvm` expands it (`@__rlx_exp_nonpositive_f32`: the same function on
scalar llvm values; the logistic formula's form). All are built into one function, lowered to LLVM and
compiled for the host, an AVX2 + FMA CPU and baseline x86-64 (no FMA: every `llvm.fmuladd`
is a multiply and an add there, in both forms alike), then run on [-100, 0], the specials
(+-0, -inf, NaN, the cut-off at -87, denormal arguments) and every binade near 0; also
checked against the f64 exp (< 1 ulp on the normal range, 2 without FMA; 0 below -87)."""

from __future__ import annotations

import ctypes
import platform

import numpy as np
import pytest
from test_exp_ldexp import CPUS
from test_softmax_isa import _aligned
from xdsl.context import Context
from xdsl.dialects import arith, func, get_all_dialects, llvm, math, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, VectorType, f32, i64
from xdsl.ir import Block, Region

from rlx.lowering.gemm import vector_act
from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.lowering.rlx_to_linalg import fast_exp
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
from rlx.runtime.jit import JitModule, to_llvm_ir

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 targets"
)

N = 1 << 14
LANES = 8


def _module() -> ModuleOp:
    """@f(x, scalar_out, vector_out, math_out): the three forms over N elements."""
    mt = MemRefType(f32, [N])
    block = Block(arg_types=[mt, mt, mt, mt])
    x, s_out, v_out, m_out = block.args
    kb = KernelBuilder(block)
    with kb.loop(N) as i:
        kb.store(fast_exp.exp_nonpositive(kb, kb.load(x, [i])), s_out, [i])
    with kb.loop(N) as i:
        minus_abs = kb.v(arith.NegfOp(kb.unary(math.AbsFOp, kb.load(x, [i]))))
        kb.store(kb.unary(math.ExpOp, minus_abs), m_out, [i])
    vt = VectorType(f32, [LANES])

    def ptr(mem: object, i: object) -> object:
        addr = kb.v(memref.ExtractAlignedPointerAsIndexOp.get(mem))
        p = kb.v(llvm.IntToPtrOp(kb.convert(addr, i64)))
        return kb.v(llvm.GEPOp(p, [llvm.GEP_USE_SSA_VAL], f32, ssa_indices=[kb.convert(i, i64)]))

    with kb.loop(N, 0, LANES) as i:
        xv = kb.v(llvm.LoadOp(ptr(x, i), vt, alignment=4))
        kb.add(llvm.StoreOp(vector_act.exp_nonpositive(kb, xv), ptr(v_out, i), alignment=4))
    kb.finish()
    fn = func.FuncOp("f", ([mt, mt, mt, mt], []), Region(block))
    return ModuleOp([fn])


def _inputs() -> np.ndarray:
    tiny = -np.geomspace(1e-38, 1e-3, 3000)
    special = [0.0, -0.0, -np.inf, np.nan, -87.0, -86.99, -87.01, -88.7, -1e30, -1e-40, -1e-45,
               -101.5, -103.0, -103.9, -103.99, -104.01, -110.0]  # fmt: skip
    sweep = np.linspace(-100.0, 0.0, N - len(tiny) - len(special))
    return np.concatenate([special, tiny, sweep]).astype(np.float32)


@pytest.mark.parametrize("cpu", list(CPUS))
def test_scalar_vector_and_math_exp_nonpositive_agree_bitwise(cpu: str) -> None:
    ctx = Context(allow_unregistered=True)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    module = _module()
    for p in LOOPS_TO_LLVM:
        p.apply(ctx, module)
    ir = to_llvm_ir(module)
    assert "llvm.fmuladd" in ir
    name, feats = CPUS[cpu]
    jit = JitModule(ir, cpu=name, features=feats)
    assert "@__rlx_exp_nonpositive_f32" in ir
    x, s, v, m = (_aligned((N,)) for _ in range(4))  # the arguments are `align 64`
    x[...] = _inputs()
    ptr = ctypes.c_void_p
    jit.cfunc("f", None, ptr, ptr, ptr, ptr)(x.ctypes.data, s.ctypes.data, v.ctypes.data,
                                             m.ctypes.data)  # fmt: skip
    np.testing.assert_array_equal(s.view(np.uint32), v.view(np.uint32))
    # the math form keeps subnormal results (gradual underflow down to -104): the same
    # bits as the others wherever exp(x) is normal, the f64 exp rounded below
    normal_x = ~(x < fast_exp.LO)
    np.testing.assert_array_equal(s[normal_x].view(np.uint32), m[normal_x].view(np.uint32))
    low = x < fast_exp.LO
    want_low = np.exp(x[low].astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(m[low], want_low, rtol=0, atol=2 * 2.0**-149)
    assert (m[x < -104] == 0).all() and (m[(x < -87.5) & (x > -100)] > 0).all()
    nan = np.isnan(x)
    assert np.isnan(s[nan]).all()
    want = np.exp(x[~nan].astype(np.float64))
    got = s[~nan].astype(np.float64)
    normal = x[~nan] >= fast_exp.LO
    ulp = np.spacing(want[normal].astype(np.float32)).astype(np.float64)
    err = np.abs(got[normal] - want[normal]) / ulp
    assert err.max() < (1.0 if cpu != "generic" else 2.0), err.max()
    assert (got[~normal] == 0).all()
