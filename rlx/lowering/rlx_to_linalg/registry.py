"""Op name -> kernel emitter, gathered from the op-family modules."""

from __future__ import annotations

from rlx.lowering.rlx_to_linalg import (
    attention,
    conv,
    elementwise,
    matmul,
    norms,
    quant,
    reductions,
    rng,
    scaled_lowp,
    shape_ops,
)
from rlx.lowering.rlx_to_linalg.bufferize import Emitter

LOWERINGS: dict[str, Emitter] = {
    **elementwise.LOWERINGS,
    **matmul.LOWERINGS,
    **reductions.LOWERINGS,
    **norms.LOWERINGS,
    **shape_ops.LOWERINGS,
    **attention.LOWERINGS,
    **conv.LOWERINGS,
    **quant.LOWERINGS,
    **scaled_lowp.LOWERINGS,
    **rng.LOWERINGS,
}
