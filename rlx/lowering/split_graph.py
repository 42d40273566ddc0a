"""`split-graph`: outline a long graph function into `noinline` parts of at most
`max-calls` kernel calls each, so LLVM optimises many small functions instead of one huge
one (its time on a single function grows faster than linearly with the function's size).

Runs after `plan-memory`, on every public function definition whose (single) block holds
more than `max-calls` kernel calls (`func.call` and `rlx_rt.parallel_call`, counted also
inside loops). The top-level ops are cut, in order, into consecutive segments of about the
same number of calls (at most `max-calls`; an op whose loop holds more calls is a segment
of its own). Segment `i` moves into a new private function `@<name>_part<i>`:

  * it takes exactly the graph function's arguments (same types; the `rlx.*` entries of
    the argument attributes, e.g. `rlx.kind` / `rlx.name`, and no `llvm.*` promises: as a
    private function it gets none from `convert-func-to-llvm` either);
  * it is marked `passthrough = ["noinline"]` (kept by `convert-func-to-llvm`);
  * a view or constant defined in an earlier segment (`memref.view` of the arena,
    `memref.get_global`, reshape views, `arith.constant`, ...) is rematerialised in it:
    its defining chain, which only reads the arguments, is cloned.

The graph function keeps its name, signature, argument and function attributes (the ABI
the runtime calls) and its body becomes the calls of the parts, in order.

A function is left as it is when splitting could change its meaning: a top-level
`memref.alloc` / `memref.alloca` / `memref.dealloc` (a buffer `plan-memory` did not place),
a `func.return` with operands, or a value crossing a segment boundary that is not a
rematerialisable view/constant (a call result, the result of any other op).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from rlx.dialects.rlx_rt import ParallelCallOp

PASS = "split-graph"

REMAT_OPS: tuple[type[Operation], ...] = (
    memref.ViewOp,
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.CastOp,
    memref.GetGlobalOp,
    arith.ConstantOp,
)
"""Side-effect-free ops that may be cloned into every segment that uses their result."""

_CALLS = (func.CallOp, ParallelCallOp)
_BUFFER_OPS = (memref.AllocOp, memref.AllocaOp, memref.DeallocOp)


def count_calls(op: Operation) -> int:
    """Kernel calls (`func.call`, `rlx_rt.parallel_call`) in `op`, itself included."""
    if not op.regions:
        return 1 if isinstance(op, _CALLS) else 0
    return sum(1 for o in op.walk() if isinstance(o, _CALLS))


def _outer_operands(op: Operation) -> tuple[SSAValue, ...]:
    """Operands of `op` and of the ops nested in it that are defined outside `op`."""
    if not op.regions:
        return tuple(op.operands)
    inner: set[SSAValue] = set()
    out: list[SSAValue] = []
    for o in op.walk():
        for r in o.regions:
            for b in r.blocks:
                inner.update(b.args)
        for v in o.operands:
            if v not in inner:
                out.append(v)
        inner.update(o.results)
    return tuple(out)


@dataclass
class _Plan:
    """How one function is cut: its rematerialisable top-level ops, the segment of every
    other one (the return excluded), the number of segments, and what every top-level op
    uses from the function's block (its operands and those of the ops nested in it)."""

    remat: set[Operation]
    segment: dict[Operation, int]
    parts: int
    outer: dict[Operation, tuple[SSAValue, ...]]


def plan_split(f: func.FuncOp, max_calls: int) -> _Plan | None:
    """The cut of `f`, or None when `f` stays as it is (few calls, or not safely splittable)."""
    if f.is_declaration or len(f.body.blocks) != 1:
        return None
    block = f.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp) or ret.operands:
        return None
    weights: dict[Operation, int] = {}
    remat: set[Operation] = set()
    outer: dict[Operation, tuple[SSAValue, ...]] = {}
    for o in block.ops:
        if o is ret:
            continue
        if isinstance(o, _BUFFER_OPS):
            return None  # a buffer plan-memory did not place: keep it simple, do not split
        outer[o] = uses = _outer_operands(o)
        if (
            isinstance(o, REMAT_OPS)
            and not o.regions
            and all(
                isinstance(v, BlockArgument) or (isinstance(v, OpResult) and v.op in remat)
                for v in uses
            )
        ):
            remat.add(o)
        else:
            weights[o] = count_calls(o)
    total = sum(weights.values())
    if total <= max_calls:
        return None
    n_parts = -(-total // max_calls)
    limit = -(-total // n_parts)  # balanced: every part about the same number of calls
    segment: dict[Operation, int] = {}
    seg, count = 0, 0
    for o, w in weights.items():
        if count and count + w > limit:
            seg, count = seg + 1, 0
        segment[o] = seg
        count += w
    for o, i in segment.items():  # every value crossing a boundary must be rematerialisable
        for v in outer[o]:
            if isinstance(v, OpResult) and v.op not in remat and segment[v.op] != i:
                return None
    return _Plan(remat, segment, seg + 1, outer)


def _rlx_arg_attrs(f: func.FuncOp) -> ArrayAttr[DictionaryAttr] | None:
    """The `rlx.*` entries of `f`'s argument attributes (no `llvm.*` promises)."""
    if f.arg_attrs is None:
        return None
    return ArrayAttr(
        [
            DictionaryAttr({k: v for k, v in d.data.items() if k.startswith("rlx.")})
            for d in f.arg_attrs.data
        ]
    )


def _unique_name(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


class _Segment:
    """The body of one part under construction: the values it sees for the function's."""

    def __init__(self, fblock: Block, plan: _Plan, placed: set[Operation]) -> None:
        self.body = Block(arg_types=[a.type for a in fblock.args])
        for new, old in zip(self.body.args, fblock.args, strict=True):
            new.name_hint = old.name_hint
        self.vmap: dict[SSAValue, SSAValue] = dict(zip(fblock.args, self.body.args, strict=True))
        self.plan = plan
        self.placed = placed
        """Remat ops already moved (not cloned) into some segment of the function."""

    def local(self, v: SSAValue) -> SSAValue:
        """`v` as seen in this segment: an argument, a result of an op moved into it, or a
        view/constant moved (first use) or cloned (later uses) into it."""
        got = self.vmap.get(v)
        if got is not None:
            return got
        assert isinstance(v, OpResult)
        op = v.op
        if op not in self.plan.remat:
            return v  # an op already moved into this segment (plan_split checked it)
        operands = [self.local(x) for x in self.plan.outer[op]]
        if op in self.placed:  # moved into an earlier segment: clone it here
            new_op = op.create(
                operands=operands,
                result_types=[r.type for r in op.results],
                attributes=dict(op.attributes),
                properties=dict(op.properties),
            )
            for r, nr in zip(op.results, new_op.results, strict=True):
                nr.name_hint = r.name_hint
        else:
            self.placed.add(op)
            op.detach()
            if any(a is not b for a, b in zip(operands, self.plan.outer[op], strict=True)):
                op.operands = operands
            new_op = op
        self.body.add_op(new_op)
        for r, nr in zip(op.results, new_op.results, strict=True):
            self.vmap[r] = nr
        return self.vmap[v]

    def move(self, op: Operation) -> None:
        """Move the top-level `op` to the end of the segment, after what it uses."""
        uses = self.plan.outer[op]
        mapping = {v: self.local(v) for v in uses}
        op.detach()
        self.body.add_op(op)
        if all(k is m for k, m in mapping.items()):
            return
        if not op.regions:
            op.operands = [mapping[v] for v in uses]
            return
        for inner in op.walk():
            if any(v in mapping for v in inner.operands):
                inner.operands = [mapping.get(v, v) for v in inner.operands]


def split_function(f: func.FuncOp, plan: _Plan, taken: set[str]) -> list[func.FuncOp]:
    """Move the segments of `f` into new private functions; `f` calls them. Returns them."""
    block = f.body.block
    ret = block.last_op
    assert ret is not None
    arg_attrs = _rlx_arg_attrs(f)
    noinline = ArrayAttr([StringAttr("noinline")])
    placed: set[Operation] = set()
    by_segment: list[list[Operation]] = [[] for _ in range(plan.parts)]
    for o, i in plan.segment.items():
        by_segment[i].append(o)
    parts: list[func.FuncOp] = []
    for i, ops in enumerate(by_segment):
        seg = _Segment(block, plan, placed)
        for o in ops:
            seg.move(o)
        seg.body.add_op(func.ReturnOp())
        name = _unique_name(f"{f.sym_name.data}_part{i}", taken)
        part = func.FuncOp(
            name, f.function_type, Region(seg.body), visibility="private", arg_attrs=arg_attrs
        )
        part.attributes["passthrough"] = noinline
        parts.append(part)
    # What is left in the function: rematerialisable ops no segment used (dead).
    for o in reversed([o for o in block.ops if o is not ret]):
        Rewriter.erase_op(o)
    args = list(block.args)
    Rewriter.insert_op(
        [func.CallOp(p.sym_name.data, args, []) for p in parts], InsertPoint.before(ret)
    )
    return parts


def split_module(module: ModuleOp, max_calls: int) -> dict[str, int]:
    """Split every public graph function of `module`; returns name -> number of parts."""
    taken = {
        s.data
        for o in module.ops
        if isinstance(s := o.attributes.get("sym_name") or o.properties.get("sym_name"), StringAttr)
    }
    done: dict[str, int] = {}
    for f in list(module.ops):
        if not isinstance(f, func.FuncOp):
            continue
        if f.sym_visibility is not None and f.sym_visibility.data != "public":
            continue
        plan = plan_split(f, max_calls)
        if plan is None:
            continue
        parts = split_function(f, plan, taken)
        Rewriter.insert_op(parts, InsertPoint.after(f))
        done[f.sym_name.data] = len(parts)
    return done


@dataclass(frozen=True)
class SplitGraphPass(ModulePass):
    """Outline long graph functions into noinline parts of at most max-calls kernel calls."""

    name = "split-graph"
    main_option: ClassVar[str] = "max_calls"

    max_calls: int = 256
    """Most kernel calls (func.call, rlx_rt.parallel_call) in one part; at least 1."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_calls < 1:
            raise PassFailedException(f"{PASS}: max-calls must be at least 1, got {self.max_calls}")
        split_module(op, self.max_calls)


__all__ = ["REMAT_OPS", "SplitGraphPass", "count_calls", "plan_split", "split_module"]
