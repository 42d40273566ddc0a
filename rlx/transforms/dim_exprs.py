"""Symbolic sizes of dynamic dims: `rlx.dims` on `rlx.reshape` / `rlx.broadcast_to`.

An importer that cannot know a result size until the graph's named dims are bound (e.g.
an ONNX Reshape whose target is computed from `Shape` of a dynamic input) writes `?` in
the result type and the size's expression over dim names in the op's discardable
attribute `rlx.dims = ["batch", "(batch*seq)", 64]`. Shape inference (`bind-dims`)
evaluates the expressions once the names have sizes. The grammar is integers, names,
`+ - * // %`, `min(...)`, `max(...)` and parentheses.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Operation

DIMS_ATTR = "rlx.dims"

_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
        ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}  # fmt: skip


def eval_dim(expr: str, env: Mapping[str, int]) -> int | None:
    """The size of `expr` under `env` (None if a name is unbound or the text is not an
    expression of the grammar above)."""

    def ev(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = ev(node.operand)
            return None if v is None else -v
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and node.args
            and not node.keywords
        ):
            vals = [ev(a) for a in node.args]
            if any(v is None for v in vals):
                return None
            return (min if node.func.id == "min" else max)(vals)  # type: ignore[type-var]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None or (b == 0 and isinstance(node.op, ast.FloorDiv | ast.Mod)):
                return None
            return _OPS[type(node.op)](a, b)
        return None

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None
    return ev(tree.body)


def symbolic_dims(op: Operation) -> list[str | int] | None:
    """The `rlx.dims` of `op` (names/expressions or sizes per result dim), if any."""
    a: Attribute | None = op.attributes.get(DIMS_ATTR)
    if not isinstance(a, ArrayAttr):
        return None
    out: list[str | int] = []
    for d in a.data:
        out.append(
            d.data
            if isinstance(d, StringAttr)
            else d.value.data
            if isinstance(d, IntegerAttr)
            else -1
        )
    return out
