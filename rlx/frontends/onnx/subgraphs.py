"""Ops with subgraphs and ops defined as ONNX functions, imported inline.

* **Function ops** without a converter (CenterCropPad, SwiGLU, AffineGrid, the window
  ops, Range's and DynamicQuantizeLinear's bodies, ...): the node is replaced by its
  schema's function body (context-dependent ones too), inlined with `onnx.inliner`.
* **If** (opsets 1-25): a compile-time condition imports only the taken branch; otherwise
  both branches become the regions of an `rlx.if` (only the taken one runs; they must
  yield the same element types and ranks).
* **Loop** and **Scan**: `rlx.scan` (see `loops`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import defs, helper, inliner
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Region, SSAValue

from rlx.dialects.rlx.base import DYN, tensor
from rlx.dialects.rlx.control import IfOp
from rlx.frontends.onnx.importer import Importer
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.registry import EXPANDERS, converter
from rlx.frontends.onnx.symbolic_ops import sym_of

Val = SSAValue | np.ndarray


def _type_proto(ctx: Importer, name: str) -> onnx.TypeProto:
    """The ONNX type of value `name` (for context-dependent function bodies)."""
    from rlx.dtypes import numpy_dtype

    if name in ctx.known:
        arr = ctx.known[name]
        et, dims = helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape)
    else:
        v = ctx.value(name)
        et = helper.np_dtype_to_tensor_dtype(np.dtype(numpy_dtype(elem(v))))
        dims = [None if d == DYN else d for d in shape(v)]
    return helper.make_tensor_type_proto(et, dims)


def expand_function(
    ctx: Importer, proto: onnx.NodeProto
) -> tuple[list[onnx.NodeProto], int] | None:
    """The nodes of `proto`'s function body and the default-domain opset they are written
    against (None if its schema defines no body). The body keeps its own opset
    (DynamicQuantizeLinear's is 11 in a model of opset 17): `onnx.inliner` refuses
    mismatched versions, and the importer reads the nodes with that opset's semantics."""
    try:
        schema = defs.get_schema(proto.op_type, ctx.opset, proto.domain)
    except Exception:
        return None
    _check_identical_shapes(ctx, proto)
    fn = onnx.FunctionProto()
    if schema.has_function:
        body = schema.get_function_with_opset_version(
            _body_version(schema.function_opset_versions, ctx.opset)
        )
        if body is None:
            return None
        fn.ParseFromString(body if isinstance(body, bytes) else body.SerializeToString())
    elif schema.has_context_dependent_function:
        types = [_type_proto(ctx, n).SerializeToString() if n else b"" for n in proto.input]
        try:
            body = schema.get_context_dependent_function_with_opset_version(
                _body_version(schema.context_dependent_function_opset_versions, ctx.opset),
                proto.SerializeToString(),
                types,
            )
        except Exception:
            return None
        if not body:
            return None
        fn.ParseFromString(body)
    else:
        return None
    fn.name, fn.domain = proto.op_type, proto.domain or ""
    call = onnx.NodeProto()
    call.CopyFrom(proto)
    given = {a.name for a in proto.attribute}
    for name, a in schema.attributes.items():  # the body's attribute refs need defaults
        if name not in given and a.default_value.type != onnx.AttributeProto.UNDEFINED:
            call.attribute.append(a.default_value)
            call.attribute[-1].name = name
    own = {o.domain: o.version for o in fn.opset_import}
    version = own.get("", own.get("ai.onnx", ctx.opset))
    imports = [o for o in ctx.model.opset_import if o.domain not in ("", "ai.onnx")]
    graph = helper.make_graph([call], "expand", [], [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version), *imports])
    model.functions.append(fn)
    out = inliner.inline_selected_functions(model, [(fn.domain, fn.name)])
    prefix = f"{proto.name or proto.output[0]}__"
    nodes = list(out.graph.node)
    produced = {o for nd in nodes for o in nd.output} - set(proto.output)
    _rename(nodes, produced, prefix)
    return nodes, version


IDENTICAL_SHAPES = {"SwiGLU": 2}
"""Function ops whose first inputs must have one shape by the spec while the body
broadcasts them (SwiGLU: `Mul(Swish(A), B)`; a [2, 1] gate with a [2, 4] value gave a
[2, 4] result where onnx.reference and onnxruntime refuse the model)."""


def _check_identical_shapes(ctx: Importer, proto: onnx.NodeProto) -> None:
    count = IDENTICAL_SHAPES.get(proto.op_type, 0)
    names = [x for x in proto.input[:count] if x]
    dims = [_dims(ctx, x) for x in names]
    if any(str(d) != str(dims[0]) for d in dims[1:]):
        got = ", ".join(f"'{x}' {d}" for x, d in zip(names, dims, strict=True))
        raise Node(ctx, proto).error(
            f"inputs must have identical shapes (no broadcasting), got {got}"
        )


def _dims(ctx: Importer, name: str) -> list:  # type: ignore[type-arg]
    """The dims of value `name`: sizes, symbolic sizes, `?` for unnamed dynamic ones."""
    if name in ctx.known:
        return list(ctx.known[name].shape)
    v = ctx.value(name)
    return sym_of(ctx, v) or ["?" if d == DYN else d for d in shape(v)]


def _body_version(versions: Sequence[int], opset: int) -> int:
    """The newest opset a schema has a function body for, not newer than the model's
    (a body is stored under the opsets it was rewritten for: CenterCropPad's under 18
    only, so asking for 21 gives none)."""
    return max((v for v in versions if v <= opset), default=opset)


def _rename(nodes: Sequence[onnx.NodeProto], names: set[str], prefix: str) -> None:
    """Prefix `names` wherever `nodes` (and their subgraphs) read or write them, keeping
    the inliner's internal names apart from the outer graph's (and from other calls)."""
    for nd in nodes:
        for i, v in enumerate(nd.input):
            if v in names:
                nd.input[i] = prefix + v
        for i, v in enumerate(nd.output):
            if v in names:
                nd.output[i] = prefix + v
        for a in nd.attribute:
            for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                _rename(g.node, names, prefix)
                for vi in [*g.output]:
                    if vi.name in names:
                        vi.name = prefix + vi.name


EXPANDERS.append(expand_function)


def _known_bool(v: Val) -> bool | None:
    return bool(np.asarray(v).reshape(-1)[0]) if isinstance(v, np.ndarray) else None


@converter("If", attrs=("then_branch", "else_branch"))
def if_(n: Node) -> list[Val]:
    name = n.proto.input[0]
    cond = n.ctx.known.get(name)
    if cond is not None:
        branch = n.attr("then_branch" if _known_bool(cond) else "else_branch")
        return n.ctx.run_body(branch, [])
    c = n.input(0)
    if elem(c) != IntegerType(1):
        raise n.error(f"the condition must be a bool tensor, got {c.type}")
    if shape(c) != ():
        if DYN not in shape(c) and int(np.prod(shape(c))) != 1:
            raise n.error(f"the condition must have one element, got {c.type}")
        c = n.reshape(c, [])
    blocks = [Block(), Block()]
    outs = [
        n.ctx.run_region(n.attr(b), [], blk)
        for b, blk in zip(("then_branch", "else_branch"), blocks, strict=True)
    ]
    ys = [n.ctx.yield_values(blk, o) for blk, o in zip(blocks, outs, strict=True)]
    if len(ys[0]) != len(ys[1]):
        raise n.error(f"the branches have {len(ys[0])} and {len(ys[1])} outputs")
    types = []
    for t, e in zip(*ys, strict=True):
        st, se = shape(t), shape(e)
        if len(st) != len(se) or elem(t) != elem(e):
            raise n.error(
                f"a runtime condition needs branches of one type, got {t.type} and {e.type}"
            )
        types.append(tensor([a if a == b else DYN for a, b in zip(st, se, strict=True)], elem(t)))
    op = IfOp(c, types, Region(blocks[0]), Region(blocks[1]))
    n.ctx.g.add_op(op)
    return list(op.results)
