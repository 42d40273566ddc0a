"""ONNX → rlx importer core: graph inputs, initializers, constants and node dispatch.

Values are tracked by ONNX name. A value is either an emitted SSA value or a *known*
constant (a NumPy array: Constant nodes, initializers, folded shape computations); known
values are materialized lazily as `rlx.param` (initializers, unless baked) or
`rlx.constant` when an op uses them as data, and read directly when an op needs a
compile-time operand (Reshape's shape, Slice's starts, ...).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, SSAValue

from rlx.builder import Graph
from rlx.dialects.rlx.base import DYN, tensor
from rlx.dialects.rlx.control import YieldOp
from rlx.dtypes import element_type, numpy_dtype
from rlx.frontends.onnx.dims import dim_name, infer_symbolic_shapes
from rlx.frontends.onnx.folding import fold
from rlx.frontends.onnx.legacy import modernize
from rlx.frontends.onnx.node import Node, check_sizes, elem, is_static, locate, shape
from rlx.frontends.onnx.registry import CONVERTERS, DOMAINS, EXPANDERS, OnnxImportError
from rlx.frontends.onnx.schema_checks import check_graph, check_node
from rlx.frontends.onnx.symbolic import Dim, SymbolicDimError, is_symbolic, materialize_symbolic

MIN_OPSET = 1
OP_MIN_OPSET = {"Resize": 10, "Range": 11, "QuantizeLinear": 10, "DequantizeLinear": 10}
"""Ops whose older versions differ in meaning: rejected. Old versions that only took
operands as attributes are rewritten first (`legacy.modernize`: Slice < 10, Pad / Clip <
11, TopK < 10, Upsample < 9); other changed attributes are
caught by the converters' attribute lists; Softmax/LogSoftmax/Hardmax below 13 use their
opset-11 meaning (coerced to 2-D at `axis`)."""


def onnx_elem(onnx_type: int) -> Attribute:
    """rlx element type of an ONNX TensorProto data type (OnnxImportError if none)."""
    try:
        return element_type(helper.tensor_dtype_to_np_dtype(onnx_type))
    except Exception:
        name = onnx.TensorProto.DataType.Name(onnx_type)
        raise OnnxImportError(f"ONNX element type {name} has no rlx element type") from None


class Importer:
    """Translates one onnx.GraphProto into an rlx `Graph`."""

    def __init__(
        self,
        model: onnx.ModelProto,
        bake_initializers: bool,
        constants: Mapping[str, Any],
        dims: Mapping[str, int],
    ) -> None:
        self.model = model
        self.bake = bake_initializers
        self.frozen = dict(constants)
        self.dims = dict(dims)
        bad = {
            k: v
            for k, v in self.dims.items()
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0
        }
        if bad:
            raise OnnxImportError(f"dims must be integers >= 0, got {bad}")
        self.bound_dims: set[str] = set()
        self.g = Graph()
        self.values: dict[str, SSAValue] = {}
        self.known: dict[str, np.ndarray] = {}
        self.initializers: set[str] = set()
        self.params: dict[str, np.ndarray] = {}
        self.arg_attrs: list[dict[str, Attribute]] = []
        self.sym_shapes: dict[str, list[int | str | None]] = {}
        self.unseeded_random = 0
        """Random ops without a `seed` converted so far (`ops_random`: their streams)."""
        """ONNX value name -> dims (sizes, dim names, None if unknown)."""
        self.dim_names: set[str] = set()
        self.generated_dims: list[str] = []
        self.ssa_dims: dict[SSAValue, list[Any]] = {}
        """Symbolic dims of values the importer shaped from symbolic sizes."""
        opset = {o.domain: o.version for o in model.opset_import}
        self.opset = opset.get("", opset.get("ai.onnx", 0))
        self.has_default_domain = "" in opset or "ai.onnx" in opset

    def value(self, name: str) -> SSAValue:
        """The SSA value of ONNX value `name` (materializing known constants)."""
        if name in self.values:
            return self.values[name]
        if name not in self.known:
            raise OnnxImportError(f"value '{name}' is used before it is defined")
        arr = self.known[name]
        if is_symbolic(arr):  # sizes used as data: computed at run time
            v = materialize_symbolic(self, arr)
            self.values[name] = v
            return v
        if name in self.initializers and not self.bake:
            pname, k = name, 1
            while pname in self.params and not _same(self.params[pname], arr):
                pname, k = f"{name}__{k}", k + 1  # a body's folded value of another value
            v = self.g.param(pname, arr.shape, element_type(arr.dtype))
            self.params[pname] = arr
        else:
            v = self.materialize(arr)
        _hint(v, name)
        self.values[name] = v
        return v

    def run_body(
        self,
        graph: onnx.GraphProto,
        bind: Sequence[SSAValue | np.ndarray | None],
        keep: bool = True,
    ) -> list[SSAValue | np.ndarray]:
        """Import a subgraph (If branch, Loop/Scan body, function body) inline.

        Its inputs are bound to `bind` (SSA values or compile-time arrays); outer values
        stay visible; names it defines are dropped afterwards, so a body can be imported
        once per unrolled iteration. Returns its outputs (known arrays stay arrays).
        Outer constants it materializes stay materialized when `keep` (not when the body
        is emitted into a region block, whose values the outer graph cannot see)."""
        saved = dict(self.values), dict(self.known), set(self.initializers)
        local = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
        local |= {o for nd in graph.node for o in nd.output}
        try:
            for vi, b in zip(graph.input, bind, strict=False):
                self.values.pop(vi.name, None)
                self.known.pop(vi.name, None)
                if isinstance(b, np.ndarray):
                    self.known[vi.name] = b
                elif b is not None:
                    self.values[vi.name] = b
            for t in graph.initializer:
                self.known[t.name] = initializer_array(t)
            for proto in graph.node:
                self._convert(proto)
            return [  # in a region, weights stay params (not constants baked in the body)
                self.known[o.name]
                if o.name in self.known and (keep or o.name not in self.initializers)
                else self.value(o.name)
                for o in graph.output
            ]
        finally:
            inner = self.values
            self.values, self.known, self.initializers = saved
            # outer constants materialized inside the body stay materialized (one param each)
            if keep:
                self.values.update({k: v for k, v in inner.items() if k not in local})

    def run_region(
        self, graph: onnx.GraphProto, bind: Sequence[SSAValue | np.ndarray | None], block: Block
    ) -> list[SSAValue | np.ndarray]:
        """Import subgraph `graph` into `block` (the body of a region op being built, which
        reads outer values directly); returns its outputs like `run_body`."""
        with self.g.building(block):
            return self.run_body(graph, bind, keep=False)

    def yield_values(self, block: Block, outs: Sequence[SSAValue | np.ndarray]) -> list[SSAValue]:
        """End `block` with `rlx.yield` of `outs` (known arrays materialized in `block`)."""
        with self.g.building(block):
            vals = [
                (materialize_symbolic(self, v) if is_symbolic(v) else self.materialize(v))
                if isinstance(v, np.ndarray)
                else v
                for v in outs
            ]
        block.add_op(YieldOp(*vals))
        return vals

    def materialize(self, arr: np.ndarray) -> SSAValue:
        try:
            return self.g.constant(arr, dtype=element_type(arr.dtype))
        except ValueError as e:
            raise OnnxImportError(f"constant of dtype {arr.dtype}: {e}") from None

    # ---------------------------------------------------------------- graph
    def run(self) -> tuple[ModuleOp, dict[str, np.ndarray]]:
        if self.opset < MIN_OPSET and self.has_default_domain:
            raise OnnxImportError(
                f"model uses opset {self.opset}; the importer needs opset >= {MIN_OPSET}"
            )
        check_graph(self.model, self.opset, self.has_default_domain)
        graph = self.model.graph
        for t in graph.initializer:
            arr = initializer_array(t)
            onnx_elem(t.data_type)
            self.known[t.name] = arr
            self.initializers.add(t.name)
        unknown = sorted(set(self.frozen) - {vi.name for vi in graph.input})
        if unknown:
            raise OnnxImportError(f"constants given for unknown graph input(s) {unknown}")
        for vi in graph.input:
            if vi.name in self.frozen:
                dt = numpy_dtype(onnx_elem(vi.type.tensor_type.elem_type))
                self.known[vi.name] = np.asarray(self.frozen[vi.name], dtype=dt)
            elif vi.name not in self.initializers:
                self._add_input(vi)
        self.dim_names |= {d for s in self.sym_shapes.values() for d in s if isinstance(d, str)}
        unused = sorted(set(self.dims) - self.bound_dims)
        if unused:
            have = sorted(self.dim_names - self.bound_dims)
            raise OnnxImportError(
                f"dims names {unused}, which no graph input has; its dynamic dims: "
                + (", ".join(have) or "none")
            )
        if self.generated_dims:
            warnings.warn(
                "ONNX import: unnamed or clashing dynamic dims got the names "
                + ", ".join(self.generated_dims)
                + " (bind them with dim_binding=)",
                stacklevel=3,
            )
        if any(isinstance(d, str) for s in self.sym_shapes.values() for d in s):
            infer_symbolic_shapes(self)
        for proto in graph.node:
            self._convert(proto)
        outs = [self.value(o.name) for o in graph.output]
        if not outs:
            raise OnnxImportError("the ONNX graph has no outputs")
        for o, v in zip(graph.output, outs, strict=True):
            _check_output_type(o, v)
        self.g.output(*outs)
        try:
            module = self.g.module
        except Exception as e:
            raise OnnxImportError(f"the imported graph does not verify: {e}") from None
        f = module.body.block.first_op
        f.arg_attrs = ArrayAttr([DictionaryAttr(a) for a in self.arg_attrs])  # type: ignore[union-attr]
        f.res_attrs = ArrayAttr(  # type: ignore[union-attr]  # the ONNX output names
            [DictionaryAttr({"rlx.name": StringAttr(o.name)}) for o in graph.output]
        )
        return module, self.params

    def _add_input(self, vi: onnx.ValueInfoProto) -> None:
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise OnnxImportError(f"graph input '{vi.name}' is not a tensor")
        et = onnx_elem(tt.elem_type)
        if not tt.HasField("shape"):
            raise OnnxImportError(f"graph input '{vi.name}' has no shape (unknown rank)")
        dims: list[int] = []
        names: list[Attribute] = []
        syms: list[int | str] = []
        for axis, d in enumerate(tt.shape.dim):
            size: int | None = d.dim_value if d.HasField("dim_value") else None
            if size is None or size < 0:
                name = dim_name(self, vi.name, axis, d.dim_param)
                key = name if name in self.dims else d.dim_param  # its name, or as written
                size = self.dims.get(key)
                if size is not None:  # bound here (a generated name too): no warning
                    self.bound_dims |= {key, name}
                    self.generated_dims = [g for g in self.generated_dims
                                           if not g.startswith(f"{name} ")]  # fmt: skip
            if size is not None:
                dims.append(size)
                names.append(IntegerAttr(size, 64))
                syms.append(size)
            else:
                dims.append(DYN)
                names.append(StringAttr(name))
                syms.append(name)
        self.sym_shapes[vi.name] = syms
        v = self.g.input(vi.name, dims, et)
        self.ssa_dims[v] = [Dim(d) if isinstance(d, str) else d for d in syms]
        attrs: dict[str, Attribute] = {"rlx.name": StringAttr(vi.name)}
        if DYN in dims:
            attrs["rlx.dims"] = ArrayAttr(names)
        self.arg_attrs.append(attrs)
        self.values[vi.name] = v

    def _convert(self, proto: onnx.NodeProto) -> None:
        """Convert one node; an unexpected exception of a converter or of the folding is
        reported as an OnnxImportError naming the node (a malformed model: a blocksize of
        0 dividing, a missing If branch, ...), never raised as it is."""
        node = Node(self, proto)
        try:
            self._convert_node(node)
        except OnnxImportError:
            raise
        except NODE_ERRORS as e:
            detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            raise node.error(f"malformed node ({detail})") from e

    def _convert_node(self, node: Node) -> None:
        block = self.g.current_block
        last = block.last_op
        try:
            self._convert_node_ops(node)
        finally:
            locate(block, last, NameLoc(StringAttr(str(node)), NoneAttr()))
        check_sizes(node, block, last)

    def _convert_node_ops(self, node: Node) -> None:
        proto = node.proto
        domain = "" if proto.domain == "ai.onnx" else proto.domain
        if domain != DOMAINS.get(proto.op_type, ""):
            if domain and domain not in DOMAINS.values():
                raise node.error(f"op domain '{proto.domain}' is not supported")
            what = f"{domain}.{proto.op_type}" if domain else proto.op_type
            hint = _HINTS.get(what, "")
            raise node.error(f"op type '{what}' is not supported{hint}")  # another domain's
        check_node(self, node, proto)
        if self.opset < 13 and (modern := modernize(self, node)) is not proto:
            proto, node = modern, Node(self, modern)  # the same name, today's attributes
        if fold(self, node):
            return
        entry = CONVERTERS.get(proto.op_type)
        if entry is None:
            body = next((b for f in EXPANDERS if (b := f(self, proto)) is not None), None)
            if body is None:
                raise node.error(f"op type '{proto.op_type}' is not supported")
            nodes, opset = body
            outer, self.opset = self.opset, opset
            try:
                for p in nodes:
                    self._convert(p)
            finally:
                self.opset = outer
            return
        fn, allowed = entry
        if self.opset < OP_MIN_OPSET.get(proto.op_type, 0):
            raise node.error(
                f"opset {self.opset} semantics are not supported (needs opset >= {OP_MIN_OPSET[proto.op_type]})"
            )
        if allowed is not None:
            extra = sorted(set(node.attrs) - allowed)
            if extra:
                raise node.error(f"attribute(s) {', '.join(extra)} not supported")
        try:
            outs = list(fn(node))
        except SymbolicDimError as e:
            raise node.error(str(e)) from None
        for name, v in zip(proto.output, outs, strict=False):
            if not name or v is None:
                continue
            if isinstance(v, np.ndarray):
                self.known[name] = v
            else:
                _hint(v, name)
                self.values[name] = v
        for i, name in enumerate(proto.output):
            if name and name not in self.values and name not in self.known:
                raise node.error(f"output #{i} ('{name}') is not supported")


NODE_ERRORS = (ValueError, ArithmeticError, LookupError, TypeError, AttributeError,
               AssertionError, MemoryError, onnx.checker.ValidationError)  # fmt: skip
"""What converters and NumPy raise on malformed nodes (`Importer._convert`)."""


def initializer_array(t: onnx.TensorProto) -> np.ndarray:
    """The value of initializer `t`; OnnxImportError naming it when its data does not fit
    its dims (negative dims, too few values) or cannot be read (external data)."""
    if any(d < 0 for d in t.dims):
        raise OnnxImportError(f"initializer '{t.name}' has negative dims {list(t.dims)}")
    typed = [
        f.name
        for f, _ in t.ListFields()
        if f.name.endswith("_data") and f.name not in ("raw_data", "external_data")
    ]
    if t.HasField("raw_data") and typed:  # which one holds the value is ambiguous
        raise OnnxImportError(f"initializer '{t.name}' holds both raw_data and {typed[0]}")
    try:
        return numpy_helper.to_array(t)
    except NODE_ERRORS as e:
        raise OnnxImportError(f"initializer '{t.name}' (dims {list(t.dims)}): {e}") from None


def _check_output_type(o: onnx.ValueInfoProto, v: SSAValue) -> None:
    """Warn when a graph output is declared of another element type than its value has
    (onnxruntime refuses such a model): the caller gets the value's type, not the declared
    one. A warning, not an error: hand-built models often declare every output float."""
    code = o.type.tensor_type.elem_type if o.type.HasField("tensor_type") else 0
    if not code or not isinstance(v.type, TensorType):
        return
    try:
        declared = onnx_elem(code)
    except OnnxImportError:
        declared = None
    if declared != v.type.element_type:
        name = onnx.TensorProto.DataType.Name(code).lower()
        warnings.warn(
            f"ONNX import: graph output '{o.name}' is declared {name} but its value is "
            f"{v.type.element_type} (returned as {v.type.element_type})",
            stacklevel=4,
        )


_HINTS = {
    "ai.onnx.ml.ZipMap": (
        ": rlx has no sequences or maps; export the probabilities as a tensor (skl2onnx:"
        " options={id(model): {'zipmap': False}})"
    ),
}
"""What to do instead of an op the importer cannot have (appended to its error)."""


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b))


def _hint(v: SSAValue, name: str) -> None:
    hint = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if hint and hint[0].isalpha() and v.name_hint is None:
        try:
            v.name_hint = hint
        except Exception:  # pragma: no cover - xDSL rejects some hints
            pass


def import_model(
    model: str | Path | onnx.ModelProto,
    *,
    bake_initializers: bool = False,
    constants: Mapping[str, Any] | None = None,
    dims: Mapping[str, int] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model (path or ModelProto) as an rlx module.

    Returns `(module, params)`: graph inputs become `@main` arguments (`rlx.name` = the
    ONNX name; dynamic dims are `?` with `rlx.dims` naming them for `bind-dims`);
    initializers become `rlx.param` ops named after the ONNX tensors, whose values are in
    `params` (or `rlx.constant`s with `bake_initializers=True`, `params` then empty).
    `constants` freezes graph inputs to given values (e.g. a Reshape's shape or a
    Reduce's axes fed as inputs): they become compile-time constants, not arguments.
    `dims` fixes dynamic dims at import time, so shape computations on them (Shape ->
    Gather -> Reshape) fold to constants and converters that need static shapes apply:
    a dim by its `dim_param`, an unnamed one (exporters' `?` batch) by the name the
    importer gives it, `<input>_<axis>` (the import warning lists them). A name no
    graph input has, or a size that is not an integer >= 0, is an OnnxImportError.
    Raises OnnxImportError (a ValueError) naming the node, op type and what is missing.
    """
    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(str(model))
        except DecodeError as e:  # OSError (a missing file) stays as it is
            raise OnnxImportError(f"'{model}' is not an ONNX model ({e})") from None
    return Importer(model, bake_initializers, constants or {}, dims or {}).run()


__all__ = ["import_model", "OnnxImportError", "Node", "elem", "shape", "is_static", "tensor"]
