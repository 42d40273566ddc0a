"""Op implementations of the reference interpreter, one module per op family.

Importing this package fills `REGISTRY` (op name -> (function, operand-count range)).
"""

from rlx.interpreter.ops import (  # noqa: F401  (imported for registration)
    elementwise,
    fused,
    gemm,
    layout,
    nn,
    quant,
    reduce,
    regions,
    scalar,
    tensor,
)
from rlx.interpreter.ops._core import REGISTRY

__all__ = ["REGISTRY"]
