"""Shape-generic strided loop workers: data movement and elementwise kernels compiled once
per *structure*, not per shape.

An op that reads and writes its buffers elementwise (a copy out of a concat operand, a
slice, a transpose, a broadcast, an `rlx.elementwise_region`) is described by an iteration
space `sizes` and, per buffer, a `Layout`: an element offset and one stride per dimension
(0 for a broadcast dimension). `collapse` drops size-1 dimensions and merges dimensions that
are contiguous in every buffer, so a concat along channels of a batch-1 NCHW tensor is one
flat copy and a per-channel scale of NCHW two dimensions (channels, H*W).

The worker `func.func` is keyed by the body's identity, the element types, the collapsed
rank and whether each buffer's innermost stride is 0, 1 or other; the sizes, offsets and
strides come from a constant run-time table (`memref<k x i64>`), as in the conv and GEMM
workers. A unit innermost stride stays a compile-time constant, so the innermost loop is a
unit-stride loop LLVM vectorizes; a 0 stride makes the load loop-invariant. Every table is
checked against the buffers it addresses when it is built (`check_layouts`): an offset or
stride reaching outside a buffer is a ValueError naming the buffer, never an
out-of-bounds access at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute, SSAValue

from rlx.lowering.rlx_to_linalg import streaming
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder, elem, shape
from rlx.lowering.rlx_to_linalg.kernels import attr_text
from rlx.lowering.rlx_to_linalg.static_ops import call_op, static_memref, static_reinterpret

FLAT = 2**31 - 1
"""Length of the flat views the worker reads (the same pointer as the buffer)."""

BodyFn = Callable[[KernelBuilder, list[SSAValue]], list[SSAValue]]
"""`body(kb, loaded input values)`: the values stored to the outputs (their element types
or anything `KernelBuilder.convert` narrows to them)."""


@dataclass(frozen=True)
class Layout:
    """Where one buffer's elements of the iteration space are: `offset + sum(i_d * s_d)`."""

    offset: int
    strides: tuple[int, ...]


def row_major(shp: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous row-major buffer of shape `shp`."""
    out, acc = [], 1
    for d in reversed(shp):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def broadcast(shp: Sequence[int], out: Sequence[int]) -> Layout:
    """A contiguous buffer of shape `shp` read over the NumPy broadcast space `out`."""
    lead = len(out) - len(shp)
    st = row_major(shp)
    strides = [0] * lead + [
        0 if d == 1 and o != 1 else s for d, o, s in zip(shp, out[lead:], st, strict=True)
    ]
    return Layout(0, tuple(strides))


def collapse(sizes: Sequence[int], layouts: Sequence[Layout]) -> tuple[list[int], list[Layout]]:
    """The same accesses over fewer dimensions: size-1 dimensions dropped, and a dimension
    merged into the next inner one when it steps by exactly that one's extent in every
    buffer (so contiguous or broadcast alike)."""
    keep = [d for d, s in enumerate(sizes) if s != 1]
    dims = [sizes[d] for d in keep]
    strides = [[lay.strides[d] for d in keep] for lay in layouts]
    i = len(dims) - 2
    while i >= 0:
        if all(st[i] == st[i + 1] * dims[i + 1] for st in strides):
            dims[i] *= dims.pop(i + 1)
            for st in strides:
                st[i] = st.pop(i + 1)
        i -= 1
    return dims, [Layout(lay.offset, tuple(st)) for lay, st in zip(layouts, strides, strict=True)]


def check_layouts(
    sizes: Sequence[int], layouts: Sequence[Layout], extents: Sequence[int], names: Sequence[str]
) -> None:
    """Every access of the iteration space lands inside its buffer (`extents` elements);
    else a ValueError naming the buffer and the bad offset."""
    if any(s < 0 for s in sizes):
        raise ValueError(f"strided worker: negative size in {list(sizes)}")
    for lay, n, name in zip(layouts, extents, names, strict=True):
        if len(lay.strides) != len(sizes):
            raise ValueError(
                f"strided worker: {name}: {len(lay.strides)} strides for rank {len(sizes)}"
            )
        if lay.offset < 0 or any(s < 0 for s in lay.strides):
            raise ValueError(f"strided worker: {name}: negative offset or stride in {lay}")
        if prod(sizes) == 0:
            continue
        last = lay.offset + sum((s - 1) * st for s, st in zip(sizes, lay.strides, strict=True))
        if last >= n:
            raise ValueError(
                f"strided worker: {name}: element {last} is out of bounds of a buffer of {n}"
            )


def _inner(lay: Layout) -> int | None:
    """The innermost stride as a compile-time constant (0 or 1), else None (from the table)."""
    s = lay.strides[-1] if lay.strides else 0
    return s if s in (0, 1) else None


def _flat(kb: KernelBuilder, mem: SSAValue) -> SSAValue:
    """`mem` (contiguous) as a flat view, made once per kernel (the same pointer)."""
    if mem not in kb.flat_views:
        t = static_memref(elem(mem), (FLAT,))
        kb.flat_views[mem] = kb.hoist(static_reinterpret(mem, 0, [FLAT], [1], t))
    return kb.flat_views[mem]


def _step(kb: KernelBuilder, base: SSAValue, iv: SSAValue, stride: SSAValue | int) -> SSAValue:
    """`base + iv * stride` (a constant 0 or 1 stride folded here, so the loop's access
    pattern is plain for LLVM's vectorizer)."""
    if isinstance(stride, int):
        return base if stride == 0 else kb.addi(base, iv)
    return kb.addi(base, kb.muli(iv, stride))


def _loops(
    kb: KernelBuilder,
    dims: list[SSAValue],
    offsets: list[SSAValue],
    strides: list[list[SSAValue | int]],
    bufs: list[SSAValue],
    n_in: int,
    body: BodyFn,
    stream: bool = False,
) -> None:
    """The loop nest over `dims`; the address of each buffer advances per level. With
    `stream` (one output, unit innermost stride) the innermost loop is a `streaming.row`."""
    rank = len(dims)

    def level(d: int, bases: list[SSAValue]) -> None:
        if d == rank:
            vals = [kb.load(b, [a]) for b, a in zip(bufs[:n_in], bases[:n_in], strict=True)]
            res = body(kb, vals)
            for v, b, a in zip(res, bufs[n_in:], bases[n_in:], strict=True):
                kb.store(kb.convert(v, elem(b)), b, [a])
            return
        if stream and d == rank - 1:

            def value(j: SSAValue) -> SSAValue:
                ins = zip(bases[:n_in], strides[:n_in], strict=True)
                at = [_step(kb, bs, j, st[d]) for bs, st in ins]
                vals = [kb.load(b, [a]) for b, a in zip(bufs[:n_in], at, strict=True)]
                return kb.convert(body(kb, vals)[0], elem(bufs[-1]))

            streaming.row(kb, bufs[-1], bases[-1], dims[d], value)
            return
        with kb.loop(dims[d], interleave="auto" if d == rank - 1 else None) as iv:
            level(d + 1, [_step(kb, bs, iv, st[d]) for bs, st in zip(bases, strides, strict=True)])

    level(0, offsets)
    if stream:
        streaming.fence(kb)


def strided_call(
    kb: KernelBuilder,
    key: object,
    body: BodyFn,
    ins: Sequence[SSAValue],
    outs: Sequence[SSAValue],
    sizes: Sequence[int],
    layouts: Sequence[Layout],
    label: str,
) -> None:
    """Apply `body` elementwise over `sizes`: inputs `ins` and outputs `outs` (contiguous
    buffers) addressed by `layouts` (one per buffer, inputs first). `key` is the body's
    identity; the worker is shared by every call with the same key, element types, rank
    (after `collapse`) and innermost-stride pattern. The status record of a checked
    kernel (`kb.status`) is passed on to the worker."""
    bufs = [*ins, *outs]
    names = [f"input {i}" for i in range(len(ins))] + [f"output {i}" for i in range(len(outs))]
    check_layouts(sizes, layouts, [prod(shape(b)) for b in bufs], names)
    if prod(sizes) == 0:
        return
    dims, lays = collapse(sizes, layouts)
    flats = [_flat(kb, b) for b in bufs]
    inner = tuple(_inner(lay) for lay in lays)
    rank, n_in = len(dims), len(ins)
    stream = (
        kb.stream_stores and len(outs) == 1 and rank > 0 and inner[-1] == 1
        and streaming.row_ok(outs[0], dims[-1])
    )  # fmt: skip
    values = [*dims, *(v for lay in lays for v in (lay.offset, *lay.strides))]

    def emit(wb: KernelBuilder, table: Callable[[int], SSAValue], fl: list[SSAValue]) -> None:
        index = wb.idx(0).type
        get = lambda i: wb.convert(table(i), index)  # noqa: E731
        d = [get(i) for i in range(rank)]
        offs: list[SSAValue] = []
        strides: list[list[SSAValue | int]] = []
        for k, c in enumerate(inner):
            at = rank + k * (rank + 1)  # this buffer's offset, then its strides
            offs.append(get(at))
            st: list[SSAValue | int] = [get(at + 1 + j) for j in range(rank - 1)]
            if rank:
                st.append(get(at + rank) if c is None else c)
            strides.append(st)
        _loops(wb, d, offs, strides, fl, n_in, body, stream)

    kernels = kb.kernels
    if kernels is None:  # no module registry: the loops inline, sizes as constants
        emit(kb, lambda i: kb.const(values[i], i64), flats)
        return
    geo = kb.table(values, i64)
    st = [kb.status] if kb.status is not None else []
    types: list[Attribute] = [geo.type, *(f.type for f in flats), *(s.type for s in st)]
    wkey = ("strided", key, rank, inner, stream, tuple(attr_text(t) for t in types))

    def build(wb: KernelBuilder, args: list[SSAValue]) -> None:
        if st:
            wb.status = args.pop()
        emit(wb, lambda i: wb.load(args[0], [i]), args[1:])

    worker = kernels.kernel(wkey, types, build, f"{label} (any shape)", noalias=True)
    kb.add(call_op(worker, [geo, *flats, *st]))
