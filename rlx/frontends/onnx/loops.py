"""ONNX `Scan` and `Loop` -> `rlx.scan` (the body imported once, as the scan's region).

* **Scan** (opsets 9-25): the state variables are the carries, the scan inputs the `xs`
  (each moved to axis 0 with `rlx.transpose` for `scan_input_axes`, reversed with a gather
  for `scan_input_directions`); the scan outputs are stacked on axis 0, then reversed for
  `scan_output_directions` and moved to `scan_output_axes`. The sequence length must be
  static (an empty sequence gives empty outputs). **Scan-8** (batch axis 0, sequence
  axis 1, full-length `sequence_lens` only): an outer `rlx.scan` over the batch rows.
* **Loop** (opsets 1-25) with a compile-time trip count `M`: carries are the iteration
  number (`i64`, from 0) and the loop-carried values; scan outputs are stacked on axis 0.
  When the body's condition output is not the constant true (for a true initial
  condition), the condition is carried too and the body runs inside an `rlx.if` on it:
  once it is false every later step yields its carries unchanged (exact; the body does
  not run, so it cannot fail on the values it would have seen). Such a loop runs a
  run-time number of iterations, so it cannot have scan outputs (their length would be
  that number), and `M` is bounded by `_MAX_GUARDED`.
  With `M = 0` the scan is empty (carries unchanged, empty scan outputs).
* **Unrolled** (the importer's old scheme, kept for what `rlx.scan` cannot express): a Loop
  without a compile-time trip count, one whose carried values change type between
  iterations, one with a computed condition and scan outputs, or one whose body needs the
  iteration number as a compile-time operand (e.g. Slice starts, as in ONNX's
  `test_loop11`) is unrolled when the condition becomes known at import time in every
  iteration (up to `_MAX_TRIPS`); otherwise the import fails naming the reason.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx.base import DYN, tensor
from rlx.dialects.rlx.control import IfOp, ScanOp, YieldOp
from rlx.frontends.onnx.node import Node, elem, norm_axis, shape
from rlx.frontends.onnx.ops_tensor import slice_axis
from rlx.frontends.onnx.registry import OnnxImportError, converter

_MAX_TRIPS = 4096
"""Loops longer than this are not unrolled."""
_MAX_GUARDED = 1 << 20
"""Longest trip count of a Loop whose condition is computed (each step past the last
iteration still costs a branch)."""

Val = SSAValue | np.ndarray
I64 = IntegerType(64)
BOOL = IntegerType(1)


def _known_bool(v: Val) -> bool | None:
    return bool(np.asarray(v).reshape(-1)[0]) if isinstance(v, np.ndarray) else None


def _value(n: Node, v: Val) -> SSAValue:
    return v if isinstance(v, SSAValue) else n.ctx.materialize(np.asarray(v))


def reverse0(n: Node, x: SSAValue) -> SSAValue:
    return slice_axis(n, x, 0, -1, -(2**63), -1)


def _move_axis(n: Node, x: SSAValue, src: int, dst: int) -> SSAValue:
    """`x` with axis `src` moved to position `dst` (the other axes keep their order)."""
    perm = [a for a in range(len(shape(x))) if a != src]
    perm.insert(dst, src)
    return x if perm == sorted(perm) else n.emit("transpose", x, permutation=perm)


def scan_op(
    n: Node, inits: list[SSAValue], xs: list[SSAValue], block: Block, ys: list[SSAValue],
    length: int,
) -> ScanOp:  # fmt: skip
    """Append the `rlx.scan` of `block` (already ended by its yield of `ys`); a body whose
    carries change type raises VerifyException (the caller reports or falls back)."""
    types = [*(v.type for v in inits)]
    types += [tensor((length, *shape(y)), elem(y)) for y in ys[len(inits) :]]
    op = ScanOp(inits, xs, types, Region(block), length)
    op.verify()
    n.ctx.g.add_op(op)
    return op


def _discard(block: Block) -> None:
    """Drop a region body that will not be used (its ops' uses of outer values go too)."""
    for o in reversed(list(block.walk())):
        o.drop_all_references()


# ----------------------------------------------------------------------------- Scan


def _scan_body(n: Node, inits: list[SSAValue], xs: list[SSAValue]) -> list[SSAValue]:
    """`rlx.scan` of the node's body over `xs` (scanned axis first), emitted where the graph
    emits now: the final states, then the per-step outputs stacked on axis 0."""
    lens = {shape(x)[0] for x in xs}
    if len(lens) != 1 or DYN in lens:
        raise n.error(f"scan inputs need one static sequence length, got {sorted(lens)}")
    (steps,) = lens
    block = Block(
        arg_types=[*(v.type for v in inits), *(tensor(shape(x)[1:], elem(x)) for x in xs)]
    )
    outs = n.ctx.run_region(n.attr("body"), list(block.args), block)
    ys = n.ctx.yield_values(block, outs)
    try:
        return list(scan_op(n, inits, xs, block, ys, steps).results)
    except VerifyException as e:
        raise n.error(f"the body does not keep its state types: {e}") from None


@converter(
    "Scan",
    attrs=("body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
           "scan_output_axes", "scan_output_directions", "directions"),
)  # fmt: skip
def scan(n: Node) -> list[Val]:
    if n.ctx.opset < 9:
        return _scan8(n)
    if "directions" in n.attrs:
        raise n.error("attribute 'directions' is Scan-8 only (opset 9 has scan_input_directions)")
    k = n.attr("num_scan_inputs")
    if not 1 <= k <= len(n.proto.input):  # 2^31 built lists of 2^31 axes (a hang)
        raise n.error(f"num_scan_inputs {k} must be 1 to the {len(n.proto.input)} inputs")
    n_state = len(n.proto.input) - k
    inits = [n.input(i) for i in range(n_state)]
    n_out = len(n.attr("body").output) - n_state
    in_axes = list(n.attr("scan_input_axes", [0] * k))
    in_dirs = list(n.attr("scan_input_directions", [0] * k))
    out_axes = list(n.attr("scan_output_axes", [0] * n_out))
    out_dirs = list(n.attr("scan_output_directions", [0] * n_out))
    xs = []
    for i in range(k):
        x = n.input(n_state + i)
        x = _move_axis(n, x, norm_axis(n, in_axes[i], len(shape(x)), "scan_input_axes"), 0)
        xs.append(reverse0(n, x) if in_dirs[i] else x)
    res = _scan_body(n, inits, xs)
    ys = res[n_state:]
    for o, (ax, d) in enumerate(zip(out_axes, out_dirs, strict=True)):
        y = reverse0(n, ys[o]) if d else ys[o]
        ys[o] = _move_axis(n, y, 0, norm_axis(n, ax, len(shape(y)), "scan_output_axes"))
    return [*res[:n_state], *ys]


def _scan8(n: Node) -> list[Val]:
    """Scan-8: a batch axis 0 on every state and scan input (sequence axis 1), optional
    `sequence_lens` (input 0; must be the full length), input `directions`. An outer
    `rlx.scan` over the batch holds the scan over the sequence of each batch row."""
    k = n.attr("num_scan_inputs")
    if not 1 <= k <= len(n.proto.input) - 1:
        raise n.error(f"num_scan_inputs {k} must be 1 to the {len(n.proto.input) - 1} inputs")
    n_state = len(n.proto.input) - 1 - k
    vals = [n.input(1 + i) for i in range(n_state + k)]
    dirs = list(n.attr("directions", [0] * k))
    batch = {shape(v)[0] for v in vals}
    if len(batch) != 1 or DYN in batch:
        raise n.error(f"states and scan inputs need one static batch size, got {sorted(batch)}")
    if n.has(0):
        lens = np.asarray(n.const(0, "sequence_lens "))
        full = {shape(x)[1] for x in vals[n_state:]}
        if len(full) != 1 or not (lens == next(iter(full))).all():
            raise n.error("sequence_lens shorter than the scan inputs are not supported")
    block = Block(arg_types=[tensor(shape(v)[1:], elem(v)) for v in vals])
    with n.ctx.g.building(block):
        args = list(block.args)
        xs = [reverse0(n, x) if d else x for x, d in zip(args[n_state:], dirs, strict=True)]
        res = _scan_body(n, args[:n_state], xs)
    block.add_op(YieldOp(*res))
    return list(scan_op(n, [], vals, block, res, next(iter(batch))).results)


# ----------------------------------------------------------------------------- Loop


def _count(n: Node, it: SSAValue) -> SSAValue:
    return n.emit("add", it, n.constant(np.array(1, np.int64)))


def _cond(n: Node, c: Val) -> SSAValue:
    """A loop condition as a rank-0 i1 tensor."""
    v = _value(n, c)
    if elem(v) != BOOL:
        raise n.error(f"the loop condition must be a bool tensor, got {v.type}")
    return n.reshape(v, [])


def _fixed(n: Node, m: int, carried: list[SSAValue]) -> list[Val] | None:
    """The loop as a scan of exactly `m` steps, if its body's condition is always true (or
    there are no steps: empty scan outputs of the body's per-step types)."""
    body = n.attr("body")
    block = Block(arg_types=[tensor((), I64), *(v.type for v in carried)])
    it, *cs = block.args
    try:
        outs = n.ctx.run_region(body, [it, np.array(True), *cs], block)
    except OnnxImportError:  # e.g. the iteration number used as a compile-time operand
        _discard(block)
        raise
    if m and _known_bool(outs[0]) is not True:
        _discard(block)
        return None
    with n.ctx.g.building(block):
        nxt = _count(n, it)
    ys = n.ctx.yield_values(block, [nxt, *outs[1:]])
    init = n.constant(np.array(0, np.int64))
    try:
        op = scan_op(n, [init, *carried], [], block, ys, m)
    except VerifyException:
        _discard(block)
        return None
    return list(op.results[1:])


def _guarded(n: Node, m: int, cond: SSAValue, carried: list[SSAValue]) -> list[Val] | None:
    """The loop as a scan of `m` steps carrying the condition; each step runs the body in an
    `rlx.if` on it (see the module docstring). None if the carried types change."""
    body = n.attr("body")
    block = Block(arg_types=[tensor((), I64), tensor((), BOOL), *(v.type for v in carried)])
    it, c, *cs = block.args
    then_b, else_b = Block(), Block()
    try:
        outs = n.ctx.run_region(body, [it, np.array(True), *cs], then_b)
    except OnnxImportError:
        _discard(then_b)
        raise
    with n.ctx.g.building(then_b):
        c_out = _cond(n, outs[0])
    n.ctx.yield_values(then_b, [c_out, *outs[1:]])
    with n.ctx.g.building(else_b):
        false = n.constant(np.array(False))
    else_b.add_op(YieldOp(false, *cs))
    with n.ctx.g.building(block):
        guard = IfOp(c, [v.type for v in (c, *cs)], Region(then_b), Region(else_b))
        try:
            guard.verify()
        except VerifyException:
            _discard(block)
            _discard(then_b)
            return None
        n.ctx.g.add_op(guard)
        nxt = _count(n, it)
    block.add_op(YieldOp(nxt, *guard.results))
    init = n.constant(np.array(0, np.int64))
    op = scan_op(n, [init, cond, *carried], [], block, [nxt, *guard.results], m)
    return list(op.results[2:])


@converter("Loop", attrs=("body",))
def loop(n: Node) -> list[Val]:
    body = n.attr("body")
    n_carried = len(n.proto.input) - 2
    n_scan = len(body.output) - 1 - n_carried
    trips = n.const(0, "trip count ") if n.has(0) else None  # rlx.scan needs a static length
    if trips is None:
        return _unrolled(n)
    m = max(int(np.asarray(trips).reshape(-1)[0]), 0)
    c0 = n.ctx.known.get(n.proto.input[1]) if n.has(1) else np.array(True)
    if _known_bool(c0) is False:
        m = 0
    carried = [n.input(i + 2) for i in range(n_carried)]
    params = dict(n.ctx.params)
    first: OnnxImportError | None = None
    try:
        if _known_bool(c0) is True or m == 0:
            res = _fixed(n, m, carried)
            if res is not None:
                return res
            n.ctx.params = dict(params)
        if n_scan == 0 and m <= _MAX_GUARDED:
            res = _guarded(n, m, _cond(n, n.input(1) if c0 is None else c0), carried)
            if res is not None:
                return res
    except OnnxImportError as e:
        first = e
    n.ctx.params = params
    try:
        return _unrolled(n)
    except OnnxImportError:
        if first is not None and m <= _MAX_TRIPS:
            raise first from None  # the body itself is not importable as a region
        raise


def _unrolled(n: Node) -> list[Val]:
    """The loop unrolled at import time (see the module docstring)."""
    body = n.attr("body")
    trips = n.const(0, "trip count ") if n.has(0) else None
    if n.has(1) and n.proto.input[1] not in n.ctx.known:
        raise n.error(
            f"input #1 condition ('{n.proto.input[1]}') must be a constant when the loop "
            "cannot be a scan (no constant trip count, carried values changing type, or "
            "scan outputs with a computed condition)"
        )
    cond: Val = n.ctx.known[n.proto.input[1]] if n.has(1) else np.array(True)
    m = _MAX_TRIPS + 1 if trips is None else int(np.asarray(trips).reshape(-1)[0])
    carried: list[Val] = [n.ctx.known.get(x, None) if x in n.ctx.known else n.input(i + 2)
                          for i, x in enumerate(n.proto.input[2:])]  # fmt: skip
    n_carried = len(carried)
    scans: list[list[SSAValue]] = []
    it = 0
    while it < m and _known_bool(cond):  # type: ignore[arg-type]
        if it >= _MAX_TRIPS:
            raise n.error(f"loops of more than {_MAX_TRIPS} iterations are not unrolled")
        outs = n.ctx.run_body(body, [np.array(it, np.int64), np.asarray(cond), *carried])
        cond = outs[0]
        if not isinstance(cond, np.ndarray):
            raise n.error(
                "the loop condition must be known at import time: this loop is unrolled "
                "(no constant trip count, carried values changing type, or scan outputs "
                "with a computed condition)"
            )
        carried = outs[1 : 1 + n_carried]
        for k, v in enumerate(outs[1 + n_carried :]):
            if len(scans) <= k:
                scans.append([])
            scans[k].append(_value(n, v))
        it += 1
    n_scan = len(body.output) - 1 - n_carried
    if it == 0 and n_scan:
        raise n.error("a loop with zero iterations and scan outputs is not supported")
    return [*carried, *(_stack(n, s) for s in scans)]


def _stack(n: Node, parts: list[SSAValue]) -> SSAValue:
    """Per-iteration values stacked along a new axis 0."""
    rs = [n.reshape(p, [1, *shape(p)]) for p in parts]
    return rs[0] if len(rs) == 1 else n.emit("concat", *rs, axis=0)
