"""ONNX frontend: `import_model(path_or_ModelProto, *, bake_initializers=False)`.

Returns `(module, params)`; see `rlx.frontends.onnx.importer.import_model` and
docs/onnx-coverage.md for the supported ops.
"""

# Importing the op families registers their converters.
from rlx.frontends.onnx import (  # noqa: E402,F401,I001
    loops,
    ops_attention,
    ops_constants,
    ops_deform,
    ops_einsum,
    ops_elementwise,
    ops_index,
    ops_linalg,
    ops_math,
    ops_ml,
    ops_ml_linear,
    ops_nn,
    ops_pairwise,
    ops_quant,
    ops_random,
    ops_reduce,
    ops_resize,
    ops_roi,
    ops_rnn,
    ops_sample,
    ops_scatter,
    ops_spectral,
    ops_tensor,
    ops_text,
    ops_trees,
    ops_window,
    subgraphs,
)
from rlx.frontends.onnx.importer import import_model
from rlx.frontends.onnx.registry import OnnxImportError, supported_ops
from rlx.frontends.onnx.sized import import_sized

__all__ = ["import_model", "import_sized", "OnnxImportError", "supported_ops"]
