"""Geometry and task split of the blocked direct convolution (`conv_nchwc`): `BlockedGeom`
(the shapes, x's block `xb` and the output block `b`), `plan_tasks` (input mode, rows
and output-block groups per task, slab sizes: the run-time geometry table) and `balance`
(the split refined for 2 and 4 threads)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.ir import SSAValue

from rlx.conv_plan import (
    SLAB_ELEMENTS,  # shared with the Winograd plan (blocked-layout)
    register_limit,
    register_tile,
)
from rlx.lowering.rlx_to_linalg.conv_common import ConvGeom
from rlx.lowering.rlx_to_linalg.kernel_builder import shape

TASKS = 8
"""Tasks per call the split aims at (several per thread of the pool, for balance)."""

GEOMETRY = (
    "n", "cb", "h", "w", "fb", "kh", "oh", "ow", "sh", "pt", "pl", "dh", "wp", "rows",
    "rb", "pairs", "fgroups", "per", "nbw", "wscb", "wsblk", "srows",
)  # fmt: skip

SHARED_ELEMENTS = 1 << 22
"""Largest padded copy of the whole input shared by the tasks (16 MiB of f32)."""


@dataclass(frozen=True)
class BlockedGeom(ConvGeom):
    """x [n, c/xb, h, w, xb] * w [f/b, c/xb (1: depthwise), kh, kw, ., b] -> [n, f/b, oh,
    ow, b]: `ConvGeom` (in unblocked channels: c, f, cg, groups; `macs` as for NCHW) plus
    the output block size `b`, whether the conv is depthwise, and x's block `xb` (= b, or
    1 for the stem form: an NCHW x reshaped, its channels not blockable)."""

    b: int
    depthwise: bool
    xb: int

    @property
    def cb(self) -> int:
        """Input-channel blocks (of `xb` channels)."""
        return self.c // self.xb

    @property
    def fb(self) -> int:
        """Output-channel blocks."""
        return self.f // self.b

    @staticmethod
    def of(op: object, x: SSAValue, w: SSAValue, out: SSAValue) -> BlockedGeom:
        return BlockedGeom.of_shapes(op, shape(x), shape(w), shape(out))

    @staticmethod
    def of_shapes(op: object, xs: Sequence[int], ws: Sequence[int],
                  os_: Sequence[int]) -> BlockedGeom:  # fmt: skip
        n, cb, h, wd, xb = xs
        fb, _, kh, kw, bi, b = ws
        _, _, oh, ow, _ = os_
        (sh, sw), (pt, pl, pb, pr), (dh, dw) = op.spatial()  # type: ignore[attr-defined]
        groups = getattr(op, "groups", 1)
        depthwise = bi == 1 and groups > 1
        return BlockedGeom(n, cb * xb, h, wd, fb * b, 1 if depthwise else cb * xb, kh, kw, oh,
                           ow, sh, sw, pt, pl, pb, pr, dh, dw, groups, b, depthwise,
                           xb)  # fmt: skip


BALANCE_THREADS = (2, 4)
"""Thread counts whose balance `balance` weighs, the first one first (the task count is
fixed at compile time; the first is this project's benchmark machine)."""


def _efficiency(n: int, oh: int, pairs: int, rows: int, fgroups: int, threads: int) -> float:
    """Busy share of `threads` threads running the split (rows per task, output-block
    groups) with tasks handed out dynamically: the work over threads x the makespan, the
    largest task taken as the unit."""
    rb, per = -(-oh // rows), -(-pairs // fgroups)
    tasks = n * rb * -(-pairs // per)
    return n * oh * pairs / (threads * -(-tasks // threads) * rows * per)


def balance(n: int, oh: int, pairs: int, rows: int, fgroups: int,
            rows_fixed: bool) -> tuple[int, int]:  # fmt: skip
    """(rows per task, output-block groups): the split aimed at `TASKS`, refined when it
    leaves threads idle (7 row blocks of a 14x14 map on 2 threads: 4 + 3 tasks, 88 %
    busy). Candidates: fewer rows per task (never more: the slab must fit), or 2-3x the
    groups; at most 4 x `TASKS` tasks. The best balance on `BALANCE_THREADS[0]` threads
    wins, then the fewest tasks, then the balance on the others. `rows_fixed`: the split
    is over output blocks only (whole-image input)."""

    def score(r: int, f: int) -> tuple[float, ...]:
        first, *rest = (round(_efficiency(n, oh, pairs, r, f, t), 3) for t in BALANCE_THREADS)
        return (first, -n * -(-oh // r) * f, *rest)

    best, pick = score(rows, fgroups), (rows, fgroups)
    if best[0] >= 0.97:
        return pick
    for r in [rows] if rows_fixed else range(1, rows + 1):
        for f in sorted({fgroups, min(pairs, 2 * fgroups), min(pairs, 3 * fgroups)}):
            if n * -(-oh // r) * f <= 4 * TASKS and (sc := score(r, f)) > best:
                best, pick = sc, (r, f)
    return pick


def direct_tile(g: BlockedGeom, f32_x: bool) -> tuple[BlockedGeom, int, int, int]:
    """(geometry, u, ut, nblk) the direct kernel runs: `u` pixels and `nblk` output blocks
    per register tile, and a last, narrower tile of `ut` pixels per row (0: none).

    A pointwise conv (1x1, stride 1, no padding) on an f32 x reads and writes each
    channel block's plane as one run of pixels, so (a) rows narrower than the widest tile
    `u_max` are merged (`h / r` rows of `r · w` pixels, `r` the smallest divisor of `h`
    that fills a tile) when the task split is over output blocks anyway (weights at least
    the input: the late layers): a 7x7 map is one row of 49 pixels, tiles of 14 + 14 + 14
    + 7 instead of seven of 7, about half the weight loads per FMA; (b) a row that whole
    tiles do not cover ends in a tail tile instead of the padded slab copy (`u_max` and
    the rest when that rest is at least half a tile, else the balanced tiles: 17 -> 9 +
    8), so x is read in place. Other convs: `register_tile`'s balanced tile, no tail."""
    u, nblk = register_tile(g.fb, g.b, g.ow)
    pointwise = g.kh == g.kw == 1 and g.sh == g.sw == 1 and max(g.pt, g.pl, g.pb, g.pr) == 0
    if not (f32_x and pointwise):
        return g, u, 0, nblk
    u_max, _ = register_limit(g.fb, g.b)
    weights = g.fb * g.cb * g.xb * g.b
    if g.ow < u_max and weights >= g.n * g.cb * g.h * g.w * g.xb:
        r = next((d for d in range(2, g.oh) if g.oh % d == 0 and d * g.ow >= u_max), g.oh)
        g = replace(g, h=g.h // r, w=g.w * r, oh=g.oh // r, ow=g.ow * r)
        u, nblk = register_tile(g.fb, g.b, g.ow)
    if g.ow % u == 0:
        return g, u, 0, nblk
    if 2 * (g.ow % u_max) >= u_max:
        return g, u_max, g.ow % u_max, nblk
    return g, u, g.ow % u, nblk


def plan_tasks(g: BlockedGeom, u: int, nblk: int, f32_x: bool,
               ut: int) -> tuple[str, dict[str, int]] | None:  # fmt: skip
    """The input mode and the geometry table: the task split and slab sizes (None: one
    output row's slab is too large). Modes: "inplace" (f32 x, no padding, the row
    covered by whole pixel tiles and the tail tile of `ut` pixels: the microkernel reads
    x itself), "shared" (tasks split only the output channels: one padded copy of x made
    before the tasks), "slab" (a padded copy of its rows per task)."""
    nbw = -(-g.ow // u)
    inplace = f32_x and max(g.pt, g.pl, g.pb, g.pr) == 0 and g.ow % u == ut
    wp = g.w if inplace else max(g.pl + g.w + g.pr, (nbw * u - 1) * g.sw + (g.kw - 1) * g.dw + 1)
    pairs = -(-g.fb // nblk)
    weights = g.fb * g.cb * g.kh * g.kw * g.xb * g.b
    inputs = g.n * g.cb * g.h * g.w * g.xb

    def slab_rows(rows: int) -> int:
        return (rows - 1) * g.sh + (g.kh - 1) * g.dh + 1

    per_image = -(-TASKS // g.n)
    if weights >= inputs:  # late layers: split the output channels, read each weight once
        fgroups = min(pairs, per_image)
        rb = min(g.oh, -(-per_image // fgroups))
    else:
        rb = min(g.oh, per_image)
        fgroups = min(pairs, -(-per_image // rb))
    rows = -(-g.oh // rb)
    while not inplace and rows > 1 and g.cb * slab_rows(rows) * wp * g.xb > SLAB_ELEMENTS:
        rows = -(-rows // 2)
    if not inplace and g.cb * slab_rows(rows) * wp * g.xb > SLAB_ELEMENTS:
        return None
    rows, fgroups = balance(g.n, g.oh, pairs, rows, fgroups, rows_fixed=rows >= g.oh)
    rb = -(-g.oh // rows)
    per = -(-pairs // fgroups)
    fgroups = -(-pairs // per)
    vals = dict(n=g.n, cb=g.cb, h=g.h, w=g.w, fb=g.fb, kh=g.kh, oh=g.oh, ow=g.ow, sh=g.sh,
                pt=g.pt, pl=g.pl, dh=g.dh, wp=wp, rows=rows, rb=rb, pairs=pairs,
                fgroups=fgroups, per=per, nbw=nbw, wscb=g.kh * g.kw * g.xb * g.b,
                wsblk=g.cb * g.kh * g.kw * g.xb * g.b,
                srows=g.h if inplace else slab_rows(g.oh))  # fmt: skip
    assert tuple(vals) == GEOMETRY
    mode = "inplace" if inplace else "slab"
    if (
        not inplace
        and rb == 1
        and fgroups > 1
        and g.n * g.cb * slab_rows(g.oh) * wp * g.xb <= SHARED_ELEMENTS
    ):
        mode = "shared"
    return mode, vals
