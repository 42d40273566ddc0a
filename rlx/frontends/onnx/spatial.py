"""Window geometry shared by the Conv, ConvTranspose and pooling converters (`ops_nn`,
`ops_window`): the checks of kernel / strides / dilations, explicit pads from `pads` /
`auto_pad`, and the 1-D -> 2-D view (a leading unit spatial axis) that lets 1-D windows
use `rlx.conv2d` / `rlx.pool2d`. One place, so a pool and a conv refuse the same bad
attribute with the same message naming the node."""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from xdsl.ir import SSAValue

from rlx.dialects.rlx.base import DYN
from rlx.frontends.onnx.node import Node, dims_text, shape


def check_window(n: Node, k: int, **sizes: Sequence[int]) -> None:
    """Each of `sizes` (`kernel_shape=...`, `strides=...`, `dilations=...`) has one
    positive entry per spatial axis (`k` of them): a stride of 0 divided by zero, a
    dynamic kernel (a weight `[F, C, ?, ?]`) made a result dim of 2^63."""
    for name, v in sizes.items():
        if len(v) != k or min(v, default=1) < 1:
            raise n.error(
                f"{name} {dims_text(v)} must be {k} positive sizes (one per spatial axis)"
            )


def spatial_pads(
    n: Node,
    in_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dil: Sequence[int],
) -> list[int]:
    """Explicit pads `[b0, b1, ..., e0, e1, ...]` from `pads` / `auto_pad`, after
    `check_window` of the kernel, strides and dilations."""
    k = len(in_sizes)
    check_window(n, k, kernel_shape=kernel, strides=strides, dilations=dil)
    auto = n.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = list(n.attr("pads") or [0] * 2 * k)
        if len(pads) != 2 * k or min(pads) < 0:  # a pad of -1 made a `?` dim (DYN is -1)
            raise n.error(f"pads {pads} must be {2 * k} non-negative sizes")
        return pads
    if auto == "VALID":
        return [0] * 2 * k
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad={auto} is not supported")
    if DYN in in_sizes:
        raise n.error(f"auto_pad={auto} needs static spatial sizes")
    begins, ends = [], []
    for i in range(k):
        out = ceil(in_sizes[i] / strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_sizes[i], 0)
        small = total // 2
        b = small if auto == "SAME_UPPER" else total - small
        begins.append(b)
        ends.append(total - b)
    return begins + ends


def to_2d(n: Node, x: SSAValue) -> SSAValue:
    """A rank-3 `[N, C, W]` value as `[N, C, 1, W]`; rank 4 as it is; else an error."""
    s = shape(x)
    if len(s) == 3:
        return n.reshape(x, [s[0], s[1], 1, s[2]])
    if len(s) != 4:
        raise n.error(f"only 1-D and 2-D {n.op_type} is supported, got input rank {len(s)}")
    return x


def from_2d(n: Node, y: SSAValue, rank: int) -> SSAValue:
    """Undo `to_2d` on a result, for an input of rank `rank`."""
    if rank == 4:
        return y
    s = shape(y)
    return n.reshape(y, [s[0], s[1], s[3]])


def as_2d(v: Sequence[int], rank: int, fill: int = 0) -> list[int]:
    """A per-spatial-axis attribute list of an input of rank `rank` as 2-D (a leading
    `fill` for the unit axis `to_2d` adds)."""
    return [fill, *v] if rank == 3 else list(v)


def pads_2d(p: list[int], rank: int) -> list[int]:
    """`[b, e]` pads of a 1-D window as the `[top, left, bottom, right]` of `to_2d`'s view."""
    return [0, p[0], 0, p[1]] if rank == 3 else p
