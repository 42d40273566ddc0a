"""Ops with subgraphs and ops defined as ONNX functions, imported inline.

* **Function ops** without a converter (CenterCropPad, SwiGLU, AffineGrid, the window
  ops, Range's and DynamicQuantizeLinear's bodies, ...): the node is replaced by its
  schema's function body (context-dependent ones too), inlined with `onnx.inliner`.
* **If** (opsets 1-25): a compile-time condition imports only the taken branch; otherwise
  both branches are imported and the results selected with `rlx.where` (the branches
  are pure, so this is the conditional's meaning; they must agree in shape and dtype).
* **Loop** (opsets 1-25) and **Scan** (opsets 9-25): unrolled. Loop needs a compile-time
  trip count or a condition that becomes known each iteration; Scan needs a static
  sequence length. Scan outputs are stacked with `rlx.concat`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import defs, helper, inliner
from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.importer import Importer, Node, elem, shape
from rlx.frontends.onnx.registry import EXPANDERS, converter

_MAX_TRIPS = 4096
"""Loops longer than this are not unrolled."""

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


def expand_function(ctx: Importer, proto: onnx.NodeProto) -> list[onnx.NodeProto] | None:
    """The nodes of `proto`'s function body (None if its schema defines none)."""
    try:
        schema = defs.get_schema(proto.op_type, ctx.opset, proto.domain)
    except Exception:
        return None
    fn = onnx.FunctionProto()
    if schema.has_function:
        body = schema.get_function_with_opset_version(ctx.opset)
        if body is None:
            return None
        fn.ParseFromString(body if isinstance(body, bytes) else body.SerializeToString())
    elif schema.has_context_dependent_function:
        types = [_type_proto(ctx, n).SerializeToString() if n else b"" for n in proto.input]
        try:
            body = schema.get_context_dependent_function_with_opset_version(
                ctx.opset, proto.SerializeToString(), types
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
    graph = helper.make_graph([call], "expand", [], [])
    model = helper.make_model(graph, opset_imports=list(ctx.model.opset_import))
    model.functions.append(fn)
    out = inliner.inline_selected_functions(model, [(fn.domain, fn.name)])
    prefix = f"{proto.name or proto.output[0]}__"
    nodes = list(out.graph.node)
    produced = {o for nd in nodes for o in nd.output} - set(proto.output)
    _rename(nodes, produced, prefix)
    return nodes


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


def _value(n: Node, v: Val) -> SSAValue:
    return v if isinstance(v, SSAValue) else n.ctx.materialize(np.asarray(v))


@converter("If", attrs=("then_branch", "else_branch"))
def if_(n: Node) -> list[Val]:
    name = n.proto.input[0]
    cond = n.ctx.known.get(name)
    if cond is not None:
        branch = n.attr("then_branch" if _known_bool(cond) else "else_branch")
        return n.ctx.run_body(branch, [])
    c = n.input(0)
    outs_t = n.ctx.run_body(n.attr("then_branch"), [])
    outs_e = n.ctx.run_body(n.attr("else_branch"), [])
    res = []
    for t, e in zip(outs_t, outs_e, strict=True):
        t, e = _value(n, t), _value(n, e)
        if shape(t) != shape(e) or elem(t) != elem(e):
            raise n.error(
                f"a runtime condition needs branches of one type, got {t.type} and {e.type}"
            )
        res.append(n.emit("where", n.reshape(c, [1] * len(shape(t))), t, e))
    return res


def _stack(n: Node, parts: list[SSAValue], axis: int, reverse: bool) -> SSAValue:
    """Per-iteration values stacked along a new `axis`."""
    if reverse:
        parts = parts[::-1]
    s = list(shape(parts[0]))
    axis = axis + len(s) + 1 if axis < 0 else axis
    s.insert(axis, 1)
    rs = [n.reshape(p, s) for p in parts]
    return rs[0] if len(rs) == 1 else n.emit("concat", *rs, axis=axis)


@converter("Loop", attrs=("body",))
def loop(n: Node) -> list[Val]:
    body = n.attr("body")
    trips = n.const(0, "trip count ") if n.has(0) else None
    if n.has(1) and n.proto.input[1] not in n.ctx.known:
        raise n.error(f"input #1 condition ('{n.proto.input[1]}') must be a constant")
    cond: Val = n.ctx.known[n.proto.input[1]] if n.has(1) else np.array(True)
    m = _MAX_TRIPS + 1 if trips is None else int(np.asarray(trips).reshape(-1)[0])
    carried: list[Val] = [n.ctx.known.get(x, None) if x in n.ctx.known else n.input(i + 2)
                          for i, x in enumerate(n.proto.input[2:])]  # fmt: skip
    n_carried = len(carried)
    scans: list[list[SSAValue]] = []
    it = 0
    while it < m and _known_bool(cond):  # type: ignore[arg-type]
        if it >= _MAX_TRIPS:
            raise n.error(f"loops of more than {_MAX_TRIPS} iterations are not unrolled")
        outs = n.ctx.run_body(body, [np.array(it, np.int64), np.asarray(cond), *carried])
        cond = outs[0]
        if not isinstance(cond, np.ndarray):
            raise n.error("the loop condition must be known at import time (it is unrolled)")
        carried = outs[1 : 1 + n_carried]
        for k, v in enumerate(outs[1 + n_carried :]):
            if len(scans) <= k:
                scans.append([])
            scans[k].append(_value(n, v))
        it += 1
    n_scan = len(body.output) - 1 - n_carried
    if it == 0 and n_scan:
        raise n.error("a loop with zero iterations and scan outputs is not supported")
    return [*carried, *(_stack(n, s, 0, False) for s in scans)]


@converter(
    "Scan",
    attrs=("body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
           "scan_output_axes", "scan_output_directions"),
)  # fmt: skip
def scan(n: Node) -> list[Val]:
    body = n.attr("body")
    k = n.attr("num_scan_inputs")
    names = list(n.proto.input)
    n_state = len(names) - k
    states: list[Val] = [n.ctx.known[x] if x in n.ctx.known else n.input(i)
                         for i, x in enumerate(names[:n_state])]  # fmt: skip
    xs = [n.input(n_state + i) for i in range(k)]
    in_axes = list(n.attr("scan_input_axes", [0] * k))
    in_dirs = list(n.attr("scan_input_directions", [0] * k))
    n_out = len(body.output) - n_state
    out_axes = list(n.attr("scan_output_axes", [0] * n_out))
    out_dirs = list(n.attr("scan_output_directions", [0] * n_out))
    lens = set()
    for i, x in enumerate(xs):
        in_axes[i] %= len(shape(x))
        lens.add(shape(x)[in_axes[i]])
    if len(lens) != 1 or DYN in lens:
        raise n.error(f"scan inputs need one static sequence length, got {sorted(lens)}")
    (steps,) = lens
    outs: list[list[SSAValue]] = [[] for _ in range(n_out)]
    for t in range(steps):
        step = []
        for x, ax, d in zip(xs, in_axes, in_dirs, strict=True):
            s = shape(x)
            j = steps - 1 - t if d else t
            sl = n.emit("slice", x, starts=[j if a == ax else 0 for a in range(len(s))],
                        limits=[j + 1 if a == ax else s[a] for a in range(len(s))])  # fmt: skip
            step.append(n.reshape(sl, [d_ for a, d_ in enumerate(s) if a != ax]))
        res = n.ctx.run_body(body, [*states, *step])
        states = res[:n_state]
        for o, v in enumerate(res[n_state:]):
            outs[o].append(_value(n, v))
    if steps == 0:
        raise n.error("a scan over an empty sequence is not supported")
    return [
        *states,
        *(_stack(n, o, ax, bool(d)) for o, ax, d in zip(outs, out_axes, out_dirs, strict=True)),
    ]
