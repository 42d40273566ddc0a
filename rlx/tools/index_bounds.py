"""Index ranges of integer graph inputs: how far `rlx-run`'s random data may go.

An integer argument that (through casts, reshapes, slices, ...) feeds the indices of an
`rlx.gather` must stay below the gathered axis' size, or random test data reads out of
the table (e.g. an all-NaN output for a token-type embedding of 2 rows).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from rlx.dialects.rlx.base import DYN, shape_of

_PASS_THROUGH = frozenset(
    {"rlx.cast", "rlx.reshape", "rlx.broadcast_to", "rlx.slice", "rlx.transpose", "rlx.concat"}
)
"""Ops whose result holds (a rearrangement of) the operand's values."""


def _gather_axis(op: Operation) -> int:
    """The `axis` of an `rlx.gather` (one place to switch to the typed accessor)."""
    return int(op.axis)  # type: ignore[attr-defined]


def _bound(v: SSAValue, seen: set[SSAValue]) -> int | None:
    """Smallest table size among the gathers `v`'s values index (None: no gather)."""
    best: int | None = None
    for use in list(v.uses):
        op = use.operation
        b: int | None = None
        if op.name == "rlx.gather" and use.index == 1:
            x = op.operands[0].type
            assert isinstance(x, TensorType)
            s = shape_of(x)
            d = s[_gather_axis(op) % len(s)]
            b = None if d == DYN else d
        elif op.name in _PASS_THROUGH and op.results and op.results[0] not in seen:
            seen.add(op.results[0])
            b = _bound(op.results[0], seen)
        if b is not None:
            best = b if best is None else min(best, b)
    return best


def index_bounds(module: ModuleOp, entry: str = "main") -> dict[str, int]:
    """`{input name: exclusive upper bound}` for the integer inputs of `@entry` that index
    a gather (inputs named by `rlx.name`, else `argN`)."""
    out: dict[str, int] = {}
    for f in module.ops:
        if not (isinstance(f, func.FuncOp) and f.sym_name.data == entry):
            continue
        attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
        for i, a in enumerate(f.body.block.args):
            name = f"arg{i}"
            if i < len(attrs) and isinstance(attrs[i].data.get("rlx.name"), StringAttr):
                name = attrs[i].data["rlx.name"].data  # type: ignore[union-attr]
            b = _bound(a, {a})
            if b is not None:
                out[name] = b
    return out


def index_bounds_of_file(path: str, entry: str = "main") -> dict[str, int]:
    """`index_bounds` of an .mlir file ({} for other files or unparsable text)."""
    if not path.endswith(".mlir"):
        return {}
    from rlx.interpreter import parse_module

    try:
        with open(path) as f:
            return index_bounds(parse_module(f.read()), entry)
    except Exception:  # the compile step reports bad IR; this is only a data hint
        return {}
