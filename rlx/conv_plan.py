"""Plain-Python geometry of the blocked (NCHWc) conv kernels that a transform must agree
with: the register tile per instruction set, the kernels' scratch limits, and whether
the Winograd F(2x2, 3x3) kernel takes a conv (`winograd_tile`).

`blocked-layout` (`transforms/blocked_winograd.py`) prepares the Winograd weights U in
`@prepare` exactly for the convs the kernel (`lowering/rlx_to_linalg/conv_winograd.py`)
then takes: both ask `winograd_tile`, so a conv the kernel refuses (e.g. 256 -> 256 on a
56x56 map: its transformed input row exceeds `V_ELEMENTS`) keeps its 3x3 weights. No
xDSL here (a layer below transforms); the register tile depends on the host's vector
instruction set (`rlx.host_cpu.vector_isa`, `RLX_GEMM_ISA`). docs/conv.md "Winograd".
"""

from __future__ import annotations

from collections.abc import Sequence

from rlx.env import winograd_enabled
from rlx.host_cpu import vector_isa

VECTOR_REGISTERS = {"avx512": (32, 16), "avx2": (16, 8), "generic": (16, 4)}
"""(vector registers, f32 lanes of one) per instruction set."""

SLAB_ELEMENTS = 1 << 17
"""f32 elements of a task's padded input slab (512 KiB: L2)."""

MAX_UF = 1 << 20
"""Largest transformed weight `U` the Winograd kernel computes per call (f32 elements:
4 MiB; 16·F·C <= this): 256 -> 256. Prepared U (`winograd = true`) has no limit."""

V_ELEMENTS = 1 << 16
"""f32 elements of a Winograd task's transformed input tile row `[16, C/B, TWP, B]`
(256 KiB)."""

M_ELEMENTS = 1 << 15
"""f32 elements of a Winograd task's GEMM results of one tile row and block pair (128 KiB)."""

MIN_HW = 64
"""Smallest output map (pixels) the Winograd kernel takes with the per-call weight
transform (docs/conv.md: on 7x7 maps the 2x2 tiles waste 30 % and computing U, 1.8x the
weights, dominates)."""

MIN_HW_PREPARED = 49
"""Smallest output map (pixels) taken with U prepared (`winograd = true`): 7x7 maps win
then (1 thread, bias + relu, Winograd / direct: 512 -> 512 0.84, 256 -> 256 0.96, 128 ->
128 0.77; docs/conv.md)."""

VECTOR_ACTS = ("none", "relu", "clip", "gelu_tanh", "silu", "sigmoid", "hard_swish")
"""Epilogue activations the Winograd kernel applies in vector code (not gelu-erf)."""

MAX_ELEMENTS = 1 << 31
"""The blocked kernels index with 32-bit sizes: x, the output and U stay below this."""


def register_limit(blocks: int, lanes_b: int, isa: str | None = None) -> tuple[int, int]:
    """(u_max, nblk): the most output pixels and the channel blocks of one register tile
    for block size `lanes_b` and `blocks` output-channel blocks on `isa` (default
    `vector_isa()`): the accumulators `u_max · nblk`, `nblk` weight vectors and one
    broadcast fill the registers."""
    regs, lanes = VECTOR_REGISTERS[isa or vector_isa()]
    per = max(1, lanes_b // lanes)  # registers per B-vector
    nblk = 2 if blocks >= 2 and (regs - 1 - 2 * per) // (2 * per) >= 4 else 1
    return max(1, (regs - 1 - nblk * per) // (nblk * per)), nblk


def register_tile(blocks: int, lanes_b: int, ow: int, isa: str | None = None) -> tuple[int, int]:
    """(u, nblk): output pixels and channel blocks of one register tile for output width
    `ow` (`register_limit`); `u` is balanced over the row (`ow` = 17 on a 14-pixel tile:
    two tiles of 9)."""
    u_max, nblk = register_limit(blocks, lanes_b, isa)
    nbw = -(-ow // u_max)
    return -(-ow // nbw), nblk


def winograd_tile(*, x: Sequence[int], w: Sequence[int], out: Sequence[int],
                  kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                  groups: int, f32: bool, act: str | None, reduce: str, prepared: bool,
                  isa: str | None = None) -> tuple[int, int, int] | None:  # fmt: skip
    """(u, nblk, twp) when the Winograd kernel takes the blocked conv x `[n, C/xb, h, w,
    xb]` * w `[F/B, C/Bi, ., ., Bi, B]` -> out `[n, F/B, oh, ow, B]`, else None: the
    register tile of its GEMMs over the 2x2 tiles and a tile row's padded tile count.
    Taken: `RLX_CONV_WINOGRAD` not 0, every operand and the result f32 (`f32`), an
    epilogue in `VECTOR_ACTS` (`act`; None: none the vector code states), no `reduce`, 3x3,
    stride 1, dilation 1, groups 1, x blocked like the output, sizes below `MAX_ELEMENTS`,
    at least `MIN_HW` output pixels and 16·F·C <= `MAX_UF` (`prepared`, U given: at least
    `MIN_HW_PREPARED` pixels, any F·C), and a task's scratch within `V_ELEMENTS`,
    `M_ELEMENTS` and `SLAB_ELEMENTS` for one tile row."""
    if not (winograd_enabled() and f32 and act in VECTOR_ACTS and reduce == "none"):
        return None
    if min(*x, *w, *out) <= 0:  # dynamic sizes: the blocked kernels need them known
        return None
    n, cb, h, wd, xb = x
    fb, _, _, _, bi, b = w
    _, _, oh, ow, _ = out
    spatial = (tuple(kernel), tuple(stride), tuple(dilation), groups)
    if spatial != ((3, 3), (1, 1), (1, 1), 1) or not xb == bi == b:
        return None
    c, f = cb * b, fb * b
    if oh * ow < (MIN_HW_PREPARED if prepared else MIN_HW):
        return None
    if 16 * f * c > MAX_UF and not prepared:
        return None
    if max(n * c * h * wd, n * f * oh * ow, 16 * f * c) >= MAX_ELEMENTS:
        return None
    tw = -(-ow // 2)
    u, nblk = register_tile(fb, b, tw, isa)
    twp = -(-tw // u) * u
    if 16 * c * twp > V_ELEMENTS or 16 * twp * nblk * b > M_ELEMENTS:
        return None
    if c * 4 * (2 * twp + 2) > SLAB_ELEMENTS:  # the slab of one tile row (4 input rows)
        return None
    return u, nblk, twp
