"""`expand-small-floats` and `retype-small-floats`: fp8 / fp6 / fp4 without LLVM support.

Why: LLVM has no fp8 types, so `to_llvm_ir` cannot spell them. Values of these types
(`small_floats.NUMPY_NAMES`) live in memory as one byte, their code, and compute in f32
(the rlx kernels already widen on load and narrow on store). Two passes, either side of
`convert-to-llvm`:

* `expand-small-floats` (on arith/memref/cf, after `convert-scf-to-cf`): `arith.extf`
  from a small float becomes a lookup in the format's 256-entry f32 table; `arith.truncf`
  to one (and `sitofp` / `uitofp`) becomes the rounding of `small_floats.encode_model`
  (exactly ml_dtypes' `astype`; f64 sources are first rounded to odd f32, so there is
  one rounding); `fptosi` / `fptoui` and any other arith or math op on small floats
  compute on the decoded f32 values. The code moves between the small type and `i8`
  through `builtin.unrealized_conversion_cast`.
* `retype-small-floats` (on the llvm dialect, before `reconcile-unrealized-casts`):
  every remaining small-float value, constant, GEP / alloca element type and global type
  becomes `i8` (constants hold their code); casts that became `i8 -> i8` disappear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
    f32,
    f64,
    i8,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.interpreter.ops._core import convert
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
from rlx.lowering.small_floats import NUMPY_NAMES, Spec, is_small_float, spec

_CONVERSIONS = (arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.UIToFPOp)


def _spec(t: Attribute) -> Spec:
    return spec(NUMPY_NAMES[type(t)])


class _Tables:
    """Module-level `memref.global` tables (decode and midpoints), one per format."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.names: set[str] = {  # tables of an earlier run are reused
            o.sym_name.data for o in module.ops if isinstance(o, memref.GlobalOp)
        }
        self.values: dict[tuple[KernelBuilder, str], SSAValue] = {}

    def get(self, kb: KernelBuilder, name: str, values: np.ndarray) -> SSAValue:
        t = MemRefType(f32, [len(values)])
        if name not in self.names:
            dense = DenseIntOrFPElementsAttr.from_list(
                TensorType(f32, [len(values)]), [float(v) for v in values]
            )
            g = memref.GlobalOp.get(
                StringAttr(name), t, dense, StringAttr("private"), UnitAttr(), 64
            )
            Rewriter.insert_op(g, InsertPoint.at_start(self.module.body.block))
            self.names.add(name)
        key = (kb, name)
        if key not in self.values:
            self.values[key] = kb.hoist(memref.GetGlobalOp(name, t))
        return self.values[key]


def _cast(kb: KernelBuilder, v: SSAValue, t: Attribute) -> SSAValue:
    return kb.v(UnrealizedConversionCastOp.get([v], [t]))


def decode(kb: KernelBuilder, tables: _Tables, x: SSAValue) -> SSAValue:
    """The f32 value of small-float `x` (a table lookup by its code)."""
    s = _spec(x.type)
    table = tables.get(kb, f"__rlx_{s.name}_decode", s.decode)
    code = _cast(kb, x, i8)
    return kb.load(table, [kb.convert(code, kb.idx(0).type, signed=False)])


def encode(kb: KernelBuilder, tables: _Tables, v: SSAValue, to: Attribute) -> SSAValue:
    """`v` (any float) rounded to small-float type `to` as ml_dtypes rounds
    (`small_floats.encode_model`, step for step)."""
    s = _spec(to)
    if isinstance(v.type, Float64Type):
        v = kb.to_f32_odd(v)  # one rounding overall
    elif not isinstance(v.type, Float32Type):
        v = decode(kb, tables, v) if is_small_float(v.type) else kb.v(arith.ExtFOp(v, f32))
    mids = tables.get(kb, f"__rlx_{s.name}_mids", s.mids)
    p = len(s.mids)
    a = kb.unary(mathd.AbsFOp, v)
    pos = kb.count_below(mids, p, a)  # how many rounding midpoints are < |v|
    tie = kb.v(
        arith.AndIOp(
            kb.cmpi("slt", pos, kb.idx(p)),
            kb.cmpf("oeq", kb.load(mids, [kb.imin(pos, kb.idx(p - 1))]), a),
        )
    )
    pick = kb.convert(pos, i32)
    if not s.ties_up:
        odd = kb.cmpi("ne", kb.v(arith.AndIOp(pick, kb.const(1, i32))), kb.const(0, i32))
        tie = kb.v(arith.AndIOp(tie, odd))
    pick = kb.addi(pick, kb.convert(tie, i32, signed=False))
    over = kb.v(
        arith.OrIOp(
            kb.cmpi("sge", pick, kb.const(p, i32)),
            kb.cmpf("oeq", a, kb.const(float("inf"), f32)),
        )
    )
    code = kb.select(over, kb.const(s.overflow, i32), pick)
    neg = kb.cmpi("slt", kb.v(arith.BitcastOp(v, i32)), kb.const(0, i32))
    zero = kb.const(0.0, f32)
    if s.signed:
        if not s.neg_zero:
            neg = kb.v(arith.AndIOp(neg, kb.cmpi("ne", code, kb.const(0, i32))))
        signed = kb.v(arith.OrIOp(code, kb.const(s.sign_bit, i32)))
        code = kb.select(neg, signed, code)
    else:
        neg = kb.v(arith.AndIOp(neg, kb.cmpf("ogt", a, zero)))
        code = kb.select(neg, kb.const(s.nan_pos, i32), code)
    if s.zero_code != 0:
        code = kb.select(kb.cmpf("oeq", a, zero), kb.const(s.zero_code, i32), code)
    nan = kb.select(neg, kb.const(s.nan_neg, i32), kb.const(s.nan_pos, i32))
    code = kb.select(kb.cmpf("uno", v, v), nan, code)
    return _cast(kb, kb.convert(code, i8), to)


def _expand(kb: KernelBuilder, tables: _Tables, op: Operation) -> list[SSAValue] | None:
    """Replacement results of `op`, or None when it does not touch a small float."""
    ins = [o for o in op.operands if is_small_float(o.type)]
    outs = [r for r in op.results if is_small_float(r.type)]
    if not ins and not outs:
        return None
    if isinstance(op, arith.SelectOp | arith.ConstantOp | UnrealizedConversionCastOp):
        return None  # moves codes only (constants get their code in retype-small-floats)
    if isinstance(op, _CONVERSIONS):
        src, to = op.operands[0], op.results[0].type
        if is_small_float(src.type):
            src = decode(kb, tables, src)
        if is_small_float(to):
            if isinstance(src.type, IntegerType):
                cls = arith.SIToFPOp if isinstance(op, arith.SIToFPOp) else arith.UIToFPOp
                src = kb.v(cls(src, f64))
            return [encode(kb, tables, src, to)]
        return [kb.convert(src, to)]
    # any other op: compute on f32 values (fptosi / fptoui, cmpf, addf, math ops, ...)
    args = [decode(kb, tables, o) if is_small_float(o.type) else o for o in op.operands]
    new = type(op).create(
        operands=args,
        result_types=[f32 if is_small_float(r.type) else r.type for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    kb.add(new)
    return [
        encode(kb, tables, n, r.type) if is_small_float(r.type) else n
        for n, r in zip(new.results, op.results, strict=True)
    ]


@dataclass(frozen=True)
class ExpandSmallFloatsPass(ModulePass):
    """Lower fp8/fp6/fp4 conversions and arithmetic to i8 codes, f32 tables and rounding."""

    name = "expand-small-floats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tables = _Tables(op)
        for f in [o for o in op.ops if isinstance(o, func.FuncOp) and o.body.blocks]:
            kb: KernelBuilder | None = None
            for o in list(f.body.walk()):
                if o is f or o.dialect_name() not in ("arith", "math"):
                    continue
                if not any(is_small_float(v.type) for v in (*o.operands, *o.results)):
                    continue
                if kb is None:
                    kb = KernelBuilder(f.body.blocks.first)  # type: ignore[arg-type]
                kb.ip = InsertPoint.before(o)
                new = _expand(kb, tables, o)
                if new is None:
                    continue
                for r, n in zip(o.results, new, strict=True):
                    r.replace_all_uses_with(n)
                o.detach()
                o.erase()


def _retype(t: Attribute) -> Attribute:
    if is_small_float(t):
        return i8
    if isinstance(t, llvm.LLVMArrayType):
        inner = _retype(t.type)
        return t if inner is t.type else llvm.LLVMArrayType(t.size, inner)
    return t


def _retype_op(o: Operation) -> None:
    for k, v in list(o.properties.items()):
        if isinstance(v, FloatAttr) and is_small_float(v.type):
            # one rounding from the attribute's f64 value (the interpreter's rule)
            code = int(convert(np.array([v.value.data]), _np_dtype(v.type)).view(np.uint8)[0])
            o.properties[k] = IntegerAttr(code, i8)
        elif (nv := _retype(v)) is not v:
            o.properties[k] = nv
    for r in list(o.results):
        if is_small_float(r.type):
            Rewriter.replace_value_with_new_type(r, i8)


def _np_dtype(t: Attribute) -> np.dtype:
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, NUMPY_NAMES[type(t)]))


@dataclass(frozen=True)
class RetypeSmallFloatsPass(ModulePass):
    """Give every fp8/fp6/fp4 value of the llvm-dialect module the type i8 (its code)."""

    name = "retype-small-floats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks: list[Block] = []
        for o in list(op.walk()):
            _retype_op(o)
            for r in o.regions:
                blocks.extend(r.blocks)
        for b in blocks:
            for a in list(b.args):
                if is_small_float(a.type):
                    Rewriter.replace_value_with_new_type(a, i8)
        for o in list(op.walk()):
            if (
                isinstance(o, UnrealizedConversionCastOp)
                and len(o.operands) == 1
                and o.operands[0].type == o.results[0].type
            ):
                o.results[0].replace_all_uses_with(o.operands[0])
                o.detach()
                o.erase()


__all__ = ["ExpandSmallFloatsPass", "RetypeSmallFloatsPass", "decode", "encode"]
