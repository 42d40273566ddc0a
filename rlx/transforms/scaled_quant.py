"""`scaled-quant`: rewrite every rank-2 f32 `rlx.matmul` into a native low-precision GEMM:
transpose of the weight to [N, K], per-operand `rlx.scaled_quant_scale` +
`rlx.scaled_quantize`, and one TN `rlx.scaled_matmul` accumulating in f32.

Runs first in the pipeline (before constant folding, so weight quantization can fold once
params are bound). Each distinct operand value is transposed / quantized once, however many
matmuls share it. Format and layout names are parsed by `rlx.formats.lowp`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import StringAttr, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx.base import DYN, UI8, shape_of, tensor
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.quant import (
    ScaledMatmulOp,
    ScaledQuantizeOp,
    ScaledQuantScaleOp,
    scale_type,
)
from rlx.dialects.rlx.shape import TransposeOp
from rlx.formats.lowp import LowpFormat, ScaleLayout, parse_format, parse_layout

_FP8, _MX = ("f8e4m3", "f8e4m3", "per_tensor"), ("f8e4m3", "f8e4m3", "mx")
PRESETS: dict[str, tuple[str, str, str]] = {
    "fp8-e4m3": _FP8, "fp8_e4m3": _FP8, "mxfp8": _MX, "mxfp8-e4m3": _MX, "mxfp8_e4m3": _MX,
}  # fmt: skip
"""Preset name -> (lhs format, rhs format, scale layout)."""

FORMS = (
    "a preset (fp8-e4m3 = f8e4m3/f8e4m3/per_tensor, mxfp8 = f8e4m3/f8e4m3/mx) or "
    "'LHS[,RHS][,layout=LAYOUT]' (also CompileOptions' 'LHS[,layout=LAYOUT][,rhs=RHS]') "
    "with LHS/RHS a low-precision format (f8e4m3, f8e5m2, "
    "f8e4m3fnuz, f8e5m2fnuz, f6e2m3, f6e3m2, f4e2m1, or fNeXmY with N = 1+X+Y <= 8, X >= 1) "
    "and LAYOUT per_tensor (default), mx[/BLOCK] or nvfp4[/GROUP]; e.g. "
    "'f8e4m3,f8e5m2,layout=nvfp4/16'"
)

Config = tuple[LowpFormat, LowpFormat, ScaleLayout]


def parse_formats(text: str) -> Config:
    """`fp8-e4m3` / `mxfp8` / `LHS[,RHS][,layout=L]` -> (lhs, rhs, layout); PassFailedException
    naming the accepted forms on anything else."""
    s = text.strip().lower()
    if not s:
        raise PassFailedException(f"scaled-quant needs formats: {FORMS}")
    if s in PRESETS:
        lhs, rhs, lay = PRESETS[s]
        return parse_format(lhs), parse_format(rhs), parse_layout(lay)
    names: list[str] = []
    keyed: dict[str, str] = {}
    for part in (p.strip() for p in s.split(",")):
        key, eq, value = (x.strip() for x in part.partition("="))
        if eq and key in ("layout", "lhs", "rhs") and key not in keyed and value:
            keyed[key] = value
        elif eq or not part:
            names = ["", "", ""]  # malformed
            break
        else:
            names.append(part)
    if "lhs" in keyed:
        names.insert(0, keyed["lhs"])
    if "rhs" in keyed:
        names.append(keyed["rhs"])
    if not 1 <= len(names) <= 2:
        raise PassFailedException(f"malformed scaled-quant formats '{text}'; expected {FORMS}")
    try:
        lhs = parse_format(names[0])
        rhs = parse_format(names[-1])
        lay = parse_layout(keyed.get("layout", "per_tensor"))
    except ValueError as e:
        raise PassFailedException(
            f"scaled-quant formats '{text}': {e}; the option takes a preset (fp8-e4m3, mxfp8) "
            "or 'LHS[,RHS][,layout=LAYOUT]'"
        ) from None
    return lhs, rhs, lay


def _eligible(op: MatmulOp) -> bool:
    """Rank-2 f32 operands with static dims (others stay ordinary matmuls)."""
    types = [op.a.type, op.b.type]
    return all(
        isinstance(t, TensorType)
        and t.element_type == f32
        and len(shape_of(t)) == 2
        and DYN not in shape_of(t)
        for t in types
    )


class _Rewriter:
    """Per-module caches: one transpose per weight, one quantization per (value, format)."""

    def __init__(self, cfg: Config):
        self.lhs, self.rhs, self.layout = cfg
        self.transposed: dict[SSAValue, SSAValue] = {}
        self.quantized: dict[tuple[SSAValue, str, str], tuple[SSAValue, SSAValue]] = {}

    @staticmethod
    def _after(v: SSAValue) -> InsertPoint:
        """Right after `v`'s definition, so the new op dominates every use of `v`."""
        if isinstance(v.owner, Operation):
            return InsertPoint.after(v.owner)
        assert isinstance(v.owner, Block)
        return InsertPoint.at_start(v.owner)

    @staticmethod
    def _hint(v: SSAValue, suffix: str) -> str | None:
        return f"{v.name_hint}_{suffix}" if v.name_hint else None

    def transpose(self, w: SSAValue) -> SSAValue:
        if w not in self.transposed:
            k, n = shape_of(w.type)
            t = TransposeOp.create(
                operands=[w],
                result_types=[tensor((n, k), f32)],
                attributes={"permutation": builtin.DenseArrayBase.from_list(builtin.i64, [1, 0])},
            )
            t.results[0].name_hint = self._hint(w, "t")
            Rewriter.insert_op(t, self._after(w))
            self.transposed[w] = t.results[0]
        return self.transposed[w]

    def quantize(self, x: SSAValue, fmt: LowpFormat) -> tuple[SSAValue, SSAValue]:
        """(codes, scale) of `x` [rows, K] in `fmt` with the configured layout."""
        key = (x, str(fmt), str(self.layout))
        if key not in self.quantized:
            rows, k = shape_of(x.type)
            attrs = {"format": StringAttr(str(fmt)), "scale_layout": StringAttr(str(self.layout))}
            st = scale_type(str(self.layout), rows, k)
            scale = ScaledQuantScaleOp.create(operands=[x], result_types=[st], attributes=attrs)
            scale.results[0].name_hint = self._hint(x, "scale")
            codes = ScaledQuantizeOp.create(
                operands=[x, scale.results[0]],
                result_types=[tensor((rows, k), UI8)],
                attributes=dict(attrs),
            )
            codes.results[0].name_hint = self._hint(x, "q")
            Rewriter.insert_op([scale, codes], self._after(x))
            self.quantized[key] = (codes.results[0], scale.results[0])
        return self.quantized[key]

    def rewrite(self, op: MatmulOp) -> None:
        a_codes, a_scale = self.quantize(op.a, self.lhs)
        b_codes, b_scale = self.quantize(self.transpose(op.b), self.rhs)
        new = ScaledMatmulOp.create(
            operands=[a_codes, b_codes, a_scale, b_scale],
            result_types=[op.result.type],
            attributes={
                "lhs_format": StringAttr(str(self.lhs)),
                "rhs_format": StringAttr(str(self.rhs)),
                "scale_layout": StringAttr(str(self.layout)),
            },
        )
        new.results[0].name_hint = op.result.name_hint
        Rewriter.replace_op(op, new)


def insert_scaled_matmul(module: builtin.ModuleOp, cfg: Config) -> int:
    """Rewrite every eligible matmul of `module`; returns how many were rewritten."""
    count = 0
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or f.is_declaration:
            continue
        rw = _Rewriter(cfg)
        for op in list(f.walk()):
            if isinstance(op, MatmulOp) and _eligible(op):
                rw.rewrite(op)
                count += 1
    return count


@dataclass(frozen=True)
class ScaledQuant(ModulePass):
    """Rewrite rank-2 f32 matmuls into scaled low-precision GEMMs (fp8/fp6/fp4, custom)."""

    name = "scaled-quant"
    main_option: ClassVar[str] = "formats"
    equivalence_tolerance: ClassVar[float] = 1.0  # fp4 formats keep one significant bit

    formats: str = ""
    """`fp8-e4m3`, `mxfp8`, or `LHS[,RHS][,layout=LAYOUT]` (RHS defaults to LHS)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        insert_scaled_matmul(op, parse_formats(self.formats))
