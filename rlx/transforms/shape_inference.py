"""Re-infer every rlx result type of a function after its argument types changed
(used by `bind-dims`, and by any pass that rewrites types)."""

from __future__ import annotations

from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.rewriter import Rewriter

from rlx.dialects.rlx.base import DYN, RlxOp, broadcast_shapes, shape_of, tensor
from rlx.dialects.rlx.control import ElementwiseRegionOp, IfOp, ScanOp, YieldOp
from rlx.transforms.dim_exprs import DIMS_ATTR, eval_dim, symbolic_dims


def _resolve_given(
    op: Operation, operand_types: list[TensorType], env: dict[str, int] | None = None
) -> list[Attribute]:
    """Result types written in the IR, with `?` resolved where the op determines them:
    reshape/broadcast_to dims from their `rlx.dims` expressions over the bound dim names
    (`env`), a single dynamic reshape dim from the element count, broadcast_to dims from
    the operand, cast/dequantize shapes from the operand."""
    given = [r.type for r in op.results]
    if not given or not isinstance(given[0], TensorType):
        return given
    out = given[0]
    dims = list(shape_of(out))
    sym = symbolic_dims(op) if env and DYN in dims else None
    if sym is not None and len(sym) == len(dims):
        for i, e in enumerate(sym):
            if dims[i] == DYN and isinstance(e, str) and (v := eval_dim(e, env or {})) is not None:
                dims[i] = v
    if op.name in ("rlx.cast", "rlx.dequantize"):
        return [tensor(shape_of(operand_types[0]), out.element_type)]
    if op.name == "rlx.reshape" and DYN in dims:
        src = shape_of(operand_types[0])
        known = [d for d in dims if d != DYN]
        if DYN not in src and dims.count(DYN) == 1 and prod(known) and prod(src) % prod(known) == 0:
            dims[dims.index(DYN)] = prod(src) // prod(known)
    if op.name == "rlx.broadcast_to" and DYN in dims:
        src = shape_of(operand_types[0])
        for i in range(1, min(len(src), len(dims)) + 1):
            if dims[-i] == DYN and src[-i] not in (DYN, 1):
                dims[-i] = src[-i]
    return [tensor(dims, out.element_type)]


def _dim_sizes(f: func.FuncOp) -> dict[str, int]:
    """Sizes of the named dims of `f`'s arguments (`rlx.dims`) that are static now."""
    env: dict[str, int] = {}
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    for a, arg in zip(attrs, f.body.block.args, strict=False):
        names = a.data.get(DIMS_ATTR)
        if isinstance(names, ArrayAttr) and isinstance(arg.type, TensorType):
            for nm, d in zip(names.data, shape_of(arg.type), strict=False):
                if isinstance(nm, StringAttr) and d != DYN:
                    env[nm.data] = d
    return env


def reinfer_function(f: func.FuncOp) -> None:
    """Recompute result types in program order and update the function type."""
    env = _dim_sizes(f)
    for op in f.body.walk():
        if isinstance(op, ScanOp | ElementwiseRegionOp):
            _reinfer_region_op(op)
            continue
        parent = op.parent_op()
        if isinstance(op, IfOp):
            continue  # its results follow its regions (below)
        if isinstance(op, YieldOp) and isinstance(parent, IfOp):
            if op.parent_region() is parent.else_region:  # walked after the then region
                _reinfer_if(parent)
            continue
        if isinstance(op, YieldOp) and isinstance(parent, ScanOp):
            _reinfer_scan_results(parent)
            continue
        if not isinstance(op, RlxOp) or parent is not f and not isinstance(parent, ScanOp | IfOp):
            continue
        operand_types = [o.type for o in op.operands]
        given = _resolve_given(op, operand_types, env)
        new = op.infer_from(operand_types, op.attributes, given)  # type: ignore[arg-type]
        for r, t in zip(list(op.results), new, strict=True):
            if r.type != t:
                Rewriter.replace_value_with_new_type(r, t)
    ret = f.body.block.last_op
    if isinstance(ret, func.ReturnOp):
        f.function_type = func.FunctionType.from_lists(
            [a.type for a in f.body.block.args], [o.type for o in ret.operands]
        )


def _reinfer_if(op: IfOp) -> None:
    """The results of `op` take the types its then region yields (the verifier checks the
    else region agrees)."""
    term = op.then_region.block.last_op
    assert term is not None
    for r, v in zip(list(op.results), term.operands, strict=True):
        if r.type != v.type:
            Rewriter.replace_value_with_new_type(r, v.type)


def _reinfer_region_op(op: ScanOp | ElementwiseRegionOp) -> None:
    if isinstance(op, ElementwiseRegionOp):
        shape = broadcast_shapes(*(shape_of(o.type) for o in op.inputs))
        new = tensor(shape, op.result.type.element_type)  # type: ignore[union-attr]
        if new != op.result.type:
            Rewriter.replace_value_with_new_type(op.result, new)
        return
    # a scan: its block arguments follow the carries and xs slices; its body is walked
    # next, then its results follow the yield (`_reinfer_scan_results`)
    want = [
        *(o.type for o in op.inits),
        *(tensor(shape_of(x.type)[1:], x.type.element_type) for x in op.xs),  # type: ignore[union-attr]
    ]
    for a, t in zip(list(op.body.block.args), want, strict=True):
        if a.type != t:
            Rewriter.replace_value_with_new_type(a, t)


def _reinfer_scan_results(op: ScanOp) -> None:
    """Final carries of the carry types, then `length x` each per-step output's type."""
    term = op.body.block.last_op
    assert term is not None
    n_init = len(op.inits)
    ys = [v.type for v in term.operands[n_init:]]
    want = [
        *(o.type for o in op.inits),
        *(tensor((op.length, *shape_of(y)), y.element_type) for y in ys),  # type: ignore[union-attr]
    ]
    for r, t in zip(list(op.results), want, strict=True):
        if r.type != t:
            Rewriter.replace_value_with_new_type(r, t)
