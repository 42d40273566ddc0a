"""Names of the graph inputs' dynamic dims and ONNX shape inference over them (the
symbols that `Shape` of intermediate values reads; see `symbolic`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import onnx

if TYPE_CHECKING:
    from rlx.frontends.onnx.importer import Importer


def dim_name(imp: Importer, value: str, axis: int, param: str) -> str:
    """The symbol of a dynamic input dim: its `dim_param`, or for an anonymous one
    (no name, `?`, `dim_value` < 0) a distinct generated `<input>_<axis>`."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", param or ""):
        imp.dim_names.add(param)
        return param
    base = re.sub(r"[^A-Za-z0-9_]", "_", f"{value}_{axis}")
    base = base if base[0].isalpha() or base[0] == "_" else f"d_{base}"
    name, k = base, 1
    while name in imp.dim_names:
        name, k = f"{base}_{k}", k + 1
    imp.dim_names.add(name)
    imp.generated_dims.append(f"{name} (input '{value}' axis {axis})")
    return name


def infer_symbolic_shapes(imp: Importer) -> None:
    """Symbolic shapes of intermediate values from ONNX shape inference, with the
    graph inputs' dynamic dims named as the importer names them."""
    m = onnx.ModelProto()
    m.CopyFrom(imp.model)
    for vi in m.graph.input:
        syms = imp.sym_shapes.get(vi.name)
        if syms is None or not vi.type.HasField("tensor_type"):
            continue
        for d, sym in zip(vi.type.tensor_type.shape.dim, syms, strict=False):
            if isinstance(sym, str):
                d.Clear()
                d.dim_param = sym
            else:
                d.dim_value = sym
    try:
        m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    except Exception:
        return
    for vi in [*m.graph.value_info, *m.graph.output]:
        tt = vi.type.tensor_type
        if vi.name in imp.sym_shapes or not tt.HasField("shape"):
            continue
        imp.sym_shapes[vi.name] = [
            d.dim_value if d.HasField("dim_value") else
            (d.dim_param if d.dim_param in imp.dim_names else None)
            for d in tt.shape.dim
        ]  # fmt: skip
