"""Run-time checks in generated code: a failing check writes the status record.

Why: an out-of-range gather index must not read outside the array, and an integer
division by zero (or `INT_MIN / -1`) must not raise SIGFPE. Kernels of ops that can fail
take one extra trailing argument, the status record `memref<5xi64>` (layout in
`rlx.errors`); a failing element records the first error (code, site, value, bound), then
the kernel goes on with a safe operand (index 0, divisor 1), so nothing traps and nothing
is read out of bounds. `CompiledGraph.run` reads word 0 after the call and raises.

`needs_status(op)` says which ops get the argument; `trap(kb, cond, ...)` emits one check.
The site (which op failed) is not baked into the kernel, so identical ops still share one
kernel: the caller stores the site number into word 4 before each call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from math import prod

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    FileLineColLoc,
    IntegerType,
    MemRefType,
    NameLoc,
    TensorType,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint

from rlx import errors
from rlx.dialects.rlx.base import normalize_axis
from rlx.dialects.rlx.compute import ReduceOp
from rlx.dialects.rlx.control import ElementwiseRegionOp
from rlx.dialects.rlx.elementwise import DivOp, PowOp
from rlx.dialects.rlx.shape import GatherOp
from rlx.lowering.rlx_to_linalg.kernel_builder import KernelBuilder
from rlx.transforms.prepare_func import arg_attr

STATUS_TYPE = MemRefType(i64, [errors.STATUS_WORDS])

INT_DIV_OPS = frozenset(
    {
        "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
        "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui",
    }
)  # fmt: skip
"""Integer division ops of region bodies: each is guarded (`checked_div`)."""

REGION_CHECKED_OPS = INT_DIV_OPS | {"math.ipowi"}
"""Region-body ops that can fail on their data (`guard_region_ops`)."""


def _int_elem(op: Operation, i: int = 0) -> bool:
    t = op.operands[i].type if op.operands else None
    return isinstance(t, TensorType) and isinstance(t.element_type, IntegerType)


def _reduce_count(op: Operation) -> tuple[str | None, int]:
    """`kind` of rlx.reduce and how many elements each result element reduces."""
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    xs = t.get_shape()
    given = op.axes  # type: ignore[attr-defined]
    axes = {normalize_axis(x, len(xs)) for x in (given if given is not None else range(len(xs)))}
    return op.kind, prod(xs[i] for i in axes)  # type: ignore[attr-defined]


def _empty_int_mean(op: Operation) -> bool:
    if not _int_elem(op):
        return False
    kind, count = _reduce_count(op)
    return kind == "mean" and count == 0


_CHECKED: dict[type[Operation], Callable[[Operation], bool]] = {
    GatherOp: lambda op: True,
    DivOp: _int_elem,
    PowOp: _int_elem,
    ReduceOp: _empty_int_mean,
    ElementwiseRegionOp: lambda op: any(o.name in REGION_CHECKED_OPS for o in op.walk()),
}
"""Op class -> whether an op of it checks its data (its kernel calls `trap`)."""


def needs_status(op: Operation) -> bool:
    """Whether `op`'s kernel checks its data at run time (and takes the status record)."""
    check = _CHECKED.get(type(op))
    return check is not None and check(op)


SITES_ATTR = "rlx.error_sites"
"""Function attribute: the description of each checked op, by site number."""


def _where(op: Operation) -> str | None:
    """`file:line:col` of the op, or of the first located op inside it (a fused region's
    ops keep the locations of the ops they came from), or the name of a `loc("name")`
    (an imported ONNX node: `node 'n' (Gather)`), if known."""
    for o in op.walk():
        loc = o.location
        if isinstance(loc, FileLineColLoc) and loc.line.data > 0:
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        if isinstance(loc, NameLoc):
            return loc.desc.data
    return None


_CHECKED_OPERANDS: dict[type[Operation], tuple[int, ...]] = {GatherOp: (1,)}
"""Operands whose values a checked op checks (default: all): a gather checks its indices."""
MAX_NAMES, MAX_NAME, MAX_WHERE = 4, 64, 1024
"""At most this many input names of at most this many characters per site, and a
location of at most MAX_WHERE characters: sites are stored in `.rlx` headers, whose
strings are limited to 4096 characters (`rlx.bake.header`; a 5000-character ONNX node
name made an artifact `rlx.load` refused)."""
TRACE_LIMIT = 256
"""At most this many ops are walked back from a checked op to find the inputs it reads."""


def _arg_name(f: Operation, i: int) -> str:
    """The runtime's name of argument `i` of `f` (`rlx.name`, else `arg<i>`), as
    `convert-rlx-to-linalg` names the entry's inputs."""
    name = arg_attr(f, i, "rlx.name") if isinstance(f, func.FuncOp) else None
    return name or f"arg{i}"


def source_inputs(f: Operation, op: Operation) -> tuple[list[str], bool]:
    """The entry arguments (by their runtime names) that the checked operands of `op` are
    computed from, and whether those operands are such arguments themselves. Why: a
    bad index or divisor usually comes from the caller's data, so the run-time error
    names the input (`[from input 'idx']`), not only the op (ONNX: the node)."""
    body = f.regions[0].blocks.first if f.regions and f.regions[0].blocks else None
    picks = _CHECKED_OPERANDS.get(type(op))
    todo = [v for i, v in enumerate(op.operands) if picks is None or i in picks]
    direct = all(isinstance(v, BlockArgument) and v.block is body for v in todo)
    seen: set[SSAValue] = set()
    found: dict[int, None] = {}
    while todo and len(seen) < TRACE_LIMIT:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if v.block is body:
                found[v.index] = None
        elif isinstance(v, OpResult):
            todo.extend(v.op.operands)
    return [_arg_name(f, i) for i in sorted(found)], direct


def quote_name(name: str) -> str:
    """An input name as a site lists it: Python's `repr` (quotes and control characters
    escaped, so `errors.status_error` can find where the list starts whatever the name
    holds), cut to MAX_NAME characters with a `...` mark after the quote."""
    return repr(name[:MAX_NAME]) + ("..." if len(name) > MAX_NAME else "")


def find_sites(f: Operation) -> dict[Operation, str]:
    """The checked ops of function `f` in walk order, each with its description: its
    source location and name, else its name and position (`rlx.gather (op #3 of @main)`),
    then the inputs its checked operands come from (`source_inputs`; `errors.status_error`
    moves that part to the end of the message)."""
    name = getattr(getattr(f, "sym_name", None), "data", "?")
    out: dict[Operation, str] = {}
    for i, o in enumerate(f.walk()):
        if needs_status(o):
            where = _where(o)
            where = where if where is None or len(where) <= MAX_WHERE else where[:MAX_WHERE] + "..."
            site = f"{where}: {o.name}" if where else f"{o.name} (op #{i} of @{name})"
            names, direct = source_inputs(f, o)
            if names:
                what = "input" if len(names) == 1 else "inputs"
                listed = ", ".join(map(quote_name, names[:MAX_NAMES]))
                if len(names) > MAX_NAMES:
                    listed += f", ... ({len(names)} inputs)"
                site += f" [{'' if direct else 'computed '}from {what} {listed}]"
            out[o] = site
    return out


def status(kb: KernelBuilder) -> SSAValue:
    st = kb.status
    assert st is not None, "kernel of a checked op built without the status argument"
    return st


def trap(
    kb: KernelBuilder,
    cond: SSAValue | None,
    code: int,
    value: SSAValue | int = 0,
    bound: SSAValue | int = 0,
    signed: bool = True,
) -> None:
    """If `cond` (i1; None: always), record error `code` with `value` and `bound` unless an
    earlier error is recorded already."""
    st = status(kb)
    first = Block()
    with kb.at(first):
        for word, v in ((errors.VALUE, value), (errors.BOUND, bound)):
            iv = kb.const(v, i64) if isinstance(v, int) else kb.convert(v, i64, signed=signed)
            kb.store(iv, st, [word])
        kb.store(kb.load(st, [errors.CURRENT]), st, [errors.SITE])
        kb.store(kb.const(code, i64), st, [errors.CODE])
        kb.add(scf.YieldOp())

    def record() -> None:
        clear = kb.cmpi("eq", kb.load(st, [errors.CODE]), kb.const(0, i64))
        kb.add(scf.IfOp(clear, [], [first]))

    if cond is None:
        record()
        return
    check = Block()
    with kb.at(check):
        record()
        kb.add(scf.YieldOp())
    kb.add(scf.IfOp(cond, [], [check]))


@contextmanager
def _before(kb: KernelBuilder, op: Operation) -> Iterator[None]:
    saved = kb.ip
    kb.ip = InsertPoint.before(op)
    try:
        yield
    finally:
        kb.ip = saved


def set_site(kb: KernelBuilder, st: SSAValue, site: int) -> None:
    """Caller side: the next checked kernel reports errors as `site`."""
    kb.add(memref.StoreOp.get(kb.const(site, i64), st, [kb.idx(errors.CURRENT)]))


def checked_div(
    kb: KernelBuilder, cls: type[Operation], a: SSAValue, b: SSAValue, unsigned: bool
) -> SSAValue:
    """`cls(a, b)` (an integer division or remainder) with b == 0 and, signed, INT_MIN / -1
    reported through the status record; the division itself gets a safe divisor of 1."""
    t = a.type
    assert isinstance(t, IntegerType)
    zero, one = kb.const(0, t), kb.const(1, t)
    bz = kb.cmpi("eq", b, zero)
    trap(kb, bz, errors.DIVISION_BY_ZERO, a, signed=not unsigned)
    bad = bz
    if not unsigned and t.width.data > 1:
        ovf = kb.v(
            arith.AndIOp(
                kb.cmpi("eq", b, kb.const(-1, t)),
                kb.cmpi("eq", a, kb.const(-(1 << (t.width.data - 1)), t)),
            )
        )
        trap(kb, ovf, errors.DIVISION_OVERFLOW, a)
        bad = kb.v(arith.OrIOp(bz, ovf))
    return kb.v(cls(a, kb.select(bad, one, b)))  # type: ignore[call-arg]


def checked_pow(kb: KernelBuilder, a: SSAValue, b: SSAValue, unsigned: bool = False) -> SSAValue:
    """Wrapping a ** b by square-and-multiply over the exponent bits; a negative (signed)
    exponent is reported through the status record and computes a ** 0."""
    t = a.type
    assert isinstance(t, IntegerType)
    one, zero = kb.const(1, t), kb.const(0, t)
    if not unsigned:
        neg = kb.cmpi("slt", b, zero)
        trap(kb, neg, errors.NEGATIVE_POW, b)
        b = kb.select(neg, zero, b)

    def step(_: SSAValue, c: list[SSAValue]) -> list[SSAValue]:
        res, base, e = c
        odd = kb.cmpi("ne", kb.v(arith.AndIOp(e, one)), zero)
        res = kb.select(odd, kb.muli(res, base), res)
        return [res, kb.muli(base, base), kb.v(arith.ShRUIOp(e, one))]

    return kb.loop_carry(t.width.data, [one, a, b], step)[0]


def guard_region_ops(kb: KernelBuilder, block: Block) -> None:
    """Replace every integer division of a region body by `checked_div`, and `math.ipowi`
    by `checked_pow` (in place)."""
    for o in list(block.walk()):
        if o.name not in REGION_CHECKED_OPS:
            continue
        a, b = o.operands
        with _before(kb, o):
            if o.name == "math.ipowi":
                q = checked_pow(kb, a, b)
            else:
                q = checked_div(kb, type(o), a, b, o.name.endswith("ui"))
        o.results[0].replace_all_uses_with(q)
        o.detach()
        o.erase()
