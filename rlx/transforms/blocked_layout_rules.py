"""Which ops the `blocked-layout` pass can run in NCHWc, and how (one `Plan` per op).

A plan says, for each operand, how it becomes blocked (`ACT`: an activation
`[N, C, H, W]` -> `[N, C/B, H, W, B]`, the edges of a blocked region; `NARROW`: the
input of a conv whose channels are not blockable (a stem's 3), reshaped to
`[N, C, H, W, 1]`, blocked by 1: no copy, the conv writes blocked output; `SPREAD`: a
broadcast operand without the channel dim, reshaped to `[n, 1, h, w, 1]`; `WEIGHT`: a
conv weight reordered to the blocked weight layout; `KEEP`: unchanged), the channel
counts the block must divide, and how to build the blocked op from converted operands.
The rules are per op *kind* (trait or class), not per op name: every elementwise op
(the `Elementwise` precision class, `rlx.cast`), `rlx.elementwise_region`, conv2d /
fused_conv2d_residual (groups 1 or depthwise; groups 1 with unblockable input channels
reads x blocked by 1), pool2d, concat (channel or spatial axis:
pad), gather and slice on the spatial axes (resize, crop, pad), reductions over H and W
(global pooling), and broadcast_to of a scalar (the fill of a pad).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from rlx.dialects.rlx.base import DYN, normalize_axis, shape_of, tensor
from rlx.dialects.rlx.compute import ReduceOp
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.dialects.rlx.elementwise import CastOp
from rlx.dialects.rlx.fields import encode_ints
from rlx.dialects.rlx.fused import FusedConv2dResidualOp
from rlx.dialects.rlx.layout import blocked
from rlx.dialects.rlx.precision_classes import ELEMENTWISE
from rlx.dialects.rlx.shape import BroadcastToOp, ConcatOp, GatherOp, ReshapeOp, SliceOp
from rlx.dialects.rlx.traits import precision_class
from rlx.dialects.rlx.window import Conv2dOp, Pool2dOp, conv2d_type

ACT, NARROW, SPREAD, WEIGHT, KEEP = "act", "narrow", "spread", "weight", "keep"

MIN_BLOCK = 8
"""The smallest block the pass uses: every blocked channel count is a multiple of it."""

Build = Callable[[Operation, list[SSAValue], int], list[Operation]]
"""(old op, converted operands, block) -> new ops; the last one's result replaces the
op's result (blocked, or NCHW-shaped when the plan is a `sink`)."""


@dataclass(frozen=True)
class Plan:
    """How one op runs blocked (module docstring)."""

    kinds: tuple[str, ...]
    channels: tuple[int, ...]
    build: Build
    convs: int = 0
    sink: bool = False
    """The result stays NCHW-shaped (a reduction to [N, C]): only the input is blocked."""
    depthwise: bool = False
    """A depthwise conv: its weight takes the `[C/B, 1, KH, KW, 1, B]` layout."""
    narrow: bool = False
    """A conv reading x blocked by 1 (`NARROW`): its weight takes `[F/B, C, KH, KW, 1, B]`."""

    @property
    def weight_lanes_one(self) -> bool:
        """The weight's input-lane dim is 1 (depthwise or narrow)."""
        return self.depthwise or self.narrow


def _static4(t: Attribute) -> tuple[int, ...] | None:
    if not isinstance(t, TensorType):
        return None
    s = shape_of(t)
    return s if len(s) == 4 and DYN not in s else None


def _same_kind(op: Operation, operands: list[SSAValue], block: int) -> list[Operation]:
    """The op itself on blocked operands, its result type blocked (elementwise ops)."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return [
        type(op).create(
            operands=operands,
            result_types=[blocked(t, block)],
            attributes=dict(op.attributes),
            properties=dict(op.properties),
            regions=[r.clone() for r in op.regions],
        )
    ]


def _with_attrs(**changes: Callable[[Operation], Attribute]) -> Build:
    """`_same_kind` with some attributes rewritten for the rank-5 operand."""

    def build(op: Operation, operands: list[SSAValue], block: int) -> list[Operation]:
        (new,) = _same_kind(op, operands, block)
        for k, f in changes.items():
            new.attributes[k] = f(op)
        return [new]

    return build


def broadcast_kind(s: Sequence[int], out: Sequence[int]) -> str | None:
    """How an operand of shape `s` of an elementwise op with NCHW result `out` is blocked."""
    if all(d == 1 for d in s):
        return KEEP  # a scalar broadcasts against the blocked shape as is
    if len(s) > 4:
        return None
    s4 = (1,) * (4 - len(s)) + tuple(s)
    if any(a not in (1, b) for a, b in zip(s4, out, strict=True)):
        return None
    return ACT if s4[1] == out[1] else SPREAD


def _elementwise(op: Operation) -> Plan | None:
    out = _static4(op.results[0].type)
    if out is None or out[1] % MIN_BLOCK:
        return None
    kinds = []
    for v in op.operands:
        k = broadcast_kind(shape_of(v.type), out) if isinstance(v.type, TensorType) else None
        if k is None:
            return None
        kinds.append(k)
    if ACT not in kinds:
        return None
    return Plan(tuple(kinds), (out[1],), _same_kind)


_FLOATS = (Float32Type, Float16Type, BFloat16Type)


def _conv(op: Operation, narrow_convs: bool) -> Plan | None:
    assert isinstance(op, Conv2dOp | FusedConv2dResidualOp)
    xs, ws, out = (_static4(v.type) for v in (op.x, op.w, op.results[0]))
    if op.layout != "nchw" or xs is None or ws is None or out is None:
        return None
    if not isinstance(op.x.type.element_type, _FLOATS):  # type: ignore[attr-defined]
        return None
    c, f, g = xs[1], ws[0], op.groups
    depthwise = g > 1 and g == c == f and ws[1] == 1
    if f % MIN_BLOCK or not (g == 1 or depthwise):
        return None
    # Input channels that are not blockable (the 3 of an image): x blocked by 1, a
    # reshape; the conv writes blocked output (oneDNN's first-layer kernel). Not on 1x1
    # maps (squeeze-excitation convs of 4-28 channels): they keep the NCHW pointwise
    # kernel (not measured against a one-pixel blocked tile), and their [N, F, 1, 1]
    # result enters a region as a reshape anyway, no copy.
    narrow = narrow_convs and g == 1 and c % MIN_BLOCK != 0 and out[2] * out[3] > 1
    if c % MIN_BLOCK and not narrow:
        return None
    kinds = [NARROW if narrow else ACT, WEIGHT]
    kinds += [ACT] if isinstance(op, FusedConv2dResidualOp) else []
    kinds += [KEEP] * (len(op.operands) - len(kinds))  # the bias [F]

    pooled = op.reduce == "mean"

    def build(op: Operation, operands: list[SSAValue], block: int) -> list[Operation]:
        layout = op.fields()["layout"].encode("nchwc")  # type: ignore[attr-defined]
        if not pooled:
            (new,) = _same_kind(op, operands, block)
            new.attributes["layout"] = layout
            return [new]
        # A pooled conv (reduce = "mean", result [N, F, 1, 1]) runs as the blocked conv
        # and the blocked global mean: the blocked kernels are faster than the NCHW ones
        # the fused form takes, and [N, F/B, 1, 1, B] is [N, F, 1, 1] reshaped.
        t = op.results[0].type
        assert isinstance(t, TensorType)
        attrs = {k: v for k, v in op.attributes.items() if k != "reduce"} | {"layout": layout}
        conv = type(op).create(operands=operands, attributes=attrs,
                               result_types=[blocked(_unreduced(op), block)])  # fmt: skip
        red = ReduceOp(conv.results[0], kind="mean", axes=(2, 3), keepdims=True)
        return [conv, red, ReshapeOp(red.results[0], result_types=[t])]

    chans = (f,) if narrow else (c, f)
    return Plan(tuple(kinds), chans, build, convs=1, sink=pooled, depthwise=depthwise,
                narrow=narrow)  # fmt: skip


def _unreduced(op: Conv2dOp | FusedConv2dResidualOp) -> TensorType:
    """The NCHW type of a pooled convolution's result before its mean."""
    if isinstance(op, FusedConv2dResidualOp):
        return op.residual.type  # type: ignore[return-value]
    return conv2d_type([v.type for v in op.operands], Conv2dOp.attr_values(op.attributes))


def _pool(op: Operation) -> Plan | None:
    assert isinstance(op, Pool2dOp)
    xs = _static4(op.x.type)
    if op.layout != "nchw" or xs is None or xs[1] % MIN_BLOCK:
        return None
    layout = op.fields()["layout"].encode("nchwc")
    return Plan((ACT,), (xs[1],), _with_attrs(layout=lambda _: layout))


def _concat(op: Operation) -> Plan | None:
    assert isinstance(op, ConcatOp)
    out = _static4(op.results[0].type)
    if out is None:
        return None
    axis = normalize_axis(op.axis, 4)
    shapes = [_static4(v.type) for v in op.operands]
    if axis == 0 or any(s is None for s in shapes):
        return None
    chans = tuple(s[1] for s in shapes if s is not None)
    if any(c % MIN_BLOCK for c in chans):
        return None
    enc = op.fields()["axis"].encode(axis)
    return Plan((ACT,) * len(shapes), chans, _with_attrs(axis=lambda _: enc))


def _gather(op: Operation) -> Plan | None:
    assert isinstance(op, GatherOp)
    xs, out = _static4(op.x.type), _static4(op.results[0].type)
    if xs is None or out is None or len(shape_of(op.indices.type)) != 1 or xs[1] % MIN_BLOCK:
        return None
    axis = normalize_axis(op.axis, 4)
    if axis not in (2, 3):
        return None
    enc = op.fields()["axis"].encode(axis)
    return Plan((ACT, KEEP), (xs[1],), _with_attrs(axis=lambda _: enc))


def _slice(op: Operation) -> Plan | None:
    assert isinstance(op, SliceOp)
    xs = _static4(op.x.type)
    if xs is None or xs[1] % MIN_BLOCK:
        return None
    strides = op.strides or (1,) * 4
    if tuple(op.starts[:2]) != (0, 0) or tuple(op.limits[:2]) != xs[:2] or strides[:2] != (1, 1):
        return None  # channel or batch slicing stays NCHW

    def build(op: Operation, operands: list[SSAValue], block: int) -> list[Operation]:
        (new,) = _same_kind(op, operands, block)
        new.attributes["starts"] = encode_ints([*op.starts, 0])  # type: ignore[attr-defined]
        lim = op.limits  # type: ignore[attr-defined]
        new.attributes["limits"] = encode_ints([lim[0], lim[1] // block, *lim[2:], block])
        new.attributes["strides"] = encode_ints([*strides, 1])
        return [new]

    return Plan((ACT,), (xs[1],), build)


def _reduce(op: Operation) -> Plan | None:
    assert isinstance(op, ReduceOp)
    xs = _static4(op.x.type)
    if xs is None or xs[1] % MIN_BLOCK or op.axes is None:
        return None
    if sorted(normalize_axis(a, 4) for a in op.axes) != [2, 3]:
        return None
    axes = encode_ints([2, 3])
    if op.keepdims:
        return Plan((ACT,), (xs[1],), _with_attrs(axes=lambda _: axes))

    def build(op: Operation, operands: list[SSAValue], block: int) -> list[Operation]:
        t = op.results[0].type
        assert isinstance(t, TensorType)
        n, c = shape_of(t)
        red = type(op).create(
            operands=operands,
            result_types=[tensor((n, c // block, block), t.element_type)],
            attributes={**op.attributes, "axes": axes},
        )
        return [red, ReshapeOp(red.results[0], result_types=[t])]

    return Plan((ACT,), (xs[1],), build, sink=True)


def _broadcast(op: Operation) -> Plan | None:
    """broadcast_to of a scalar to an activation shape (the fill of an imported pad)."""
    assert isinstance(op, BroadcastToOp)
    out = _static4(op.results[0].type)
    if out is None or out[1] % MIN_BLOCK or prod(shape_of(op.x.type)) != 1:
        return None
    return Plan((KEEP,), (out[1],), _same_kind)


_BY_CLASS: dict[type[Operation], Callable[[Operation], Plan | None]] = {
    Pool2dOp: _pool,
    ConcatOp: _concat,
    GatherOp: _gather,
    SliceOp: _slice,
    ReduceOp: _reduce,
    BroadcastToOp: _broadcast,
}


def plan(op: Operation, narrow_convs: bool = True) -> Plan | None:
    """How `op` runs blocked, or None when it stays NCHW (`narrow_convs`: convs with
    unblockable input channels read x blocked by 1)."""
    if isinstance(op, Conv2dOp | FusedConv2dResidualOp):
        return _conv(op, narrow_convs)
    rule = _BY_CLASS.get(type(op))
    if rule is not None:
        return rule(op)
    elementwise = isinstance(op, CastOp | ElementwiseRegionOp) or (
        op.name.startswith("rlx.") and precision_class(op) == ELEMENTWISE
    )
    return _elementwise(op) if elementwise and len(op.results) == 1 else None
