"""NumPy reference interpreter for RLX programs: the oracle of every numeric test.

`run(module, inputs, params)` evaluates `func.func @main` op by op with NumPy;
`eval_op(op, args)` evaluates a single op (used by constant folding).  Ops are dispatched
on their name (`"rlx.softmax"`, `"arith.addf"`, ...) and attributes are decoded
generically, so the interpreter works both on modules parsed with the rlx dialect loaded
and on generic-form text parsed with `allow_unregistered=True`.

Numeric policy (per op; see `rlx/interpreter/ops/*` for each op family):

* f64 computes in f64.  f32 elementwise ops compute in f32.  f16 / bf16 / f8 elementwise
  ops compute in f32 and round to the element type once per op.
* Reductions, matmul, cumsum, softmax, the norms, attention, conv2d, avg-pool, the
  (de)quantizers and every fused op accumulate in f64 (for every float type, f32
  included) and round once to the result type.  Integer reductions / matmul accumulate
  in int64 and wrap to the result type.
* Every result is converted to its declared result element type with a single
  round-to-nearest-even (f64 -> bf16 / f8 included: no double rounding), and its static
  shape is checked against the declared result type.
* Floating-point exceptions are IEEE (no warnings, no errors): inf / NaN propagate.
"""

from __future__ import annotations

import functools
from collections import ChainMap
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from rlx import errors as _errors
from rlx.dialects.rlx import Rlx
from rlx.dialects.rlx.control import YieldOp
from rlx.dialects.rlx.leaves import ParamOp
from rlx.interpreter.ops import REGISTRY  # noqa: F401  (importing it registers every implementation)
from rlx.interpreter.ops._core import (
    InterpreterError,
    OpContext,
    UnsupportedOpError,
    convert,
    dense_attr,
    element_type,
    implementation,
    numpy_dtype,
    op_name,
    registered_names,
    run_error,
    to_numpy,
    to_python,
    typed_view,
)
from rlx.interpreter.ops.text import mlir_type, multi_op_module, single_op_module

__all__ = [
    "run",
    "eval_op",
    "numpy_dtype",
    "element_type",
    "convert",
    "to_python",
    "to_numpy",
    "op_name",
    "dense_attr",
    "parse_module",
    "single_op_module",
    "multi_op_module",
    "mlir_type",
    "supported_ops",
    "InterpreterError",
    "UnsupportedOpError",
]

_TERMINATORS = frozenset({"func.return", "rlx.yield", "scf.yield", "linalg.yield"})

STRUCTURAL: frozenset[type[Operation]] = frozenset({ParamOp, YieldOp})
"""rlx ops the interpreter evaluates itself rather than through `REGISTRY`: params are
looked up in the bound values, `rlx.yield` ends a region body."""


def parse_module(text: str, *, with_rlx: bool = True) -> ModuleOp:
    """Parse MLIR text with builtin/func/arith/math (and the rlx dialect when importable
    and `with_rlx`); any other op is accepted as an unregistered op."""
    from xdsl.parser import Parser

    return Parser(_parse_context(with_rlx), text).parse_module()


@functools.cache
def _parse_context(with_rlx: bool) -> Context:
    """One shared context per flavour (reusing it keeps unregistered-op classes cached)."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math

    ctx = Context(allow_unregistered=True)
    for d in (Builtin, Func, Arith, Math):
        ctx.load_dialect(d)
    if with_rlx:
        ctx.load_dialect(Rlx)
    return ctx


def supported_ops() -> frozenset[str]:
    """Names of every op the interpreter implements."""
    return registered_names() | _TERMINATORS | {"func.call"}


def _static_shape_matches(shape: tuple[int, ...], t: Attribute) -> bool:
    if not isinstance(t, TensorType):
        return shape == ()
    want = tuple(t.get_shape())
    return len(want) == len(shape) and all(
        w < 0 or w == s for w, s in zip(want, shape, strict=True)
    )


def _bind(kind: str, name: str, value: Any, t: Attribute) -> np.ndarray:
    """Check (and convert) a user-supplied input/param against its declared type."""
    arr = np.asarray(value)
    dt = numpy_dtype(t)
    if not _static_shape_matches(arr.shape, t):
        raise ValueError(f"{kind} '{name}': expected shape of {t}, got {arr.shape}")
    if arr.dtype == dt:
        if dt == np.bool_ and arr.size and arr.view(np.uint8).max() > 1:
            return arr.view(np.uint8) != 0  # non-canonical bool bytes are True (NumPy)
        return arr
    src_float = arr.dtype.kind == "f" or arr.dtype.kind == "V"
    if dt == np.bool_ and arr.dtype != np.bool_:
        raise ValueError(f"{kind} '{name}': expected a bool array for {t}, got {arr.dtype}")
    if dt.kind in "iu":
        if src_float or arr.dtype.kind not in "iub":
            raise ValueError(f"{kind} '{name}': expected integers for {t}, got {arr.dtype}")
        out = arr.astype(dt)
        if not np.array_equal(out.astype(np.int64), arr.astype(np.int64)):
            raise ValueError(f"{kind} '{name}': values do not fit {t}")
        return out
    if arr.dtype.kind not in "fiubV":
        raise ValueError(f"{kind} '{name}': cannot convert {arr.dtype} to {t}")
    return convert(arr, dt)


class _Interpreter:
    """Evaluates blocks of a module; holds the run-wide settings."""

    def __init__(
        self,
        module: ModuleOp | None,
        params: Mapping[str, np.ndarray],
        rng_seed: int,
        rng_backend: str,
    ) -> None:
        if rng_backend not in ("philox", "zero"):
            raise ValueError(f"unknown rng_backend {rng_backend!r} (use 'philox' or 'zero')")
        self.module = module
        self.params = params
        self.rng_seed = rng_seed
        self.rng_backend = rng_backend

    def find_func(self, name: str) -> Operation:
        if self.module is None:
            raise InterpreterError(f"cannot call @{name}: no enclosing module")
        names = []
        for op in self.module.body.block.ops:
            if op.name == "func.func":
                sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
                if isinstance(sym, StringAttr):
                    names.append(sym.data)
                    if sym.data == name:
                        return op
        raise InterpreterError(f"no func.func @{name} in module (functions: {names})")

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        func = self.find_func(name)
        block = func.regions[0].blocks.first
        if block is None:
            raise InterpreterError(f"@{name} is a declaration without a body")
        return self.run_block(block, args)

    def run_block(
        self,
        block: Block,
        args: Sequence[np.ndarray],
        outer: Mapping[SSAValue, np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Evaluate a block on argument arrays; returns its terminator's operand values."""
        if len(args) != len(block.args):
            raise InterpreterError(f"block expects {len(block.args)} arguments, got {len(args)}")
        env: MutableMapping[SSAValue, np.ndarray] = ChainMap({}, outer) if outer else {}  # type: ignore[arg-type]
        for a, v in zip(block.args, args, strict=True):
            env[a] = v

        def lookup(v: SSAValue) -> np.ndarray:
            try:
                return env[v]
            except KeyError:
                raise InterpreterError(
                    f"value {v.name_hint or v} is used but not defined in scope"
                ) from None

        for op in block.ops:
            name = op_name(op)
            vals = [lookup(o) for o in op.operands]
            if name in _TERMINATORS or op.has_trait(IsTerminator, value_if_unregistered=False):
                return vals
            if name == "func.call":
                callee = op.properties.get("callee") or op.attributes.get("callee")
                outs = self.call(callee.root_reference.data, vals)  # type: ignore[union-attr]
                outs = _check_results(op, name, outs)
            else:
                outs = self.eval(op, vals, env)
            for r, v in zip(op.results, outs, strict=True):
                env[r] = v
        raise InterpreterError("block has no terminator")

    def eval(
        self,
        op: Operation,
        args: list[np.ndarray],
        env: Mapping[SSAValue, np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        name = op_name(op)
        view = typed_view(op)
        if isinstance(view, ParamOp):
            return _check_results(op, name, [self.param(view)])
        entry = implementation(view)
        if entry is None:
            raise UnsupportedOpError(f"reference interpreter: no implementation for op '{name}'")
        fn, (lo, hi) = entry
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = str(lo) if lo == hi else f"{lo}..{hi if hi is not None else ''}"
            raise InterpreterError(f"{name}: expected {want} operands, got {len(args)}")
        ctx = OpContext(
            op=view,
            source=op,
            name=name,
            rng_seed=self.rng_seed,
            rng_backend=self.rng_backend,
            run_block=lambda block, vals: self.run_block(block, vals, env),
            call=self.call,
        )
        try:
            with np.errstate(all="ignore"):
                out = fn(ctx, *args)
        except _errors.RlxRunError as e:
            raise run_error(name, e) from None
        outs = list(out) if isinstance(out, list | tuple) else [out]
        return _check_results(op, name, outs)

    def param(self, op: ParamOp) -> np.ndarray:
        try:
            pname = op.param_name
        except VerifyException as e:
            raise InterpreterError(f"rlx.param: {e}") from None
        if pname not in self.params:
            raise ValueError(f"missing param '{pname}'")
        return _bind("param", pname, self.params[pname], op.results[0].type)


def _check_results(op: Operation, name: str, outs: list[Any]) -> list[np.ndarray]:
    """Convert op outputs to the declared result types, checking count and shape."""
    if len(outs) != len(op.results):
        raise InterpreterError(
            f"{name}: produced {len(outs)} results, the op declares {len(op.results)}"
        )
    checked = []
    for i, (v, r) in enumerate(zip(outs, op.results, strict=True)):
        t = r.type
        arr = convert(np.asarray(v), numpy_dtype(t))
        if isinstance(t, TensorType) and not _static_shape_matches(arr.shape, t):
            raise InterpreterError(f"{name}: result {i} has shape {arr.shape}, the op declares {t}")
        checked.append(arr)
    return checked


def _find_entry(module: ModuleOp, entry: str) -> Operation:
    return _Interpreter(module, {}, 0, "zero").find_func(entry)


def run(
    module: ModuleOp | str,
    inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray] = (),
    params: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str = "main",
    rng_seed: int = 42,
    rng_backend: str = "philox",
) -> list[np.ndarray]:
    """Run `func.func @entry` of `module` (an op or MLIR text) on NumPy inputs.

    `inputs` is positional (a bare array is one input) or keyed by argument name (arg
    attribute `rlx.name`, else `argN`); `params` binds `rlx.param` ops by name.  Inputs and params are converted to
    the declared element type when that is lossless in kind (ints into int types, any
    number into float types, rounding once); shape mismatches, missing or unknown names
    raise ValueError naming the input or param.  Returns one array per returned value.
    """
    if isinstance(module, str):
        module = parse_module(module)
    func = _find_entry(module, entry)
    block = func.regions[0].blocks.first
    if block is None:
        raise ValueError(f"@{entry} has no body")
    arg_types = [a.type for a in block.args]
    names = _arg_names(func, len(arg_types))
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise ValueError(f"unknown input(s) {unknown}; @{entry} takes {names}")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"missing input(s) {missing} for @{entry}")
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(names):
            raise ValueError(f"@{entry} takes {len(names)} input(s) {names}, got {len(values)}")
    args = [_bind("input", n, v, t) for n, v, t in zip(names, values, arg_types, strict=True)]
    interp = _Interpreter(module, params or {}, rng_seed, rng_backend)
    outs = interp.run_block(block, args)
    return [np.array(o, copy=True) for o in outs]


def _arg_names(func: Operation, n: int) -> list[str]:
    arg_attrs = func.properties.get("arg_attrs") or func.attributes.get("arg_attrs")
    names = [f"arg{i}" for i in range(n)]
    if arg_attrs is not None:
        for i, d in enumerate(to_python(arg_attrs)):
            if isinstance(d, dict) and isinstance(d.get("rlx.name"), str) and i < n:
                names[i] = d["rlx.name"]
    return names


def eval_op(
    op: Operation,
    args: list[np.ndarray],
    *,
    rng_seed: int = 42,
    rng_backend: str = "philox",
    params: Mapping[str, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Evaluate one op on operand arrays; returns one array per op result.

    Regions (rlx.scan, rlx.elementwise_region) are evaluated too, provided they only use
    their own block arguments.  `func.call` needs the op to sit inside a module.
    """
    module = _enclosing_module(op)
    interp = _Interpreter(module, params or {}, rng_seed, rng_backend)
    vals = [np.asarray(a) for a in args]
    if op_name(op) == "func.call":
        callee = op.properties.get("callee") or op.attributes.get("callee")
        return _check_results(op, "func.call", interp.call(callee.root_reference.data, vals))  # type: ignore[union-attr]
    return interp.eval(op, vals)


def _enclosing_module(op: Operation) -> ModuleOp | None:
    p = op.parent_op()
    while p is not None and not isinstance(p, ModuleOp):
        p = p.parent_op()
    return p
