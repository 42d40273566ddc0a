"""Checks of a node against its ONNX schema before any converter sees it: the number of
inputs, required inputs present, each input's element type among the types the schema
allows (graph inputs, initializers and the values converters emitted; not the arrays
the importer folded, which may be held in another type) and the same type for inputs of
one type parameter (an `And` of uint8 and int64), and the integer attributes
the schema defines as booleans (`BOOL_ATTRS`) 0 or 1.

Why: converters read the inputs they expect and trust their types, so a malformed node
became a silent wrong value (a `Sub` of one input imported as that input, a float
`NegativeLogLikelihoodLoss` target cast to class indices, an integer `LRN`). onnxruntime
refuses such models when it loads them; so does the importer, with an OnnxImportError
naming the node. Ops without a standard schema (other domains) are left to their
converters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType

from rlx.dtypes import numpy_dtype
from rlx.frontends.onnx.registry import OnnxImportError

BOOL_ATTRS = frozenset(
    "align_corners allowzero antialias batch_axis ceil_mode center_point_box"
    " count_include_pad detect_negative detect_positive exclude_outside exclusive fmod"
    " input_forget interleaved inverse is_case_sensitive is_causal keepdims largest layout"
    " linear_before_reset new_axis noop_with_empty_axes onesided periodic reverse saturate"
    " select_last_index sorted storage_order time_axis training_mode transA transB upper"
    " spatial is_test broadcast".split()
)
"""INT attributes whose schema description allows only 0 and 1 (every op that has them;
the last three of opsets before 7 / 9). Converters read them as `bool(value)`, where
onnx.reference and onnxruntime disagree on other values (`Mod` fmod=3) or refuse them
(MaxPool storage_order=3): an OnnxImportError naming the node."""


def _check_bool_attrs(node: Any, proto: onnx.NodeProto) -> None:
    for a in proto.attribute:
        if a.type == onnx.AttributeProto.INT and a.name in BOOL_ATTRS and a.i not in (0, 1):
            raise node.error(f"{a.name} must be 0 or 1, got {a.i}")


def _schema(proto: onnx.NodeProto, opset: int) -> Any:
    try:
        domain = "" if proto.domain == "ai.onnx" else proto.domain  # the importer takes both
        return onnx.defs.get_schema(proto.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def first_opset(op_type: str) -> int:
    """The default-domain opset that added `op_type` (which must exist there)."""
    return min(
        s.since_version for s in onnx.defs.get_all_schemas_with_history()
        if s.name == op_type and s.domain == ""
    )  # fmt: skip


def onnx_type(ctx: Any, name: str) -> str | None:
    """`tensor(<elem>)` of ONNX value `name` as imported so far (None if unknown)."""
    if name in ctx.values:
        t = ctx.values[name].type
        if not isinstance(t, TensorType):
            return None
        try:
            dt = numpy_dtype(t.element_type)
        except (ValueError, KeyError, TypeError):
            return None
    elif name in ctx.known:
        dt = ctx.known[name].dtype
    else:
        return None
    if np.dtype(dt).kind == "O":
        return None  # symbolic sizes (i64 at run time)
    try:
        code = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    except (KeyError, TypeError, ValueError):
        return None
    return f"tensor({onnx.TensorProto.DataType.Name(code).lower()})"


def check_node(ctx: Any, node: Any, proto: onnx.NodeProto) -> None:
    """Raise `node.error(...)` if `proto` does not fit its schema (see the module doc)."""
    _check_bool_attrs(node, proto)
    schema = _schema(proto, ctx.opset)
    if schema is None:
        if proto.domain in ("", "ai.onnx") and onnx.defs.has(proto.op_type):
            raise node.error(
                f"{proto.op_type} does not exist in opset {ctx.opset} (it was added in "
                f"opset {first_opset(proto.op_type)}): the model's opset_import is too old for it"
            )
        return
    n = len(proto.input)
    if not schema.min_input <= n <= schema.max_input:
        want = (f"{schema.min_input}" if schema.min_input == schema.max_input
                else f"{schema.min_input} to {schema.max_input}")  # fmt: skip
        raise node.error(f"takes {want} inputs, got {n}")
    formals = list(schema.inputs)
    if not formals:
        return
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    # Declared and emitted values: arrays the importer computed may be held in another
    # type than ONNX's (a folded Equal of sizes as i64).
    declared = {vi.name for vi in ctx.model.graph.input} | set(ctx.initializers)
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    bound: dict[str, tuple[int, str, str]] = {}  # type parameter -> (input #, name, type)
    for i, name in enumerate(proto.input):
        formal = formals[min(i, len(formals) - 1)]
        if not name:
            if formal.option == single and i < len(formals):
                raise node.error(f"required input #{i} ('{formal.name}') is missing")
            continue
        emitted = name in ctx.values and name not in ctx.known
        have = onnx_type(ctx, name) if name in declared or emitted else None
        ok = allowed.get(formal.type_str, {formal.type_str})
        if have is not None and have not in ok and any(t.startswith("tensor(") for t in ok):
            takes = ", ".join(sorted(t[7:-1] for t in ok if t.startswith("tensor(")))
            raise node.error(
                f"input #{i} ('{name}') is {have[7:-1]}; {proto.op_type} takes {takes} there"
            )
        # One type per parameter, where the parameter is homogeneous (a variadic one such as
        # Loop's and Scan's carried values `V` may hold a different type per input).
        if have is not None and formal.type_str in allowed and formal.is_homogeneous:
            j, other, was = bound.setdefault(formal.type_str, (i, name, have))
            if was != have:
                raise node.error(
                    f"input #{i} ('{name}') is {have[7:-1]} but input #{j} ('{other}') is "
                    f"{was[7:-1]}; {proto.op_type} takes one type {formal.type_str} for both"
                )


def check_graph(model: onnx.ModelProto, opset: int, has_default_domain: bool) -> None:
    """Raise OnnxImportError for a top-level graph onnxruntime refuses to load: a default
    domain opset beyond what the installed `onnx` knows (its ops' meaning there is not
    known) or missing while default-domain nodes use it, a graph input or initializer
    listed twice, a value defined twice (ONNX graphs are in SSA form: a second node
    writing `y` silently replaced the first one's value), a declared dim below -1 (some
    exporters write -1 for an unknown dim: imported as a dynamic one)."""
    graph = model.graph
    newest = onnx.defs.onnx_opset_version()
    if has_default_domain and opset > newest:
        raise OnnxImportError(
            f"model uses opset {opset}; the importer knows opsets up to {newest} "
            f"(onnx {onnx.__version__})"
        )
    if not has_default_domain and any(p.domain in ("", "ai.onnx") for p in graph.node):
        raise OnnxImportError("the model's opset_import has no entry for the default domain ('')")
    seen: set[str] = set()
    for what, names in (("graph input", [vi.name for vi in graph.input]),
                        ("initializer", [t.name for t in graph.initializer])):  # fmt: skip
        listed: set[str] = set()
        for x in names:
            if x in listed:
                raise OnnxImportError(f"{what} '{x}' is listed twice")
            listed.add(x)
        seen |= listed
    for proto in graph.node:
        for out in proto.output:
            if out and out in seen:
                who = proto.name or proto.output[0]
                raise OnnxImportError(
                    f"node '{who}' ({proto.op_type}): output '{out}' is already defined "
                    "(a graph input, an initializer or an earlier node's output)"
                )
            seen.add(out)
    for vi in graph.input:
        dims = vi.type.tensor_type.shape.dim
        if any(d.HasField("dim_value") and d.dim_value < -1 for d in dims):  # -1: unknown
            sizes = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims]
            raise OnnxImportError(f"graph input '{vi.name}' has a negative dim: {sizes}")
    inits = {t.name: t for t in graph.initializer}
    for vi in graph.input:
        if vi.name in inits:
            _check_default(vi, inits[vi.name])


def _check_default(vi: onnx.ValueInfoProto, init: onnx.TensorProto) -> None:
    """An initializer named like a graph input is that input's default value (ONNX IR >= 4;
    older models list every weight as an input): it is imported as the param of that name,
    which `set_param` overrides, as onnxruntime lets a caller feed it. Its type and shape
    must be the declared ones (onnxruntime: "Type Error"); a dim_param, a -1 or no shape
    matches any size. Was: the declaration was ignored and the data's type and shape won."""
    tt = vi.type.tensor_type
    name = onnx.TensorProto.DataType.Name
    if tt.elem_type and tt.elem_type != init.data_type:
        raise OnnxImportError(
            f"graph input '{vi.name}' is declared {name(tt.elem_type)} but its initializer "
            f"(default value) is {name(init.data_type)}"
        )
    if not tt.HasField("shape"):
        return
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None
            for d in tt.shape.dim]  # fmt: skip
    have = list(init.dims)
    if len(dims) != len(have) or any(
        d is not None and d != a for d, a in zip(dims, have, strict=True)
    ):
        shown = ["?" if d is None else d for d in dims]
        raise OnnxImportError(
            f"graph input '{vi.name}' is declared of shape {shown} but its initializer "
            f"(default value) has shape {have}"
        )
