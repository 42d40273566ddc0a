"""Translation validation: the reference interpreter before and after every pass.

`EquivalenceChecker` runs every function of a module on seeded random inputs with the
reference interpreter (`rlx.interpreter`), and compares the outputs after each pass
with those before it. The first pass that changes an output beyond its tolerance raises an
`OpError` located at the op producing that output, naming the pass, the output, the max
error and the tolerance. Used by `rlx-opt --check-equivalence` (an instrumentation) and
`CompileOptions(check_equivalence=True)` (which also compares the JIT with the reference).

Inputs are valid for the ops that read them: integer indices of `rlx.gather` lie in the
indexed axis, operands of log/sqrt/rsqrt/pow's base and divisors are positive, bools are
0/1, every value has its argument's element type. Params (`rlx.param`) get random values
the same way, by name.

Error measure: max |after - before| over the elements, relative to the output's largest
magnitude (at least 1), so cancellation in one element does not dominate; NaN/inf must
match exactly. Tolerance: the pass class's `equivalence_tolerance` ClassVar (passes that
change numerics on purpose declare one; None skips the pass), else `DEFAULT_TOLERANCE`.

A module the interpreter cannot run (lowered below rlx, dynamic shapes, unsupported ops) or
could not run in reasonable time (`MAX_CHECK_STEPS`, `MAX_CHECK_WORK`) is not checked; a pass that changes the signature (function arguments, params) starts a new
baseline. `checked` counts the passes actually compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from rlx import interpreter as reference
from rlx.diagnostics import OpError
from rlx.dialects.rlx.control import ScanOp
from rlx.dialects.rlx.leaves import ParamOp
from rlx.dialects.rlx.shape import GatherOp
from rlx.transforms.constant_folding import fold_work

DEFAULT_TOLERANCE = 1e-4
JIT_TOLERANCE = 1e-3
"""JIT (f32 code) against the reference (f64 accumulation) on the same inputs."""

MAX_CHECK_STEPS = 1 << 20
"""Op executions of the interpreter per function (a scan's body counts once per step)."""
MAX_CHECK_WORK = 1 << 34
"""Elements the interpreter may touch per function (`constant_folding.fold_work`). A
function over either bound (a scan of 2^32 steps) is not checked: it would hang."""

POSITIVE_OPERAND = {"rlx.log": 0, "rlx.sqrt": 0, "rlx.rsqrt": 0, "rlx.pow": 0, "rlx.div": 1}
VIEW_OPS = frozenset({"rlx.reshape", "rlx.transpose", "rlx.broadcast_to", "rlx.cast", "rlx.slice"})


def _constraint(value: SSAValue) -> tuple[str, int]:
    """("index", bound) | ("positive", 0) | ("any", 0) for the values `value` flows into."""
    seen: list[SSAValue] = [value]
    while seen:
        v = seen.pop()
        for use in v.uses:
            op = use.operation
            if op.name in VIEW_OPS and use.index == 0:
                seen.extend(op.results)
            elif isinstance(op, GatherOp) and use.index == 1:
                x_type = op.operands[0].type
                if isinstance(x_type, TensorType):
                    shape = x_type.get_shape()
                    axis = op.axis % max(len(shape), 1)
                    return ("index", max(int(shape[axis]), 1))
            elif POSITIVE_OPERAND.get(op.name) == use.index:
                return ("positive", 0)
    return ("any", 0)


def random_value(value: SSAValue, rng: np.random.Generator) -> np.ndarray:
    """A random array for `value` (a static tensor), valid for its users (module doc)."""
    typ = value.type
    if not isinstance(typ, TensorType) or any(d < 0 for d in typ.get_shape()):
        raise _Unchecked(f"cannot make inputs of type {typ}")
    shape = tuple(int(d) for d in typ.get_shape())
    dtype = np.dtype(reference.numpy_dtype(typ.element_type))
    kind, bound = _constraint(value)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind in "iu":
        high = bound if kind == "index" else 8
        low = 0 if kind in ("index", "positive") or dtype.kind == "u" else -8
        return rng.integers(low, max(high, low + 1), shape).astype(dtype)
    if kind == "positive":
        return rng.uniform(0.5, 2.0, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


class _Unchecked(Exception):
    """The module cannot be run by the reference interpreter (not an error)."""


@dataclass
class Snapshot:
    """Outputs of every function of a module on the checker's inputs."""

    signature: tuple[Any, ...]
    outputs: dict[str, list[np.ndarray]]
    producers: dict[str, list[Operation | None]]
    inputs: dict[str, list[np.ndarray]] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)


def _functions(module: ModuleOp) -> list[Operation]:
    return [
        op for op in module.walk()
        if op.name == "func.func" and op.regions and op.regions[0].blocks.first is not None
    ]  # fmt: skip


def _params(module: ModuleOp) -> dict[str, SSAValue]:
    found: dict[str, SSAValue] = {}
    for op in module.walk():
        if isinstance(op, ParamOp):
            found.setdefault(op.param_name, op.results[0])
    return found


def _signature(module: ModuleOp) -> tuple[Any, ...]:
    funcs = tuple(
        (f.sym_name.data, tuple(str(a.type) for a in f.regions[0].blocks.first.args))
        for f in _functions(module)
    )
    params = tuple(sorted((n, str(v.type)) for n, v in _params(module).items()))
    return funcs, params


def _producer(value: SSAValue) -> Operation | None:
    return None if isinstance(value, BlockArgument) else value.owner  # type: ignore[return-value]


def _steps(op: Operation) -> int:
    """Op executions of the interpreter for `op` (its regions' ops, a scan's per step)."""
    body = sum(_steps(o) for region in op.regions for block in region.blocks for o in block.ops)
    return 1 + body * (max(op.length, 1) if isinstance(op, ScanOp) else 1)


def snapshot(module: ModuleOp, seed: int, like: Snapshot | None = None) -> Snapshot:
    """Run every function on seeded random inputs; raises _Unchecked if it cannot.

    With `like` of the same signature, its inputs and params are reused (the inputs are
    chosen once, for the ops of the module before the first pass).
    """
    rng = np.random.default_rng(seed)
    signature = _signature(module)
    reuse = like is not None and like.signature == signature
    params = (
        like.params
        if reuse and like is not None
        else {n: random_value(v, rng) for n, v in sorted(_params(module).items())}
    )
    snap = Snapshot(signature, {}, {}, {}, params)
    for func in _functions(module):
        name = func.sym_name.data
        block = func.regions[0].blocks.first
        if reuse and like is not None and name in like.inputs:
            snap.inputs[name] = like.inputs[name]
        else:
            snap.inputs[name] = [random_value(a, rng) for a in block.args]
        inputs = snap.inputs[name]
        steps = sum(_steps(op) for op in block.ops)
        work = sum(fold_work(op) for op in block.ops)
        if steps > MAX_CHECK_STEPS or work > MAX_CHECK_WORK:
            raise _Unchecked(f"@{name}: too large to interpret ({steps} steps, {work} elements)")
        try:
            results = reference.run(module, inputs, params, entry=name)
            snap.outputs[name] = [np.asarray(o) for o in results]
        except Exception as e:  # unsupported op, lowered IR, out-of-range computed index...
            raise _Unchecked(f"@{name}: {type(e).__name__}: {e}") from e
        ret = block.last_op
        snap.producers[name] = [_producer(v) for v in ret.operands] if ret is not None else []
    return snap


def max_error(after: np.ndarray, before: np.ndarray) -> float:
    """max |after - before| / max(1, max |before|); inf if shapes or non-finite values differ."""
    if after.shape != before.shape:
        return float("inf")
    a = after.astype(np.float64)
    b = before.astype(np.float64)
    finite = np.isfinite(b)
    if not np.array_equal(np.isfinite(a), finite) or not np.array_equal(
        a[~finite], b[~finite], equal_nan=True
    ):
        return float("inf")
    if not finite.any():
        return 0.0
    scale = max(1.0, float(np.max(np.abs(b[finite]))))
    return float(np.max(np.abs(a[finite] - b[finite]))) / scale


def tolerance_of(pass_: Any) -> float | None:
    """The pass's declared `equivalence_tolerance` (None: not checked), else the default."""
    return getattr(type(pass_), "equivalence_tolerance", DEFAULT_TOLERANCE)


def compare(
    before: Snapshot, after: Snapshot, tolerance: float, what: str
) -> tuple[Operation | None, str] | None:
    """(op, message) for the first output that differs beyond `tolerance`, else None."""
    for name, outs in after.outputs.items():
        for index, (a, b) in enumerate(zip(outs, before.outputs.get(name, []), strict=False)):
            err = max_error(a, b)
            if err > tolerance:
                producers = after.producers.get(name, [])
                op = producers[index] if index < len(producers) else None
                return op, (
                    f"check-equivalence: {what} changed output {index} of @{name}: "
                    f"max error {err:.3g} > tolerance {tolerance:.3g}"
                )
    return None


@dataclass
class EquivalenceChecker:
    """Compares the module before and after each pass (see the module docstring)."""

    seed: int = 0
    checked: int = 0
    skipped: list[str] = field(default_factory=list)
    _last: Snapshot | None = None

    def start(self, module: ModuleOp) -> None:
        self._last = self._try(module)

    def _try(self, module: ModuleOp) -> Snapshot | None:
        try:
            return snapshot(module, self.seed, self._last)
        except _Unchecked as e:
            self.skipped.append(str(e))
            return None

    def after_pass(self, pass_: Any, module: ModuleOp) -> None:
        """Raise an `OpError` if `pass_` changed an output beyond its tolerance."""
        before = self._last
        tolerance = tolerance_of(pass_)
        if before is None or tolerance is None:
            self._last = self._try(module)
            return
        after = self._try(module)
        self._last = after
        if after is None or after.signature != before.signature:
            return
        self.checked += 1
        failure = compare(before, after, tolerance, f"pass '{pass_.name}' (seed {self.seed})")
        if failure is not None:
            raise _op_error(module, *failure)


def _op_error(module: ModuleOp, op: Operation | None, message: str) -> Exception:
    return OpError(op if op is not None else module, message)


def check_jit(graph: Any, module: ModuleOp, entry: str, seed: int, ran: Iterable[Any]) -> None:
    """Compare a compiled graph with the reference on the original `module` (ValueError)."""
    try:
        base = snapshot(module, seed)
    except _Unchecked:
        return
    if base.params:
        graph.set_params(base.params)
    got = graph.run(*base.inputs[entry])
    tols = [t for t in (tolerance_of(p) for p in ran) if t is not None]
    tol = max([JIT_TOLERANCE, *tols])
    for index, (a, b) in enumerate(zip(got, base.outputs[entry], strict=False)):
        err = max_error(np.asarray(a), b)
        if err > tol:
            raise ValueError(
                f"check_equivalence: the compiled code differs from the reference "
                f"interpreter on output {index} of @{entry}: max error {err:.3g} > "
                f"tolerance {tol:.3g} (seed {seed})"
            )
