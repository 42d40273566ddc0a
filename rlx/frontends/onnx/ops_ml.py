"""`ai.onnx.ml` ops that are plain tensor arithmetic: Binarizer (1) and
ArrayFeatureExtractor (1), as onnx.reference and onnxruntime compute them. Tree ensembles
are in `ops_trees`; classifiers with label maps and ZipMap's sequences of maps are not
converted."""

from __future__ import annotations

from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN, is_float
from rlx.frontends.onnx.node import Node, elem, shape
from rlx.frontends.onnx.ops_index import wrap_index
from rlx.frontends.onnx.registry import converter

ML = "ai.onnx.ml"


@converter("Binarizer", attrs=("threshold",), domain=ML)
def binarizer(n: Node) -> list[SSAValue]:
    """1 where x > threshold (default 0), else 0, in x's type (NaN gives 0)."""
    x = n.input(0)
    xc = x if is_float(elem(x)) else n.cast(x, "f64")  # a threshold of -0.5 for integers
    above = n.emit("compare", xc, n.constant(float(n.attr("threshold", 0.0)), xc), predicate="gt")
    return [n.cast(above, elem(x))]


@converter("ArrayFeatureExtractor", attrs=(), domain=ML)
def array_feature_extractor(n: Node) -> list[SSAValue]:
    """`x[..., indices]` with the indices flattened; a 1-D x gives one row `[1, k]`
    (onnxruntime's shape); an index outside [0, last dim) is a run-time IndexError."""
    x, idx = n.input(0), n.input(1)
    xs, ks = list(shape(x)), list(shape(idx))
    if not xs or DYN in ks:
        raise n.error(f"ArrayFeatureExtractor needs a tensor and static indices, got {xs}, {ks}")
    k = 1
    for d in ks:
        k *= d
    at = wrap_index(n, n.reshape(idx, [k]), xs[-1], negative=False)
    y = n.emit("gather", x, n.cast(at, "i64"), axis=len(xs) - 1)
    return [n.reshape(y, [1, k]) if len(xs) == 1 else y]
