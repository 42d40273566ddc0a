"""Helpers of the loops -> llvm lowering tests (`test_lowering_llvm*.py`): parse memref /
linalg IR, lower it with LOOPS_TO_LLVM, JIT it, and call it on 64-byte aligned NumPy
arrays through ctypes."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from rlx.lowering.lower_to_llvm import LOOPS_TO_LLVM
from rlx.runtime.jit import JitModule, compile_module

P = ctypes.c_void_p
I64 = ctypes.c_int64


def context() -> Context:
    """A context with every xDSL dialect."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def lower(src: str, passes: tuple[ModulePass, ...] = LOOPS_TO_LLVM) -> ModuleOp:
    ctx = context()
    module = Parser(ctx, src).parse_module()
    for p in passes:
        p.apply(ctx, module)
        module.verify()
    return module


def jit_module(src: str) -> JitModule:
    return compile_module(lower(src))


def aligned(shape: tuple[int, ...], dtype: type | np.dtype, fill: object = None) -> np.ndarray:
    """A C-contiguous array whose data is 64-byte aligned (the entry-point contract)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    arr = raw[off : off + n].view(dt).reshape(shape)
    if fill is not None:
        arr[...] = fill
    return arr


def ptrs(*arrays: np.ndarray) -> list[int]:
    return [a.ctypes.data for a in arrays]


RNG = np.random.default_rng(0)


def host_has(feature: str) -> bool:
    import llvmlite.binding as llvm_binding

    return bool(llvm_binding.get_host_cpu_features().get(feature, False))


needs_avx2 = pytest.mark.skipif(not host_has("avx2"), reason="vector checks assume AVX2")


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
"""An f16 kernel (mulf, exp, extf, tanh, truncf, maximumf) the math and pass tests share."""
