"""`scan-unroll`: replace every `rlx.scan` of length <= `max_length` by `length` inlined
copies of its body, so backends without a scan kernel (or a loop lowering) can run it.

Each copy gets the carries of the previous one and, for every scanned input `xs`, its
step slice `reshape(slice(xs, [t:t+1, ...]))`; the per-step outputs are reshaped to
`[1, ...]` and concatenated along axis 0. Longer scans stay (they lower to a loop);
`max_length = 0` disables the pass. Nested scans are unrolled innermost first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import DYN, i64_attr, ints_attr, shape_of, tensor
from rlx.dialects.rlx.control import ScanOp, YieldOp


class _Emitter:
    """Creates rlx ops (result types from the op's own `infer`) before a fixed op."""

    def __init__(self, before: Operation):
        self.where = InsertPoint.before(before)

    def op(
        self,
        name: str,
        operands: list[SSAValue],
        attrs: dict[str, Attribute] | None = None,
        given: list[Attribute] | None = None,
    ) -> SSAValue:
        cls: Any = OPS_BY_NAME[name]
        attributes = attrs or {}
        types = cls.infer_from([o.type for o in operands], attributes, given)
        new = cls.create(operands=operands, result_types=types, attributes=attributes)
        Rewriter.insert_op(new, self.where)
        return new.results[0]

    def clone(self, op: Operation, mapping: dict[SSAValue, SSAValue]) -> None:
        new = op.clone(value_mapper=mapping)
        Rewriter.insert_op(new, self.where)
        for old, res in zip(op.results, new.results, strict=True):
            mapping[old] = res


def _static(scan: ScanOp) -> bool:
    return all(
        isinstance(v.type, TensorType) and DYN not in shape_of(v.type)
        for v in (*scan.operands, *scan.results)
    )


def unroll_scan(scan: ScanOp) -> None:
    """Replace `scan` (static shapes, length >= 1) by unrolled copies of its body."""
    length = scan.length
    emit = _Emitter(scan)
    block = scan.body.block
    n = len(scan.inits)
    carries = list(scan.inits)
    steps: list[list[SSAValue]] = [[] for _ in range(len(scan.outs) - n)]
    for t in range(length):
        slices: list[SSAValue] = []
        for xs in scan.xs:
            shape = shape_of(xs.type)
            sl = emit.op(
                "rlx.slice",
                [xs],
                {
                    "starts": ints_attr([t] + [0] * (len(shape) - 1)),
                    "limits": ints_attr([t + 1, *shape[1:]]),
                },
            )
            elem = xs.type.element_type  # type: ignore[union-attr]
            slices.append(emit.op("rlx.reshape", [sl], given=[tensor(shape[1:], elem)]))
        mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, [*carries, *slices], strict=True))
        for op in block.ops:
            if isinstance(op, YieldOp):
                outs = [mapping.get(v, v) for v in op.operands]
                carries = outs[:n]
                for k, y in enumerate(outs[n:]):
                    ty: Any = y.type
                    steps[k].append(
                        emit.op(
                            "rlx.reshape", [y], given=[tensor((1, *shape_of(ty)), ty.element_type)]
                        )
                    )
            else:
                emit.clone(op, mapping)
    stacked = [
        s[0] if len(s) == 1 else emit.op("rlx.concat", s, {"axis": i64_attr(0)}) for s in steps
    ]
    Rewriter.replace_op(scan, [], [*carries, *stacked])


def unroll_scans(module: builtin.ModuleOp, max_length: int) -> int:
    """Unroll every eligible scan of `module` (innermost first); returns how many."""
    if max_length < 0:
        raise PassFailedException(f"scan-unroll max-length must be >= 0, got {max_length}")
    count = 0
    for op in reversed(list(module.walk())):
        if not isinstance(op, ScanOp):
            continue
        length = op.length
        if not 1 <= length <= max_length or not _static(op):
            if length == 0 and len(op.outs) == len(op.inits) and max_length > 0:
                Rewriter.replace_op(op, [], list(op.inits))  # no steps: results = inits
                count += 1
            continue
        unroll_scan(op)
        count += 1
    return count


@dataclass(frozen=True)
class ScanUnroll(ModulePass):
    """Unroll rlx.scan ops of length <= max-length into inlined body copies (0 disables)."""

    name = "scan-unroll"
    main_option: ClassVar[str] = "max_length"

    max_length: int = 64
    """Longest scan to unroll; longer ones stay (they lower to a loop). 0 disables."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        unroll_scans(op, self.max_length)
