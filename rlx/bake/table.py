"""The weight table of a bake: every weight the module holds, including values produced by
folding (a transposed param, scale x weight, a batch norm folded into a conv), and the
reason each matmul a profile leaves dense stays dense (`kept dense:` lines).

A constant enters the table when it is named (a bound param, or named by `unfold`) or when
it is not a splat and holds more than `INLINE_MAX_BYTES`: a compact module then carries
no weight bytes inline.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import SSAValue

from rlx.bake.profiles import BakeOptions
from rlx.bake.rewrites import (
    RewriteStats,
    WeightEntry,
    _weight_of,
    array_of,
    const_name,
    constants,
    raw_bytes,
    set_name,
)
from rlx.dialects.rlx.base import DYN, shape_of
from rlx.dialects.rlx.compute import MatmulOp
from rlx.dialects.rlx.fused import FusedMatmulBiasActOp
from rlx.dialects.rlx.leaves import ConstantOp, ParamOp
from rlx.dialects.rlx.quant import DequantMatmulOp
from rlx.dtypes import type_name
from rlx.formats import ggml

INLINE_MAX_BYTES = 64
"""Non-splat constants up to this size (16 f32) may stay inline in the module."""


def _is_splat(op: ConstantOp) -> bool:
    """Every element has the same bytes (printed as one value, whatever the storage)."""
    t = op.result.type
    assert isinstance(t, TensorType)
    raw = np.frombuffer(raw_bytes(op), np.uint8)
    n = int(np.prod(shape_of(t)))
    if n <= 1 or raw.size % n:
        return n <= 1
    rows = raw.reshape(n, raw.size // n)
    return bool((rows == rows[0]).all())


def name_folded(module: ModuleOp, original: set[int]) -> dict[str, str]:
    """Name every unnamed non-splat constant above INLINE_MAX_BYTES (`c<i>`), so values
    produced by folding enter the table. Returns name -> note (`original`: ids of the
    constant ops the graph had before the rewrites)."""
    taken = {n for c in constants(module) if (n := const_name(c))}
    notes, i = {}, 0
    for op in constants(module):
        if const_name(op) is not None or len(raw_bytes(op)) <= INLINE_MAX_BYTES or _is_splat(op):
            continue
        while f"c{i}" in taken:
            i += 1
        set_name(op, f"c{i}")
        taken.add(f"c{i}")
        notes[f"c{i}"] = "graph constant" if id(op) in original else "computed by folding"
    return notes


def _encoding(op: ConstantOp) -> tuple[str, list[int]]:
    t = op.result.type
    assert isinstance(t, TensorType)
    for use in op.result.uses:
        u = use.operation
        if isinstance(u, DequantMatmulOp) and u.packed == op.result:
            return f"gguf_{u.scheme}", [u.k, u.n]
    return type_name(t.element_type), list(shape_of(t))


def _entry(op: ConstantOp, name: str, live: bool, note: str) -> WeightEntry:
    t = op.result.type
    assert isinstance(t, TensorType)
    enc, logical = _encoding(op) if live else (type_name(t.element_type), list(shape_of(t)))
    data = np.frombuffer(raw_bytes(op), np.uint8)
    return WeightEntry(
        name, logical, enc, type_name(t.element_type), list(shape_of(t)), data, note, live
    )


def weight_table(
    module: ModuleOp,
    bound: list[str],
    before: Mapping[str, ConstantOp],
    keep_folded: bool,
    stats: RewriteStats,
    original: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[WeightEntry]:
    """One entry per named constant of the module (names lost by folding are restored
    by payload, other values named by `name_folded`); bindings no longer in the graph are
    kept (not live) or counted dropped."""
    by_payload = {(str(c.result.type), raw_bytes(c)): n for n, c in before.items()}
    for op in constants(module):  # restore names lost by folding before naming new values
        if const_name(op) is None:
            name = by_payload.get((str(op.result.type), raw_bytes(op)))
            if name is not None and not any(const_name(o) == name for o in constants(module)):
                set_name(op, name)
    unnamed = name_folded(module, original)
    table: list[WeightEntry] = []
    names: set[str] = set()
    for op in constants(module):
        name = const_name(op)
        if name is None:
            continue
        if name in names:
            name = f"{name}.{_encoding(op)[0]}"
            set_name(op, name)
        names.add(name)
        enc = _encoding(op)[0]
        note = {"gguf_tq2_0": "ternary, lossless", "gguf_q8_0": "Q8_0, lossy"}.get(enc, "")
        base = name.split(".")[0]
        extra = unnamed.get(base, "" if base in before else "computed by folding")
        note = ", ".join(x for x in (note, extra) if x)
        table.append(_entry(op, name, True, note))
    for name in bound:
        if name in names or name not in before:
            continue
        if keep_folded:
            table.append(
                _entry(before[name], name, False, "folded into the graph; not used at run time")
            )
        else:
            stats.folded_bindings_dropped += 1
    return table


# ----------------------------------------------------------------------------- kept dense


def _label(v: SSAValue) -> str:
    owner = v.owner
    if isinstance(owner, ConstantOp) and (n := const_name(owner)):
        return n
    if isinstance(owner, ParamOp):
        return owner.param_name
    return f"%{v.name_hint or 'weight'}"


def _reason(op: MatmulOp | FusedMatmulBiasActOp, w: SSAValue, o: BakeOptions) -> str:
    owner = w.owner
    if isinstance(owner, ParamOp):
        return "weight is a param left unbound (no value given to the bake)"
    if not isinstance(owner, ConstantOp):
        return f"weight is computed at run time (by {owner.name}), not a constant"  # type: ignore[union-attr]
    t, x = w.type, op.operands[0].type
    assert isinstance(t, TensorType) and isinstance(x, TensorType)
    if not (o.ternary or o.quant):
        return f"profile {o.profile.value} does not pack matmul weights"
    arr = array_of(owner)
    rt = op.result.type
    if (
        o.skip_zero
        and arr.size
        and not arr.any()
        and isinstance(rt, TensorType)
        and DYN in shape_of(rt)
    ):
        return "all-zero but the result shape is dynamic"
    if isinstance(op, FusedMatmulBiasActOp):
        return "fused_matmul_bias_act is not packed (only rlx.matmul is)"
    if len(shape_of(t)) != 2:
        return f"weight has rank {len(shape_of(t))}, packing needs a rank-2 [K, N] weight"
    if not isinstance(t.element_type, Float32Type) or not isinstance(x.element_type, Float32Type):
        return f"matmul is {type_name(t.element_type)}, packing needs f32"
    k = shape_of(t)[0]
    tern = ggml.is_ternary(arr)
    if tern and o.ternary and k % ggml.BLOCK["tq2_0"][0]:
        blk = ggml.BLOCK["tq2_0"][0]
        if not o.quant or k % ggml.BLOCK["q8_0"][0]:
            return f"ternary but K={k} is not a multiple of the tq2_0 block size {blk}"
    if o.quant:
        return f"K={k} is not a multiple of the q8_0 block size {ggml.BLOCK['q8_0'][0]}"
    return ("not ternary: profile exact packs only ternary weights (lossless); "
            "--opt size or --quant packs Q8_0 (lossy)")  # fmt: skip


def explain_dense(module: ModuleOp, o: BakeOptions) -> list[str]:
    """`<weight>: <reason>` for every matmul still computed dense, one line per weight."""
    out: dict[str, str] = {}
    for op in module.walk():
        if isinstance(op, MatmulOp | FusedMatmulBiasActOp):
            w = _weight_of(op)
            assert w is not None
            out.setdefault(_label(w), _reason(op, w, o))
    return [f"{k}: {v}" for k, v in out.items()]


def param_entries(module: ModuleOp) -> list[WeightEntry]:
    """Runtime mode: a metadata-only table entry (no bytes) per param of the module."""
    out, seen = [], set()
    for op in module.walk():
        if isinstance(op, ParamOp) and op.param_name not in seen:
            seen.add(op.param_name)
            t = op.result.type
            assert isinstance(t, TensorType)
            shape, dt = list(shape_of(t)), type_name(t.element_type)
            out.append(WeightEntry(op.param_name, shape, dt, dt, shape,
                                            np.zeros(0, np.uint8), "set at run time"))  # fmt: skip
    return out
