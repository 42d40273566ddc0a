"""Op class -> kernel emitter, gathered from the op-family modules."""

from __future__ import annotations

from xdsl.ir import Operation

from rlx.lowering.rlx_to_linalg import (
    attention,
    conv,
    conv_nchwc_dispatch,
    elementwise,
    layout,
    matmul,
    norms,
    pool,
    quant,
    reductions,
    rng,
    scaled_lowp,
    shape_ops,
    softmax,
)
from rlx.lowering.rlx_to_linalg.kernel_builder import Emitter

LOWERINGS: dict[type[Operation], Emitter] = {
    **elementwise.LOWERINGS,
    **matmul.LOWERINGS,
    **reductions.LOWERINGS,
    **softmax.LOWERINGS,
    **norms.LOWERINGS,
    **shape_ops.LOWERINGS,
    **attention.LOWERINGS,
    **conv.LOWERINGS,
    **pool.LOWERINGS,  # after conv: pool2d's kernel is pool.py's
    **quant.LOWERINGS,
    **scaled_lowp.LOWERINGS,
    **rng.LOWERINGS,
    **layout.LOWERINGS,  # last: routes conv2d / pool2d by their layout attribute
}

layout.NCHWC.update({**conv_nchwc_dispatch.KERNELS, **pool.NCHWC_KERNELS})
"""layout = "nchwc" convs and pools take the blocked kernels (they fall back themselves)."""
