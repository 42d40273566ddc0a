"""Row chunking of large row-parallel ops into `rlx_rt.parallel_call`.

An op is row-parallel when its output rows along a split dimension `s` (the first
dimension of size > 1, with every dimension before it of size 1, so that a range of rows is
one contiguous block of every buffer) are computed independently: elementwise ops (with
NumPy broadcasting), softmax over a later axis, the normalizations over the last axis,
`rlx.pool2d` (over batch and channels) and `rlx.reduce` with `keepdims` over trailing axes
(a global average pool: over the dimensions before the first reduced one).
Ops that call BLAS (matmuls, attention) are not chunked: concurrent calls of SciPy's
OpenBLAS from the pool's threads ran slower than one after the other (a MiniLM encoder took
49-57 ms with its attention split over heads on two threads, 37 ms unsplit).

Such an op is lowered to the kernel of the *same op on a chunk of `c` rows* (its types with
dimension `s` replaced by `c`, `c` dividing the row count) and a `rlx_rt.parallel_call`
over the `N / c` chunks: operands that have the row dimension advance by one chunk per
task, broadcast operands (rank too small, or size 1 there) are passed whole.

Chunks of about `CHUNK_ELEMENTS` elements serve two ends: the runtime spreads them over its
threads (when the op is large enough for that to pay: `PARALLEL_ELEMENTS` per thread), and
a multi-pass kernel (softmax: max, exp-and-sum, scale; layer_norm: mean, variance, scale)
re-reads each chunk from cache instead of streaming the whole tensor from memory once per
pass. Other ops are only chunked when they run on several threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation

from rlx.lowering.rlx_to_linalg.types import byte_size, shape

CHUNK_ELEMENTS = 1 << 14
"""Target elements of one task's output chunk (64 KiB of f32: L2-resident)."""

STREAM_CHUNK_FACTOR = 8
"""Chunks of an op with streaming stores (`streaming`) are this many times larger (a
quarter of that for multi-pass ops, which re-read their chunk from L2): each kernel call
ends with an `sfence`, which waits for the call's non-temporal stores to drain (one per
64 KiB cost 5-10 % of a pure streaming copy on one znver4 core)."""

MIN_TASK_ELEMENTS = 1 << 11
"""Chunks smaller than this (a prime row count of short rows) are not worth a task."""

MIN_ELEMENTS = 1 << 15
"""Ops with fewer output elements keep a plain kernel call (they fit in cache anyway)."""

PARALLEL_ELEMENTS = 1 << 16
"""Output elements per thread below which an extra thread does not pay for its wake-up."""

NORM_PARALLEL_ELEMENTS = 1 << 14
"""The same for the normalizations (`_LAST_AXIS`), ~4x an elementwise op's work per
element (three f64 passes over the row): MiniLM's 128x384 residual layer norms (48K
elements, ~30 us) ran on one thread; they get two."""

_ELEMENTWISE = frozenset(
    {
        *(f"rlx.{n}" for n in (
            "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
            "relu", "gelu", "gelu_tanh", "silu", "erf", "floor", "ceil", "round",
            "add", "sub", "mul", "div", "max", "min", "pow",
        )),
        "rlx.compare", "rlx.where", "rlx.cast", "rlx.elementwise_region",
    }
)  # fmt: skip
_LAST_AXIS = frozenset(
    {
        "rlx.layer_norm",
        "rlx.rms_norm",
        "rlx.fused_residual_layer_norm",
        "rlx.fused_residual_rms_norm",
    }
)


_MULTI_PASS = _LAST_AXIS | {"rlx.softmax"}
"""Ops whose kernel reads each row several times: chunked for cache reuse even on one
thread."""


@dataclass(frozen=True)
class Chunking:
    """How one op is split: chunk types of its operands/results, byte strides, tasks."""

    operand_types: tuple[TensorType, ...]
    result_types: tuple[TensorType, ...]
    strides: tuple[int, ...]
    """Byte advance per task of each operand, then of each result buffer."""
    tasks: int
    max_threads: int


def _row_limit(op: Operation, rank: int) -> int | None:
    """Dimensions before this one may be split (None: the op is not row-parallel)."""
    if op.name in _ELEMENTWISE:
        return rank
    if op.name in _LAST_AXIS:
        return rank - 1
    if op.name == "rlx.softmax":
        ax = op.axis
        ax = -1 if ax is None else ax
        return ax + rank if ax < 0 else ax
    if op.name == "rlx.pool2d":
        return 2
    if op.name == "rlx.reduce" and op.keepdims and op.axes:
        return min(a + rank if a < 0 else a for a in op.axes)
    return None


def _largest_divisor_at_most(n: int, bound: int) -> int:
    """The largest divisor of `n` that is <= `bound`: O(bound) steps, whatever `n` is (a
    dimension of 2^62 must not cost 2^31 steps; `bound` is at most CHUNK_ELEMENTS *
    STREAM_CHUNK_FACTOR)."""
    for d in range(min(n, bound), 1, -1):
        if n % d == 0:
            return d
    return 1


def plan(op: Operation, stream: bool = False) -> Chunking | None:
    """The chunking of `op`, or None when it keeps a plain kernel call; `stream`: its
    kernel uses streaming stores (larger chunks, `STREAM_CHUNK_FACTOR`)."""
    if len(op.results) != 1:
        return None
    out_t = op.results[0].type
    if not isinstance(out_t, TensorType):
        return None
    out = shape(out_t)
    rank = len(out)
    limit = _row_limit(op, rank)
    if limit is None or rank == 0:
        return None
    # work: the largest buffer (a pool's or reduction's input is larger than its output)
    sizes = [shape(v.type) for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)]
    total = max(prod(sz) for sz in sizes)
    if total < MIN_ELEMENTS:
        return None
    s = next((i for i, d in enumerate(out) if d > 1), None)
    if s is None or s >= limit:
        return None
    n = out[s]
    inner = max(prod(sz[s - rank + len(sz) + 1 :]) for sz in sizes if len(sz) > rank - s - 1)
    target = CHUNK_ELEMENTS
    if stream:
        target *= STREAM_CHUNK_FACTOR // (4 if op.name in _MULTI_PASS else 1)
    c = _largest_divisor_at_most(n, max(1, target // inner))
    if c == n or c * inner < MIN_TASK_ELEMENTS:
        return None
    tasks = n // c
    per_thread = NORM_PARALLEL_ELEMENTS if op.name in _LAST_AXIS else PARALLEL_ELEMENTS
    max_threads = max(1, min(tasks, total // per_thread))
    if max_threads == 1 and op.name not in _MULTI_PASS:
        return None  # a single pass gains nothing from chunks on one thread
    operand_types: list[TensorType] = []
    strides: list[int] = []
    for v in (*op.operands, *op.results):
        t = v.type
        if not isinstance(t, TensorType):
            return None
        shp = list(shape(t))
        j = s - (rank - len(shp))
        if j < 0 or shp[j] == 1:
            strides.append(0)
        elif shp[j] == n and all(d == 1 for d in shp[:j]):
            shp[j] = c
            strides.append(c * prod(shp[j + 1 :]) * byte_size(t.element_type))
        else:
            return None
        operand_types.append(TensorType(t.element_type, shp))
    k = len(op.operands)
    return Chunking(
        tuple(operand_types[:k]), tuple(operand_types[k:]), tuple(strides), tasks, max_threads
    )


def chunk_op(op: Operation, chunking: Chunking) -> Operation:
    """A detached copy of `op` on chunk types (its operands are the arguments of a detached
    block): the kernel emitters read shapes from it. Drop it with `discard`."""
    block = Block(arg_types=list(chunking.operand_types))
    clone = op.__class__.create(
        operands=list(block.args),
        result_types=list(chunking.result_types),
        attributes=dict(op.attributes),
        properties=dict(op.properties),
        regions=[r.clone() for r in op.regions],
    )
    return clone


def discard(op: Operation) -> None:
    op.drop_all_references()


__all__ = ["CHUNK_ELEMENTS", "Chunking", "chunk_op", "discard", "plan"]
