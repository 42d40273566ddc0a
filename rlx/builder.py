"""`rlx.Graph`: build an rlx module from Python with inferred result types.

    g = rlx.Graph()
    x = g.input("x", (8, 64))
    h = g.gelu(g.add(g.matmul(x, g.param("w1", (64, 128))), g.param("b1", (128,))))
    g.output(g.softmax(h, axis=-1))
    module = g.module          # an xDSL ModuleOp, verified
    # g.finish(verify=False): the same module without xDSL's verifier (what rlx.compile
    # uses: its cache key needs no verified module, and a miss verifies a copy)

Every op method takes operand values (xDSL SSAValues returned by earlier calls) and the op's
attributes as keyword arguments with the dialect's attribute names (Python ints become i64,
floats f64, bools, strings, lists of ints `array<i64>`). Ops whose result type is part of
their meaning (reshape, broadcast_to, cast, rng, param) take a shape or dtype argument.
Region ops other than `elementwise_region` (`rlx.if`, `rlx.scan`) are built by the caller:
their bodies are emitted with `with g.building(block): ...`, the op appended with
`g.add_op(op)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from rlx.dialects.rlx import OPS_BY_NAME
from rlx.dialects.rlx.base import RlxOp, broadcast_shapes, shape_of, tensor, to_attr
from rlx.dialects.rlx.control import ElementwiseRegionOp, YieldOp
from rlx.dialects.rlx.leaves import ConstantOp
from rlx.dtypes import element_type, numpy_dtype

Value = SSAValue


def _tensor_type(shape: Sequence[int], dtype: Any) -> TensorType:
    return tensor([int(d) for d in shape], element_type(dtype))


class Graph:
    """Incrementally builds `func.func @<name>` inside a module; see the module docstring."""

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self._block = Block()
        self._arg_names: list[str] = []
        self._outputs: list[Value] = []
        self._module: ModuleOp | None = None
        self._verified = False

    # ------------------------------------------------------------------ leaves
    def input(self, name: str, shape: Sequence[int], dtype: Any = "f32") -> Value:
        """A run-time input; `name` is recorded as the argument's `rlx.name` attribute."""
        arg = self._block.insert_arg(_tensor_type(shape, dtype), len(self._block.args))
        arg.name_hint = name if name.isidentifier() else None
        self._arg_names.append(name)
        return arg

    def param(self, name: str, shape: Sequence[int], dtype: Any = "f32") -> Value:
        return self._emit("rlx.param", [], {"name": name}, [_tensor_type(shape, dtype)], hint=name)

    def constant(self, value: Any, dtype: Any = None) -> Value:
        arr = np.asarray(value, dtype=None if dtype is None else np.dtype(_np_dtype(dtype)))
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype(np.float32)
        t = _tensor_type(arr.shape, arr.dtype)
        attr = DenseIntOrFPElementsAttr.from_list(t, arr.ravel().tolist())
        op = ConstantOp(attr)
        self._block.add_op(op)
        return op.result

    def rng_uniform(self, shape: Sequence[int], dtype: Any = "f32", **attrs: Any) -> Value:
        return self._emit("rlx.rng_uniform", [], attrs, [_tensor_type(shape, dtype)])

    def rng_normal(self, shape: Sequence[int], dtype: Any = "f32", **attrs: Any) -> Value:
        return self._emit("rlx.rng_normal", [], attrs, [_tensor_type(shape, dtype)])

    # ------------------------------------------------------------------ typed-result ops
    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        return self._emit("rlx.reshape", [x], {}, [tensor(list(shape), _elem(x))])

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        return self._emit("rlx.broadcast_to", [x], {}, [tensor(list(shape), _elem(x))])

    def cast(self, x: Value, dtype: Any) -> Value:
        return self._emit("rlx.cast", [x], {}, [tensor(shape_of(x.type), element_type(dtype))])

    def dequantize(self, x: Value, dtype: Any = "f32", **attrs: Any) -> Value:
        return self._emit(
            "rlx.dequantize", [x], attrs, [tensor(shape_of(x.type), element_type(dtype))]
        )

    # ------------------------------------------------------------------ generic
    def op(self, name: str, *operands: Value, **attrs: Any) -> Value | tuple[Value, ...]:
        """Any rlx op by name (`"rlx.softmax"` or `"softmax"`) with inferred result types."""
        full = name if name.startswith("rlx.") else f"rlx.{name}"
        if full not in OPS_BY_NAME:
            raise ValueError(f"unknown rlx op '{full}'")
        res = self._emit_many(full, list(operands), attrs, None)
        return res[0] if len(res) == 1 else tuple(res)

    def elementwise_region(self, inputs: Sequence[Value], body: Any) -> Value:
        """`body(builder_args...)` receives scalar block arguments and returns one scalar
        built with xDSL arith/math ops (inside an ImplicitBuilder)."""
        block = Block(arg_types=[_elem(v) for v in inputs])
        with ImplicitBuilder(block):
            out = body(*block.args)
            YieldOp(out)

        shape = broadcast_shapes(*(shape_of(v.type) for v in inputs))
        op = ElementwiseRegionOp(list(inputs), tensor(shape, out.type), Region(block))
        self._block.add_op(op)
        return op.result

    # ------------------------------------------------------------------ regions
    @property
    def current_block(self) -> Block:
        """The block ops are emitted into (the function body, or a region's in `building`)."""
        return self._block

    @contextmanager
    def building(self, block: Block) -> Iterator[Block]:
        """Emit into `block` (a region body being built, e.g. of `rlx.if` / `rlx.scan`)
        instead of the function body until the `with` ends."""
        saved, self._block = self._block, block
        try:
            yield block
        finally:
            self._block = saved

    def add_op(self, op: Operation) -> Operation:
        """Append an op built by the caller (a region op) where the graph emits now."""
        self._block.add_op(op)
        return op

    # ------------------------------------------------------------------ outputs / module
    def output(self, *values: Value) -> None:
        self._outputs.extend(values)

    @property
    def module(self) -> ModuleOp:
        """The finished module (built once, verified)."""
        return self.finish()

    def finish(self, verify: bool = True) -> ModuleOp:
        """The finished module, built once. `verify=False` skips xDSL's verifier (what
        `rlx.compile` does: a cache hit needs no verification, a miss verifies a copy);
        a later `finish()` / `module` still verifies."""
        if self._module is None:
            if not self._outputs:
                raise ValueError("graph has no outputs: call g.output(...) first")
            self._block.add_op(func.ReturnOp(*self._outputs))
            ftype = func.FunctionType.from_lists(
                [a.type for a in self._block.args], [v.type for v in self._outputs]
            )
            f = func.FuncOp(self.name, ftype, Region(self._block))
            f.arg_attrs = _arg_attrs(self._arg_names)
            self._module = ModuleOp([f])
        if verify and not self._verified:
            self._module.verify()
            self._verified = True
        return self._module

    def __str__(self) -> str:
        return str(self.module)

    # ------------------------------------------------------------------ internals
    def _emit(
        self,
        name: str,
        operands: list[Value],
        attrs: dict[str, Any],
        given: list[Attribute] | None,
        hint: str | None = None,
    ) -> Value:
        res = self._emit_many(name, operands, attrs, given)
        if hint is not None and hint.isidentifier():
            res[0].name_hint = hint
        return res[0]

    def _emit_many(
        self, name: str, operands: list[Value], attrs: dict[str, Any], given: list[Attribute] | None
    ) -> list[Value]:
        if self._module is not None:
            raise ValueError("graph is finished (module already built)")
        cls: type[RlxOp] = OPS_BY_NAME[name]
        known = {f.ir_name for f in cls.fields().values()}
        unknown = sorted(k for k in attrs if k not in known and not k.startswith("rlx."))
        if unknown:  # the op's verifier would say so only in `finish` (a VerifyException)
            raise ValueError(
                f"{name}: unknown attribute '{unknown[0]}'; expected one of: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        try:
            attributes = {k: to_attr(v) for k, v in attrs.items() if v is not None}
        except (TypeError, OverflowError, VerifyException) as e:
            raise ValueError(f"{name}: bad attribute value: {e}") from None
        types = [v.type for v in operands]
        try:
            result_types = cls.infer_from(types, attributes, given)  # type: ignore[arg-type]
        except VerifyException as e:
            raise ValueError(f"{name}: {e}") from None
        op = cls.create(operands=operands, result_types=result_types, attributes=attributes)
        self._block.add_op(op)
        return list(op.results)


def _elem(v: Value) -> Attribute:
    assert isinstance(v.type, TensorType)
    return v.type.element_type


def _np_dtype(dtype: Any) -> Any:

    return numpy_dtype(element_type(dtype))


def _arg_attrs(names: list[str]) -> Any:
    from xdsl.dialects.builtin import ArrayAttr

    return ArrayAttr([DictionaryAttr({"rlx.name": StringAttr(n)}) for n in names])


def _add_methods() -> None:
    """One method per op name (g.add, g.softmax, ...) delegating to `Graph.op`."""
    names = [op.name.removeprefix("rlx.") for op in OPS_BY_NAME.values()]
    for short in names:
        if hasattr(Graph, short) or short in ("yield", "scan", "if", "elementwise_region"):
            continue

        def method(self: Graph, *operands: Value, _n: str = short, **attrs: Any) -> Any:
            return self.op(_n, *operands, **attrs)

        method.__name__ = short
        method.__doc__ = f"Emit `rlx.{short}` (see docs/dialect.md)."
        setattr(Graph, short, method)


_add_methods()
