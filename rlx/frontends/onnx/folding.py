"""Import-time evaluation of nodes whose inputs are all compile-time values, with ONNX's
reference evaluator (or on symbolic sizes, `symbolic.fold_symbolic`); tried before any
converter is looked up."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import helper

from rlx.frontends.onnx.symbolic import concrete, fold_symbolic, is_symbolic

if TYPE_CHECKING:
    from rlx.frontends.onnx.importer import Importer, Node

_NO_FOLD = frozenset(
    "RandomNormal RandomUniform RandomNormalLike RandomUniformLike Bernoulli Multinomial"
    " Range ConstantOfShape MelWeightMatrix".split()
)
_FOLD_LIMIT = 1 << 20
"""Nodes whose inputs are all compile-time constants are evaluated at import time (up to
this many input elements), before a converter is looked up; random ops never are, nor
Range, ConstantOfShape and MelWeightMatrix, whose converters bound the size of what they
make first (a `Range(0, 1e12, 1)` made the reference evaluator allocate terabytes). A
result computed from (unbaked) initializers stays a param (named after the ONNX output),
so folding a weight's Transpose does not bake the weight into the IR."""


def fold(imp: Importer, node: Node) -> bool:
    """Evaluate a node on compile-time constants with ONNX's reference evaluator."""
    names = [n for n in node.proto.input if n]
    if node.op_type in _NO_FOLD or not names or any(n not in imp.known for n in names):
        return False
    if sum(imp.known[n].size for n in names) > _FOLD_LIMIT:
        return False
    if any(is_symbolic(imp.known[n]) for n in names):
        ins = [imp.known[n] if n else None for n in node.proto.input]
        try:
            res = fold_symbolic(node.op_type, node.attrs, ins)
        except (ValueError, IndexError, TypeError):  # SymbolicDimError too: the
            res = None  # converter may handle the symbolic operand, or says why not
        if res is None:
            return False
        for o, r in zip(node.proto.output, res, strict=False):
            imp.known[o] = concrete(np.asarray(r, dtype=object))
        return True
    if any(
        a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for a in node.proto.attribute
    ):
        return False  # subgraphs may read outer values: the converters handle them
    from onnx.reference import ReferenceEvaluator

    ins = [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in names]
    outs = [
        helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None)
        for n in node.proto.output
        if n
    ]
    g = helper.make_graph([node.proto], "fold", ins, outs)
    m = helper.make_model(g, opset_imports=list(imp.model.opset_import))
    try:
        res = ReferenceEvaluator(m).run(None, {n: imp.known[n] for n in names})
    except Exception:
        return False
    if not all(isinstance(r, np.ndarray | np.generic) for r in res):
        return False  # sequences, optionals
    from_params = not imp.bake and any(n in imp.initializers for n in names)
    for o, r in zip([o.name for o in outs], res, strict=True):
        imp.known[o] = np.asarray(r)
        if from_params and imp.known[o].size > 64:
            imp.initializers.add(o)
    return True
