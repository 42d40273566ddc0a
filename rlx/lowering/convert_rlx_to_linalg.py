"""`convert-rlx-to-linalg` (file-per-pass entry point; the implementation is the
`rlx.lowering.rlx_to_linalg` package)."""

from rlx.lowering.rlx_to_linalg import ConvertRlxToLinalgPass

__all__ = ["ConvertRlxToLinalgPass"]
