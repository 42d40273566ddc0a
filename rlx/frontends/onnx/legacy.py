"""Old op versions (opsets 7-12, e.g. most of the ONNX Model Zoo) rewritten to their
current form before conversion, so the converters only know the modern signatures.

* Operands that later versions moved from attributes to inputs become compile-time
  inputs: Slice < 10 (`starts`, `ends`, `axes`), Pad < 11 (`pads`, `value`), Clip < 11
  (`min`, `max`), TopK < 10 (`k`), Upsample < 9 (`scales`). (The converters of Squeeze,
  Unsqueeze, Split and the reductions read the old `axes` / `split` attributes
  themselves.)
* Attributes that only old versions have are dropped when they hold the value that
  means today's behaviour (BatchNormalization `spatial` = 1 and `is_test` = 1, Dropout
  `is_test` = 1, `consumed_inputs` of opsets <= 5); any other value is an
  `OnnxImportError` naming the node (`Node.error`).

Ops whose old versions only lacked negative axes / indices (Concat, Flatten, Gather < 11)
need no rewrite: the converters accept a superset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import helper

from rlx.dtypes import numpy_dtype

if TYPE_CHECKING:
    from rlx.frontends.onnx.importer import Importer
    from rlx.frontends.onnx.node import Node

MOVED: dict[str, tuple[int, dict[str, tuple[int, str]]]] = {
    "Slice": (10, {"starts": (1, "i64"), "ends": (2, "i64"), "axes": (3, "i64")}),
    "Pad": (11, {"pads": (1, "i64"), "value": (2, "data")}),
    "Clip": (11, {"min": (1, "data"), "max": (2, "data")}),
    "TopK": (10, {"k": (1, "i64")}),
    "Upsample": (9, {"scales": (1, "f32")}),
}
"""op -> (first opset with the inputs, {attribute: (input index, dtype)}); dtype "data"
is the element type of input 0."""

DROPPED: dict[str, dict[str, int | None]] = {
    "BatchNormalization": {"spatial": 1, "is_test": 1, "consumed_inputs": None},
    "Dropout": {"is_test": 1},
}
"""op -> {old attribute: the value meaning today's behaviour (None: any value)}."""


def modernize(imp: Importer, node: Node) -> onnx.NodeProto:
    """The proto of `node` in its current-opset form (itself when nothing changes)."""
    proto = node.proto
    op, opset = proto.op_type, imp.opset
    attrs = {a.name: a for a in proto.attribute}
    moved = MOVED.get(op)
    drop = {k: v for k, v in DROPPED.get(op, {}).items() if k in attrs}
    if "consumed_inputs" in attrs and opset <= 5:
        drop["consumed_inputs"] = None
    if not drop and (moved is None or opset >= moved[0] or not set(attrs) & set(moved[1])):
        return proto
    for k, want in drop.items():
        got = helper.get_attribute_value(attrs[k])
        if want is not None and got != want:
            raise node.error(f"{k}={got} (opset {opset}) is not supported")
    inputs = list(proto.input)
    keep = [a for a in proto.attribute if a.name not in drop]
    if moved is not None and opset < moved[0]:
        keep = [a for a in keep if a.name not in moved[1]]
        for k, (i, dt) in moved[1].items():
            if k not in attrs:
                continue
            value = np.asarray(helper.get_attribute_value(attrs[k]))
            dtype = (
                _data_dtype(imp, proto)
                if dt == "data"
                else {"i64": np.int64, "f32": np.float32}[dt]
            )
            const = f"{node.name}::{k}"
            imp.known[const] = value.astype(dtype)
            inputs += [""] * (i + 1 - len(inputs))
            inputs[i] = const
    new = helper.make_node(op, inputs, list(proto.output), name=proto.name, domain=proto.domain)
    new.attribute.extend(keep)
    return new


def _data_dtype(imp: Importer, proto: onnx.NodeProto) -> np.dtype:
    x = proto.input[0]
    if x in imp.known:
        return imp.known[x].dtype
    return np.dtype(numpy_dtype(imp.value(x).type.element_type))  # type: ignore[attr-defined]
