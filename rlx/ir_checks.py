"""IR checks that xDSL 0.75's verifier lacks: SSA dominance and shape bounds.

Why: xDSL accepts `%0 = rlx.add %0, %x` and uses before definitions (no dominance
verifier), and any Python int as a dimension. `mlir-opt` rejects both; so do the rlx tools
(`rlx-opt`, `rlx.compile`/`rlx-run`), by calling `check_op` for every op they verify.

* Dominance, as MLIR defines it for SSACFG regions: a value defined in block A is usable by
  an op whose ancestor in A's region sits in a block B that A dominates (after the
  definition when A is B). Uses in unreachable blocks are not checked (as in MLIR), and the
  body of `builtin.module` is a graph region (any order).
* Shape bounds: every static dimension of a shaped result or block-argument type lies in
  [0, 2^63 - 1], and so do the product of the static dimensions (element count) and its
  size in bytes (the generated code computes sizes in i64).
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException, PassFailedException, VerifyException

INT64_MAX = 2**63 - 1
DYNAMIC = frozenset({DYNAMIC_INDEX, -1})
"""xDSL's spellings of a dynamic dimension (`?`)."""

GRAPH_REGION_OPS = frozenset({ModuleOp.name})
"""Ops whose regions are graph regions (no dominance), as `builtin.module` in MLIR."""


class _RegionInfo:
    """Reachability and dominance of a region's blocks, op positions, computed lazily."""

    def __init__(self, region: Region) -> None:
        self.region = region
        self._dominance: DominanceInfo | None = None
        self._reachable: set[Block] | None = None
        self._positions: dict[Block, dict[Operation, int]] = {}

    def reachable(self, block: Block) -> bool:
        if self._reachable is None:
            seen: set[Block] = set()
            stack = [self.region.blocks.first] if self.region.blocks.first else []
            while stack:
                b = stack.pop()
                if b is None or b in seen:
                    continue
                seen.add(b)
                if b.last_op is not None:
                    stack.extend(b.last_op.successors)
            self._reachable = seen
        return block in self._reachable

    def dominates(self, a: Block, b: Block) -> bool:
        if a is b:
            return True
        if self._dominance is None:
            self._dominance = DominanceInfo(self.region)
        return self._dominance.dominates(a, b)

    def position(self, op: Operation) -> int:
        block = op.parent
        assert block is not None
        table = self._positions.get(block)
        if table is None:
            table = {o: i for i, o in enumerate(block.ops)}
            self._positions[block] = table
        return table[op]


class DominanceChecker:
    """Checks uses against definitions; caches per-region information across ops."""

    def __init__(self) -> None:
        self._regions: dict[Region, _RegionInfo] = {}

    def _info(self, region: Region) -> _RegionInfo:
        info = self._regions.get(region)
        if info is None:
            info = self._regions[region] = _RegionInfo(region)
        return info

    def check(self, op: Operation) -> None:
        """Raise VerifyException if an operand of `op` does not dominate it."""
        for index, value in enumerate(op.operands):
            if not self._dominates(value, op):
                raise VerifyException(f"operand #{index} does not dominate this use")

    def _dominates(self, value: SSAValue, user: Operation) -> bool:
        if isinstance(value, OpResult):
            def_block, def_op = value.op.parent, value.op
        elif isinstance(value, BlockArgument):
            def_block, def_op = value.block, None
        else:
            return True
        if def_block is None or def_block.parent is None:
            return True  # detached IR: nothing to compare against
        region = def_block.parent
        ancestor: Operation | None = user
        while ancestor is not None and (
            ancestor.parent is None or ancestor.parent.parent is not region
        ):
            ancestor = ancestor.parent_op()
        if ancestor is None:
            return False  # used outside the region that defines it
        if ancestor is def_op:
            return False  # a result used inside its own op
        parent = region.parent
        if parent is not None and parent.name in GRAPH_REGION_OPS:
            return True
        info = self._info(region)
        use_block = ancestor.parent
        assert use_block is not None
        if not info.reachable(use_block):
            return True
        if def_op is None or use_block is not def_block:
            return info.dominates(def_block, use_block)
        return info.position(def_op) < info.position(ancestor)


def _shaped_types(op: Operation) -> Iterator[tuple[str, Attribute]]:
    for i, r in enumerate(op.results):
        yield f"result #{i}", r.type
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                yield f"block argument #{arg.index}", arg.type


def check_shape_bounds(op: Operation) -> None:
    """Raise VerifyException for a dimension or element count beyond int64."""
    for what, t in _shaped_types(op):
        get_shape = getattr(t, "get_shape", None)
        if get_shape is None:
            continue
        try:
            shape = tuple(get_shape())
        except Exception:  # e.g. unranked types
            continue
        numel = span = 1
        for d in shape:
            if d in DYNAMIC:
                continue
            if not 0 <= d <= INT64_MAX:
                raise VerifyException(
                    f"{what} has type {t}: dimension {d} is outside [0, 2^63 - 1]"
                )
            numel *= d
            span *= max(d, 1)
        if numel > INT64_MAX:
            raise VerifyException(f"{what} has type {t}: {numel} elements exceed 2^63 - 1")
        if numel * _element_bytes(t) > INT64_MAX:
            raise VerifyException(
                f"{what} has type {t}: {numel * _element_bytes(t)} bytes exceed 2^63 - 1"
            )
        if span * _element_bytes(t) > INT64_MAX:
            # an empty tensor whose other dims overflow its strides: NumPy cannot make
            # the array (`rlx.compile` raised its bare "array is too big")
            raise VerifyException(
                f"{what} has type {t}: its strides span {span * _element_bytes(t)} bytes, "
                "beyond 2^63 - 1 (an empty tensor with too large other dims)"
            )


def _element_bytes(t: Attribute) -> int:
    """Bytes per element of a shaped type (0 if unknown): sizes are i64 in the code."""
    element = getattr(t, "element_type", None)
    width = getattr(element, "bitwidth", None)
    if width is None:
        width = getattr(getattr(element, "width", None), "data", None)
    if isinstance(element, IndexType):
        width = 64
    return (width + 7) // 8 if isinstance(width, int) else 0


def check_op(op: Operation, dominance: DominanceChecker | None = None) -> None:
    """The checks of this module for one op (not its nested ops)."""
    check_shape_bounds(op)
    (dominance or DominanceChecker()).check(op)


FOREIGN_VERIFIER_ERRORS = (AssertionError, ValueError, LookupError, TypeError, ArithmeticError,
                           AttributeError)  # fmt: skip
"""What (besides a bare `Exception`) the verifiers of xDSL's own dialects may raise on a malformed op instead of a
`VerifyException` (xDSL 0.75's `memref.load` raises a bare `Exception("expected an index
for each dimension")`: docs/xdsl-workarounds.md, item 9): reported as that op's verifier
error. An rlx op's verifier raising anything else stays an internal error (a bug)."""


def find_failure(op: Operation) -> tuple[Operation, DiagnosticException] | None:
    """Verify `op` and everything nested, innermost first; the first failing op and error.

    xDSL's `Operation.verify()` loses track of which nested op failed, so each op is
    verified non-recursively (nested ops first, as xDSL does), then checked by `check_op`.
    An empty block is reported at its parent op ("needs a terminator").
    """
    dominance = DominanceChecker()

    def visit(op: Operation) -> tuple[Operation, DiagnosticException] | None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    if (failure := visit(child)) is not None:
                        return failure
                if block.first_op is None:
                    try:
                        block.verify()
                    except DiagnosticException as e:
                        return op, e
        if (twice := _redefined_symbol(op)) is not None:
            return twice
        try:
            op.verify(verify_nested_ops=False)
            check_op(op, dominance)
        except DiagnosticException as e:
            return op, e
        except Exception as e:
            foreign = type(e) is Exception or isinstance(e, FOREIGN_VERIFIER_ERRORS)
            if not foreign or op.name.startswith("rlx."):
                raise  # rlx verifiers raise VerifyException: anything else is a bug in rlx
            text = str(e) if type(e) is Exception else f"{type(e).__name__}: {e}".rstrip(": ")
            return op, VerifyException(text)
        return None

    return visit(op)


def _redefined_symbol(op: Operation) -> tuple[Operation, DiagnosticException] | None:
    """The second op defining a symbol already defined in `op`'s symbol table (two
    functions named alike), with the error: xDSL's SymbolTable check reports it at the
    module, which has no source line, so the diagnostic had no location."""
    if not op.has_trait(SymbolTable):
        return None
    seen: set[str] = set()
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                name = child.properties.get("sym_name") or child.attributes.get("sym_name")
                if not isinstance(name, StringAttr):
                    continue
                if name.data in seen:
                    return child, VerifyException(
                        f'redefinition of symbol "{name.data}" (defined earlier in the module)'
                    )
                seen.add(name.data)
    return None


def graph_block(f: Operation, what: str) -> Block:
    """The one block of graph function `f` (a `func.func`); `PassFailedException` naming
    `what` (the pass) when it has several (cf branches): rlx's graph passes work on
    single-block functions, as `convert-rlx-to-linalg` requires (a multi-block function made
    them crash on xDSL's `Region.block`)."""
    region = f.regions[0]
    if len(region.blocks) != 1:
        name = getattr(getattr(f, "sym_name", None), "data", "?")
        raise PassFailedException(
            f"{what}: @{name} must have a single block (it has {len(region.blocks)})"
        )
    return region.blocks[0]
