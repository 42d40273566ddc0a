"""Weight-aware graph rewrites of the bake pipeline.

specialize (bind params) -> skip all-zero matmuls -> ternary TQ2_0 pack -> Q8_0 pack ->
unfold (name weight constants) -> [cleanup passes, in bake.py] -> dedupe -> weight table ->
memory mode. Every function mutates the module in place. Weight constants carry their
name in an `rlx.name` attribute (the rlx verifier accepts `rlx.`-prefixed attributes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    Float32Type,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.dialects.rlx.base import DYN, UI8, i64_attr, shape_of, tensor
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dialects.rlx.quant import DequantMatmulOp
from rlx.dtypes import numpy_dtype, to_dense_attr, type_name
from rlx.formats import ggml
from rlx.transforms.bind_params import bind_params
from rlx.transforms.bind_quant_params import bind_quant_params
from rlx.transforms.expansion import Expansion
from rlx.weights import PackedWeight

NAME_ATTR = "rlx.name"
"""Attribute holding a weight constant's name (its param name, or `w<i>`)."""


@dataclass
class WeightEntry:
    """One weight-table entry; `data` holds the stored bytes (flat uint8)."""

    name: str
    shape: list[int]
    """Logical shape: the dense shape, or [K, N] of the matmul weight for GGML encodings."""
    encoding: str
    """`f32` (or another element type name) for dense bytes, `gguf_tq2_0`, `gguf_q8_0`."""
    dtype: str
    """Element type of the stored tensor (`ui8` for GGML blocks)."""
    stored_shape: list[int]
    data: np.ndarray
    note: str = ""
    live: bool = True
    """False for a folded-away binding kept only for reference (keep_folded_bindings)."""

    @property
    def nbytes(self) -> int:
        return int(self.data.size)


@dataclass
class RewriteStats:
    """Counters and per-weight notes collected by the rewrites."""

    skipped_zero_matmuls: int = 0
    ternary_packed: int = 0
    quant_packed: int = 0
    constants_deduped: int = 0
    folded_bindings_dropped: int = 0
    graph_bytes_stripped: int = 0
    kept_dense: list[str] = field(default_factory=list)
    """`name: reason` for each matmul weight a requested rewrite could not take."""


# ----------------------------------------------------------------------------- helpers


def const_name(op: ConstantOp) -> str | None:
    a = op.attributes.get(NAME_ATTR)
    return a.data if isinstance(a, StringAttr) else None


def set_name(op: ConstantOp, name: str) -> None:
    op.attributes[NAME_ATTR] = StringAttr(name)


def raw_bytes(op: ConstantOp) -> bytes:
    """The constant's little-endian element bytes (a splat is expanded)."""
    t = op.result.type
    assert isinstance(t, TensorType)
    data = op.value.data.data
    n = int(np.prod(shape_of(t)))
    item = numpy_dtype(t.element_type).itemsize
    if len(data) == item and n != 1:
        return data * n
    return data


def array_of(op: ConstantOp) -> np.ndarray:
    t = op.result.type
    assert isinstance(t, TensorType)
    return np.frombuffer(raw_bytes(op), numpy_dtype(t.element_type)).reshape(shape_of(t))


def constants(module: ModuleOp) -> Iterator[ConstantOp]:
    for op in list(module.walk()):
        if isinstance(op, ConstantOp):
            yield op


def _weight_of(op: Operation) -> SSAValue | None:
    if isinstance(op, MatmulOp):
        return op.b
    if isinstance(op, FusedMatmulBiasActOp):
        return op.w
    if isinstance(op, DequantMatmulOp):
        return op.packed
    return None


def _label(op: ConstantOp) -> str:
    return const_name(op) or f"%{op.result.name_hint or 'const'}"


def _erase_if_dead(op: Operation) -> None:
    if op.parent is not None and not any(r.uses for r in op.results):
        Rewriter.erase_op(op)


# ----------------------------------------------------------------------------- specialize


def specialize(
    module: ModuleOp, weights: Mapping[str, object], rounded: list[str] | None = None
) -> list[str]:
    """Bind params to `weights` (dense via bind_params, GGML-packed via bind_quant_params)
    and name the new constants after their params. Returns the bound names in graph order;
    float weights rounded to their params' types are described in `rounded`."""

    # bind_params replaces each param in place, so block positions identify the constants
    where: dict[int, tuple[Block, dict[int, str]]] = {}
    for op in module.walk():
        if isinstance(op, ParamOp) and op.param_name in weights:
            block = op.parent_block()
            assert block is not None
            slots = where.setdefault(id(block), (block, {}))[1]
            slots[block.get_operation_index(op)] = op.param_name
    packed = {k: v for k, v in weights.items() if isinstance(v, PackedWeight)}
    dense = {k: v for k, v in weights.items() if not isinstance(v, PackedWeight)}
    bound = set(bind_quant_params(module, packed)) if packed else set()
    notes = None if rounded is None else (lambda _op, note: rounded.append(note))
    bound |= set(bind_params(module, dense, notes))
    order: list[str] = []
    for block, slots in where.values():
        for i, op in enumerate(block.ops):
            if i in slots and isinstance(op, ConstantOp):
                set_name(op, slots[i])
                order.append(slots[i])
    order = list(dict.fromkeys(order))
    return [n for n in order if n in bound]


# ----------------------------------------------------------------------------- skip zero


def _is_zero(op: ConstantOp) -> bool:
    a = array_of(op)
    return a.size > 0 and bool(np.all(a == 0))


def skip_zero(module: ModuleOp, stats: RewriteStats) -> None:
    """matmul(x, 0) -> zeros; fused_matmul_bias_act(x, 0, b) -> act(zeros + b) (exact)."""

    for op in list(module.walk()):
        if not isinstance(op, MatmulOp | FusedMatmulBiasActOp):
            continue
        w = _weight_of(op)
        assert w is not None
        if not isinstance(w.owner, ConstantOp) or not _is_zero(w.owner):
            continue
        t = op.result.type
        assert isinstance(t, TensorType)
        if DYN in shape_of(t):
            continue  # explain_dense: all-zero but the result shape is dynamic
        e = Expansion()
        value = e.const(0, t.element_type, shape_of(t))
        if isinstance(op, FusedMatmulBiasActOp):
            value = e.add(value, op.bias)
            if op.activation != "none":
                value = e.emit(op.activation, value)
        weight_op = w.owner
        Rewriter.replace_op(op, e.ops, [value])
        _erase_if_dead(weight_op)
        stats.skipped_zero_matmuls += 1


# ----------------------------------------------------------------------------- packing


def _pack_candidate(op: Operation) -> ConstantOp | str | None:
    """The weight constant of a packable matmul, a reason string, or None."""
    if not isinstance(op, MatmulOp) or not isinstance(op.b.owner, ConstantOp):
        return None
    wt, xt = op.b.type, op.a.type
    assert isinstance(wt, TensorType) and isinstance(xt, TensorType)
    if len(shape_of(wt)) != 2:
        return f"weight has rank {len(shape_of(wt))}, packing needs a rank-2 [K, N] weight"
    if not isinstance(wt.element_type, Float32Type) or not isinstance(xt.element_type, Float32Type):
        return f"matmul is {type_name(wt.element_type)}, packing needs f32"
    return op.b.owner


def pack_matmuls(module: ModuleOp, scheme: str, stats: RewriteStats) -> None:
    """Rewrite matmuls with a constant weight into rlx.dequant_matmul on GGML blocks of Wᵀ.

    `tq2_0` takes only weights that round-trip exactly (ggml.ternary_blocks_ok); `q8_0`
    takes every remaining f32 rank-2 weight with K % 32 == 0 (lossy).
    """
    block = ggml.BLOCK[scheme][0]
    cache: dict[int, ConstantOp | None] = {}
    for op in list(module.walk()):
        cand = _pack_candidate(op)
        if cand is None:
            continue
        assert isinstance(op, MatmulOp)
        if isinstance(cand, str):
            continue  # explain_dense gives the reason
        weight = cand
        k, n = shape_of(weight.result.type)
        if id(weight) not in cache:
            wt = np.ascontiguousarray(array_of(weight).T)
            cache[id(weight)] = _packed_constant(weight, wt, scheme, block, stats)
        packed = cache[id(weight)]
        if packed is None:
            continue
        new = DequantMatmulOp.create(
            operands=[op.a, packed.result],
            result_types=[op.result.type],
            attributes={"scheme": StringAttr(scheme), "n": i64_attr(n), "k": i64_attr(k)},
        )
        Rewriter.replace_op(op, new)
        _erase_if_dead(weight)
        if scheme == "tq2_0":
            stats.ternary_packed += 1
        else:
            stats.quant_packed += 1


def _packed_constant(
    weight: ConstantOp, wt: np.ndarray, scheme: str, block: int, stats: RewriteStats
) -> ConstantOp | None:
    k = wt.shape[1]
    if scheme == "tq2_0" and not ggml.ternary_blocks_ok(wt):
        if k % block and ggml.ternary_blocks_ok(np.pad(wt, ((0, 0), (0, -k % block)))):
            stats.kept_dense.append(  # noted even if Q8_0 packs it later
                f"{_label(weight)}: ternary but K={k} is not a multiple of the tq2_0 block "
                f"size {block}"
            )
        return None
    if k % block:
        return None
    data = ggml.quantize(wt, scheme)
    const = ConstantOp(to_dense_attr(data, tensor((data.size,), UI8)))
    name = const_name(weight)
    if name is not None:
        set_name(const, name)
    Rewriter.insert_op(const, InsertPoint.after(weight))
    return const


# ----------------------------------------------------------------------------- unfold / dedupe


def unfold(module: ModuleOp) -> int:
    """Name every unnamed constant that feeds a matmul / dequant_matmul weight (`w<i>`), so
    it becomes a weight-table entry. Returns the number of weight constants."""
    taken = {n for c in constants(module) if (n := const_name(c))}
    count, i = 0, 0
    for op in list(module.walk()):
        w = _weight_of(op)
        if w is None or not isinstance(w.owner, ConstantOp):
            continue
        count += 1
        if const_name(w.owner) is None:
            while f"w{i}" in taken:
                i += 1
            set_name(w.owner, f"w{i}")
            taken.add(f"w{i}")
    return count


def dedupe_constants(module: ModuleOp) -> int:
    """Merge identical constants (same type and bytes) of a block into the first one."""
    seen: dict[tuple[int, str, bytes], ConstantOp] = {}
    merged = 0
    for op in constants(module):
        key = (id(op.parent_block()), str(op.result.type), raw_bytes(op))
        first = seen.setdefault(key, op)
        if first is op:
            continue
        if const_name(first) is None and (name := const_name(op)) is not None:
            set_name(first, name)
        op.result.replace_all_uses_with(first.result)
        Rewriter.erase_op(op)
        merged += 1
    return merged


def snapshot(module: ModuleOp) -> dict[str, ConstantOp]:
    """Named constants by name (cloned), to restore names lost by folding and to keep
    folded bindings."""
    return {n: op.clone() for op in constants(module) if (n := const_name(op))}  # type: ignore[misc]


def weight_rewrites(module: ModuleOp, o: Any, stats: RewriteStats, stage: Any) -> None:
    """skip zero -> ternary -> Q8_0 -> unfold (name the matmul weights), as enabled."""
    for name, on, fn in (
        ("skip-zero", o.skip_zero, lambda: skip_zero(module, stats)),
        ("ternary", o.ternary, lambda: pack_matmuls(module, "tq2_0", stats)),
        ("q8_0", o.quant, lambda: pack_matmuls(module, "q8_0", stats)),
        ("unfold", o.unfold, lambda: unfold(module)),
    ):
        if stage is not None:
            stage(name)
        if on:
            fn()
