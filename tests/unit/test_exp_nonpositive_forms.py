"""The two forms of the cheap exp for x <= 0 give the same bits: the scalar one of softmax and
flash attention (`fast_exp.exp_nonpositive`, arith ops that LLVM's loop vectorizer widens)
and the vector one of the conv epilogues' sigmoid / silu (`gemm.vector_act.exp_nonpositive`,
explicit `vector<8 x f32>` llvm ops). Both are built into one function, lowered to LLVM and
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
from xdsl.dialects import func, get_all_dialects, llvm, memref
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
    """@f(x, scalar_out, vector_out): both forms over N elements."""
    mt = MemRefType(f32, [N])
    block = Block(arg_types=[mt, mt, mt])
    x, s_out, v_out = block.args
    kb = KernelBuilder(block)
    with kb.loop(N) as i:
        kb.store(fast_exp.exp_nonpositive(kb, kb.load(x, [i])), s_out, [i])
    vt = VectorType(f32, [LANES])

    def ptr(mem: object, i: object) -> object:
        addr = kb.v(memref.ExtractAlignedPointerAsIndexOp.get(mem))
        p = kb.v(llvm.IntToPtrOp(kb.convert(addr, i64)))
        return kb.v(llvm.GEPOp(p, [llvm.GEP_USE_SSA_VAL], f32, ssa_indices=[kb.convert(i, i64)]))

    with kb.loop(N, 0, LANES) as i:
        xv = kb.v(llvm.LoadOp(ptr(x, i), vt, alignment=4))
        kb.add(llvm.StoreOp(vector_act.exp_nonpositive(kb, xv), ptr(v_out, i), alignment=4))
    kb.finish()
    fn = func.FuncOp("f", ([mt, mt, mt], []), Region(block))
    return ModuleOp([fn])


def _inputs() -> np.ndarray:
    tiny = -np.geomspace(1e-38, 1e-3, 3000)
    sweep = np.linspace(-100.0, 0.0, N - len(tiny) - 11)
    special = [0.0, -0.0, -np.inf, np.nan, -87.0, -86.99, -87.01, -88.7, -1e30, -1e-40, -1e-45]
    return np.concatenate([special, tiny, sweep]).astype(np.float32)


@pytest.mark.parametrize("cpu", list(CPUS))
def test_scalar_and_vector_exp_nonpositive_agree_bitwise(cpu: str) -> None:
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
    x, s, v = _aligned((N,)), _aligned((N,)), _aligned((N,))  # the arguments are `align 64`
    x[...] = _inputs()
    ptr = ctypes.c_void_p
    jit.cfunc("f", None, ptr, ptr, ptr)(x.ctypes.data, s.ctypes.data, v.ctypes.data)
    np.testing.assert_array_equal(s.view(np.uint32), v.view(np.uint32))
    nan = np.isnan(x)
    assert np.isnan(s[nan]).all()
    want = np.exp(x[~nan].astype(np.float64))
    got = s[~nan].astype(np.float64)
    normal = x[~nan] >= fast_exp.LO
    ulp = np.spacing(want[normal].astype(np.float32)).astype(np.float64)
    err = np.abs(got[normal] - want[normal]) / ulp
    assert err.max() < (1.0 if cpu != "generic" else 2.0), err.max()
    assert (got[~normal] == 0).all()
