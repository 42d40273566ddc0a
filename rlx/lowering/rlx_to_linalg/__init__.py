"""`convert-rlx-to-linalg`: rlx tensor ops -> memref functions calling linalg/scf kernels.

`bufferize` holds the bufferizing function conversion and the kernel registry; one module per
op family emits kernel bodies (`elementwise`, `matmul`, `reductions`, `norms`,
`shape_ops`, ...), gathered by name in `registry`.
"""

from rlx.lowering.rlx_to_linalg.bufferize import ConvertRlxToLinalgPass

__all__ = ["ConvertRlxToLinalgPass"]
