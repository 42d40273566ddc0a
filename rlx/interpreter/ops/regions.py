"""Region-carrying rlx ops: scan, if and elementwise_region."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Block

from rlx.dialects.rlx.control import ElementwiseRegionOp, IfOp, ScanOp
from rlx.interpreter.ops._core import OpContext, convert, numpy_dtype, register, to_python


def _single_block(ctx: OpContext) -> Block:
    src = ctx.source
    assert src is not None
    if len(src.regions) != 1 or len(src.regions[0].blocks) != 1:
        raise ctx.error("expects exactly one region with one block")
    block = src.regions[0].blocks.first
    assert block is not None
    return block


def _segments(ctx: OpContext, n_operands: int) -> tuple[int, int]:
    src = ctx.source
    assert src is not None
    seg = src.properties.get("operandSegmentSizes") or src.attributes.get("operandSegmentSizes")
    if seg is None:
        raise ctx.error("missing 'operandSegmentSizes' property")
    sizes = tuple(to_python(seg))
    if len(sizes) != 2 or sum(sizes) != n_operands:
        raise ctx.error(f"operandSegmentSizes {sizes} does not split {n_operands} operands")
    return int(sizes[0]), int(sizes[1])


@register(ScanOp, nargs=(0, None))
def scan(ctx: OpContext, *operands: np.ndarray) -> list[np.ndarray]:
    """rlx.scan(inits..., xs...) {length}: jax.lax.scan.

    Step t runs the body on (carries..., xs[0][t], xs[1][t], ...); the body yields
    (next carries..., per-step outputs...).  Results: the final carries, then each
    per-step output stacked along a new axis 0 (empty with the declared shape when
    length is 0).  Carries keep the dtype of their block arguments.
    """
    n_init, n_xs = _segments(ctx, len(operands))
    length = ctx.op.length
    block = _single_block(ctx)
    if len(block.args) != n_init + n_xs:
        raise ctx.error(f"body takes {len(block.args)} arguments, expected {n_init + n_xs}")
    carries = list(operands[:n_init])
    xs = operands[n_init:]
    for i, x in enumerate(xs):
        if x.ndim == 0 or x.shape[0] != length:
            raise ctx.error(f"xs operand {i} has shape {x.shape}; axis 0 must be {length}")
    n_ys = len(ctx.op.results) - n_init
    steps: list[list[np.ndarray]] = [[] for _ in range(n_ys)]
    for t in range(length):
        outs = ctx.run_block(block, carries + [x[t] for x in xs])
        if len(outs) != n_init + n_ys:
            raise ctx.error(f"body yields {len(outs)} values, expected {n_init + n_ys}")
        carries = [
            convert(v, numpy_dtype(a.type))
            for v, a in zip(outs[:n_init], block.args[:n_init], strict=True)
        ]
        for k, y in enumerate(outs[n_init:]):
            steps[k].append(np.asarray(y))
    ys = []
    for k in range(n_ys):
        if length:
            ys.append(np.stack(steps[k], axis=0))
        else:
            ys.append(np.zeros(ctx.result_shape(n_init + k), dtype=ctx.result_dtype(n_init + k)))
    return carries + ys


@register(IfOp, nargs=(1, 1))
def if_(ctx: OpContext, cond: np.ndarray) -> list[np.ndarray]:
    """rlx.if(cond): the values yielded by the then region when the one-element `cond` is
    true, else by the else region. Only the taken region runs, so an error of the data in
    the other one (an out-of-range index) is not raised."""
    src = ctx.source
    assert src is not None
    if cond.size != 1:
        raise ctx.error(f"condition has shape {cond.shape}; it must have one element")
    if len(src.regions) != 2 or any(len(r.blocks) != 1 for r in src.regions):
        raise ctx.error("expects two regions (then, else) with one block each")
    block = src.regions[0 if bool(cond.reshape(-1)[0]) else 1].blocks.first
    assert block is not None
    outs = ctx.run_block(block, [])
    if len(outs) != len(src.results):
        raise ctx.error(
            f"the taken region yields {len(outs)} values, the op has {len(src.results)}"
        )
    return [convert(np.asarray(v), ctx.result_dtype(i)) for i, v in enumerate(outs)]


@register(ElementwiseRegionOp, nargs=(0, None))
def elementwise_region(ctx: OpContext, *inputs: np.ndarray) -> list[np.ndarray]:
    """rlx.elementwise_region(inputs...): the scalar body applied over the broadcast inputs.

    The body runs once on whole broadcast arrays (its arith/math ops are NumPy ufuncs);
    a body result that does not depend on the inputs is broadcast to the result shape.
    One result per yielded value.
    """
    block = _single_block(ctx)
    if len(block.args) != len(inputs):
        raise ctx.error(f"body takes {len(block.args)} arguments, got {len(inputs)} inputs")
    try:
        args = list(np.broadcast_arrays(*inputs)) if inputs else []
    except ValueError:
        raise ctx.error(f"inputs {[x.shape for x in inputs]} do not broadcast") from None
    args = [convert(x, numpy_dtype(a.type)) for x, a in zip(args, block.args, strict=True)]
    outs = ctx.run_block(block, args)
    if len(outs) != len(ctx.op.results):
        raise ctx.error(f"body yields {len(outs)} values, the op has {len(ctx.op.results)}")
    return [np.broadcast_to(np.asarray(o), ctx.result_shape(i)) for i, o in enumerate(outs)]
