"""`precision` / `precision-policy`: run the graph, or the parts a policy selects, in f16 or
bf16 while every boundary (inputs, params, constants, outputs) keeps its declared type.

Runs after fusion (fused-op matchers never see casts). Each op gets a target float type
from its class (compute, reduction, elementwise, data movement) and the policy; its float
operands are cast to that type (one `rlx.cast` per (value, type), shared by all
consumers; a cast that undoes an exact widening is cancelled), and its result types are
re-inferred. Integer / i1 tensors are never relabelled, and ops the pass cannot retype
(scaled / dequant matmul, `rlx.scan`, non-rlx ops) keep their original operand types.
See docs/passes/precision.md for the op-by-op table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import FloatAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import RlxOp, is_float, shape_of, tensor
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.dialects.rlx.elementwise import CastOp
from rlx.dialects.rlx.traits import precision_class
from rlx.dtypes import element_type, type_name
from rlx.ir_checks import graph_block
from rlx.transforms.declarations import POLICIES, PRECISIONS, RETYPED_CLASSES

CLASSES = RETYPED_CLASSES

OP_CLASS: dict[str, str] = {name: precision_class(cls) for name, cls in OPS_BY_NAME.items()}
"""rlx op name -> precision class, read from the ops' `PrecisionClass` traits (a view for
reports and tests; the pass asks each op)."""

_POLICY_NAMES = ", ".join([*POLICIES, "custom"])

# (exponent bits, mantissa bits): b is exactly representable in a iff both are >=.
_FLOAT_BITS = {
    "f64": (11, 52), "f32": (8, 23), "f16": (5, 10), "bf16": (8, 7),
    "f8e4m3fn": (4, 3), "f8e5m2": (5, 2), "f8e4m3fnuz": (4, 3), "f8e5m2fnuz": (5, 2),
}  # fmt: skip

TargetFn = Callable[[Operation], Attribute | None]


def widens_exactly(narrow: Attribute, wide: Attribute) -> bool:
    """True when every `narrow` value is exactly representable in `wide`."""
    a, b = _FLOAT_BITS.get(type_name(narrow)), _FLOAT_BITS.get(type_name(wide))
    return a is not None and b is not None and b[0] >= a[0] and b[1] >= a[1]


def parse_custom(text: str) -> dict[str, str]:
    """`matmul=f16,softmax=f32` -> {"rlx.matmul": "f16", ...}; keys are op names (with or
    without `rlx.`, `_` or `-`) or class names (compute, reduction, elementwise,
    data-movement)."""
    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not eq or value not in PRECISIONS:
            raise PassFailedException(
                f"malformed custom precision entry '{item}': expected OP=TYPE with TYPE one "
                f'of {", ".join(PRECISIONS)}, e.g. custom="matmul=f16,softmax=f32"'
            )
        key = "data-movement" if key == "data_movement" else key
        name = key if key in CLASSES else f"rlx.{key.removeprefix('rlx.').replace('-', '_')}"
        op_cls = OPS_BY_NAME.get(name)
        if name not in CLASSES and (op_cls is None or precision_class(op_cls) not in CLASSES):
            raise PassFailedException(
                f"custom precision: '{key}' is not a retypable rlx op or an op class "
                f"({', '.join(CLASSES)})"
            )
        out[name] = value
    return out


def policy_targets(precision: str, policy: str, custom: str) -> TargetFn | None:
    """The per-op target type function for the options; None when the pass is a no-op.
    Names are case-insensitive."""
    precision, policy = precision.strip().lower(), policy.strip().lower()
    if precision not in PRECISIONS:
        raise PassFailedException(
            f"unknown precision '{precision}'; expected one of {', '.join(PRECISIONS)}"
        )
    if not policy:
        policy = (
            "custom"
            if custom
            else {"f32": "always-f32", "f16": "always-f16", "bf16": "always-bf16"}[precision]
        )
    if policy == "custom":
        table = parse_custom(custom)
    elif policy in POLICIES:
        if custom:
            raise PassFailedException(f"option 'custom' needs policy=custom, got policy={policy}")
        table = POLICIES[policy]
    else:
        raise PassFailedException(
            f"unknown precision policy '{policy}'; expected one of {_POLICY_NAMES}"
        )
    if policy == "always-f32":
        return None

    def target(op: Operation) -> Attribute | None:
        cls = precision_class(op)
        if cls not in CLASSES:
            return None
        return element_type(table.get(op.name, table.get(cls, "f32")))

    return target


def _elem(v: SSAValue) -> Attribute | None:
    return v.type.element_type if isinstance(v.type, TensorType) else None


class _FunctionRewrite:
    """One forward walk over a function's top-level ops (see the module docstring)."""

    def __init__(self, f: func.FuncOp, target: TargetFn):
        self.f = f
        self.block: Block = graph_block(f, "precision")
        self.target = target
        self.casts: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        self.original: dict[SSAValue, Attribute] = {}
        for op in self.block.walk():
            for r in op.results:
                self.original[r] = r.type

    def cast(self, v: SSAValue, elem: Attribute) -> SSAValue:
        """`v` as a tensor of `elem`: reuse a cast, cancel an exact round trip, or insert one."""
        if _elem(v) == elem:
            return v
        key = (v, elem)
        if key not in self.casts:
            owner = v.owner
            src = owner.x if isinstance(owner, CastOp) else None
            if src is not None and _elem(src) == elem and widens_exactly(elem, _elem(v)):  # type: ignore[arg-type]
                self.casts[key] = src
            else:
                new = CastOp.create(operands=[v], result_types=[tensor(shape_of(v.type), elem)])
                if v.name_hint:
                    new.results[0].name_hint = f"{v.name_hint}_{type_name(elem)}"
                where = (
                    InsertPoint.after(owner)
                    if isinstance(owner, Operation)
                    else InsertPoint.at_start(self.block)
                )
                Rewriter.insert_op(new, where)
                self.casts[key] = new.results[0]
        return self.casts[key]

    def original_type(self, v: SSAValue) -> Attribute:
        return self.original.get(v, v.type)

    def restore(self, op: Operation) -> None:
        """Give `op` (and ops nested in it that use outer values) their original operand types."""
        for inner in op.walk():
            for i, v in enumerate(inner.operands):
                if v.owner is self.block or getattr(v.owner, "parent", None) is self.block:
                    want = self.original_type(v)
                    if v.type != want and isinstance(want, TensorType):
                        inner.operands[i] = self.cast(v, want.element_type)

    def run(self) -> None:
        for op in list(self.block.ops):
            if isinstance(op, func.ReturnOp):
                self.restore(op)
                continue
            if isinstance(op, CastOp):
                continue
            t = self.target(op)
            if t is None or not isinstance(op, RlxOp):
                self.restore(op)
                continue
            if isinstance(op, ElementwiseRegionOp):
                if not self.retype_region(op, t):
                    self.restore(op)
                continue
            if not self.retype(op, t):
                self.restore(op)
        for op in list(self.block.ops):  # user casts that became identities
            if isinstance(op, CastOp) and op.x.type == op.results[0].type:
                op.results[0].replace_all_uses_with(op.x)
                Rewriter.erase_op(op)
        ret = self.block.last_op
        if isinstance(ret, func.ReturnOp):
            self.f.function_type = func.FunctionType.from_lists(
                [a.type for a in self.block.args], [o.type for o in ret.operands]
            )

    def _operand_types(self, op: Operation, t: Attribute) -> list[Attribute]:
        return [
            tensor(shape_of(v.type), t) if is_float(_elem(v)) else v.type  # type: ignore[arg-type]
            for v in op.operands
        ]

    def retype(self, op: RlxOp, t: Attribute) -> bool:
        """Run `op` in `t`; False (nothing changed) when its type rule rejects that."""
        types = self._operand_types(op, t)
        given = [r.type for r in op.results]
        if op.name in ("rlx.reshape", "rlx.broadcast_to", "rlx.dequantize"):
            given = [
                tensor(shape_of(g), t) if is_float(g.element_type) else g  # type: ignore[union-attr]
                for g in given
            ]
        try:
            new = op.infer_from(types, op.attributes, given)  # type: ignore[arg-type]
        except VerifyException:
            return False
        for i, (v, nt) in enumerate(zip(list(op.operands), types, strict=True)):
            if v.type != nt:
                op.operands[i] = self.cast(v, nt.element_type)  # type: ignore[union-attr]
        for r, nt in zip(list(op.results), new, strict=True):
            if r.type != nt:
                self._retype_result(r, nt)
        return True

    def _retype_result(self, r: SSAValue, new_type: Attribute) -> None:
        orig = self.original.pop(r, r.type)
        self.original[Rewriter.replace_value_with_new_type(r, new_type)] = orig

    def retype_region(self, op: ElementwiseRegionOp, t: Attribute) -> bool:
        """Retype the scalar body of an elementwise region; False if it would not verify."""
        types = self._operand_types(op, t)
        old = [_elem(v) for v in op.inputs]
        clone = op.clone()
        body = clone.body.block
        for arg, o in zip(list(body.args), old, strict=True):
            if is_float(o):
                Rewriter.replace_value_with_new_type(arg, t)
        for inner in list(body.ops):
            if isinstance(inner, arith.ConstantOp) and isinstance(inner.value, FloatAttr):
                new_const = arith.ConstantOp(FloatAttr(inner.value.value.data, t))  # type: ignore[arg-type]
                Rewriter.replace_op(inner, new_const)
                continue
            for r in list(inner.results):
                if is_float(r.type) and r.type != t:
                    Rewriter.replace_value_with_new_type(r, t)
        out_elem = body.last_op.operands[0].type if body.last_op and body.last_op.operands else None
        if out_elem is None:
            return False
        Rewriter.replace_value_with_new_type(
            clone.result, tensor(shape_of(clone.result.type), out_elem)
        )
        for i, nt in enumerate(types):
            clone.operands[i] = _Placeholder.of(nt)
        try:
            clone.verify()
        except VerifyException:
            clone.erase(safe_erase=False)
            return False
        for i, (v, nt) in enumerate(zip(list(op.inputs), types, strict=True)):
            clone.operands[i] = self.cast(v, nt.element_type) if v.type != nt else v  # type: ignore[union-attr]
        Rewriter.insert_op(clone, InsertPoint.before(op))
        if clone.result.type != op.result.type:
            self.original[clone.result] = op.result.type
        op.result.replace_all_uses_with(clone.result)
        Rewriter.erase_op(op)
        return True


class _Placeholder:
    """Detached values of a given type, to verify a retyped region before wiring it."""

    @staticmethod
    def of(t: Attribute) -> SSAValue:
        from xdsl.dialects.test import TestOp

        return TestOp.create(result_types=[t]).results[0]


def apply_precision(module: builtin.ModuleOp, precision: str, policy: str, custom: str) -> None:
    """Rewrite every function of `module` for the given precision/policy options."""
    target = policy_targets(precision, policy, custom)
    if target is None:
        return
    for f in list(module.ops):
        if isinstance(f, func.FuncOp) and not f.is_declaration:
            _FunctionRewrite(f, target).run()


@dataclass(frozen=True)
class Precision(ModulePass):
    """Run the graph in f16/bf16 (precision=) or per a mixed-precision policy, keeping f32 I/O."""

    name = "precision"
    main_option: ClassVar[str] = "precision"
    equivalence_tolerance: ClassVar[float] = 0.05  # bf16: 8 significant bits per op

    precision: str = "f32"
    """Whole-graph type when no policy is given: f32 (no-op), f16 or bf16."""
    policy: str = ""
    """always-f32 | always-f16 | always-bf16 | auto-mixed | auto-mixed-conservative |
    auto-mixed-bf16 | custom; overrides `precision`."""
    custom: str = ""
    """For policy=custom: `OP=TYPE,...` (op or class names; unlisted ops stay f32)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        apply_precision(op, self.precision, self.policy, self.custom)


@dataclass(frozen=True)
class PrecisionPolicy(ModulePass):
    """Apply a named mixed-precision policy (same rewrite as `precision{policy=...}`)."""

    name = "precision-policy"
    main_option: ClassVar[str] = "policy"
    equivalence_tolerance: ClassVar[float] = 0.05  # as `precision`

    policy: str = ""
    """The policy name (see `precision`)."""
    custom: str = ""
    """For policy=custom: `OP=TYPE,...`."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not self.policy:
            raise PassFailedException(
                f"precision-policy needs a policy name, one of {_POLICY_NAMES}"
            )
        apply_precision(op, "f32", self.policy, self.custom)
