"""Op name -> kernel emitter, gathered from the op-family modules."""

from __future__ import annotations

from rlx.lowering.rlx_to_linalg import (
    attention,
    conv,
    elementwise,
    lowp,
    matmul,
    norms,
    quant,
    reductions,
    rng,
    shape_ops,
)
from rlx.lowering.rlx_to_linalg.pass_ import Emitter

LOWERINGS: dict[str, Emitter] = {
    **elementwise.LOWERINGS,
    **matmul.LOWERINGS,
    **reductions.LOWERINGS,
    **norms.LOWERINGS,
    **shape_ops.LOWERINGS,
    **attention.LOWERINGS,
    **conv.LOWERINGS,
    **quant.LOWERINGS,
    **lowp.LOWERINGS,
    **rng.LOWERINGS,
}
