"""The module-wide registry of kernels and constant tables, deduplicated by structural
key: identical ops (name, attributes, operand/result types, region body) share one
private `func.func @rlx_k<N>`, so compile time scales with distinct kernels, not ops."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter

from rlx.lowering.rlx_to_linalg.kernel_builder import PARALLEL, KernelBuilder, identity, memref_of


def _region_text(op: Operation) -> str:
    """The op's regions printed without SSA name hints (part of the dedup key). The hints
    are cleared for the print and put back (cloning the op to clear them cost as much as
    printing it)."""
    hints: list[tuple[SSAValue, str | None]] = []
    for region in op.regions:
        for b in region.blocks:
            hints.extend((a, a.name_hint) for a in b.args)
        for o in region.walk():
            hints.extend((r, r.name_hint) for r in o.results)
            for r2 in o.regions:
                for b2 in r2.blocks:
                    hints.extend((a, a.name_hint) for a in b2.args)
    out = io.StringIO()
    try:
        for v, _ in hints:
            v.name_hint = None
        p = Printer(stream=out)
        for region in op.regions:
            p.print_region(region)
    finally:
        for v, h in hints:
            v.name_hint = h
    return out.getvalue()


@functools.lru_cache(maxsize=8192)
def _text_memo(a: Attribute) -> str:
    return str(a)


def attr_text(a: Attribute) -> str:
    """`str(a)`, memoized by value: printing an attribute or type costs ~0.1-0.5 ms, and a
    graph repeats the same few types and attributes on thousands of ops."""
    try:
        return _text_memo(a)
    except TypeError:  # an unhashable parameter
        return str(a)


def op_key(op: Operation, extra: object = None) -> tuple[object, ...]:
    """Structural identity of an op's kernel."""
    attrs = tuple(
        sorted((k, attr_text(v)) for k, v in op.attributes.items() if not k.startswith("rlx."))
    )
    types = tuple(attr_text(v.type) for v in (*op.operands, *op.results))
    return (op.name, attrs, types, _region_text(op) if op.regions else "", extra)


class Kernels:
    """The module's kernels and constant tables, deduplicated by structural key."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.by_key: dict[object, str] = {}
        self.symbols = {
            o.sym_name.data for o in module.ops if isinstance(o, func.FuncOp | memref.GlobalOp)
        }
        self._n = 0
        self._last_global: Operation | None = None

    def fresh(self, prefix: str) -> str:
        while f"{prefix}{self._n}" in self.symbols:
            self._n += 1
        name = f"{prefix}{self._n}"
        self.symbols.add(name)
        return name

    def kernel(
        self,
        key: object,
        arg_types: Sequence[Attribute],
        build: Callable[[KernelBuilder, list[SSAValue]], None],
        label: str,
        noalias: bool = False,
    ) -> str:
        """Name of the kernel for `key`, building it with `build(kb, args)` on first use.

        `noalias` marks every argument `llvm.noalias`: true of every kernel call (outputs
        never overlap inputs), and needed where the caller cannot tell LLVM so itself (a
        kernel reached through `rlx_rt.parallel_call` gets its pointers from memory)."""
        if key in self.by_key:
            return self.by_key[key]
        name = self.fresh("rlx_k")
        fn = func.FuncOp(name, FunctionType.from_lists(list(arg_types), []), visibility="private")
        if noalias:
            unit = DictionaryAttr({"llvm.noalias": UnitAttr()})
            fn.arg_attrs = ArrayAttr([unit] * len(arg_types))
        block = fn.body.block
        fn.attributes["rlx.kernel"] = StringAttr(label)
        kb = KernelBuilder(block, self.table)
        kb.kernels = self
        build(kb, list(block.args))
        kb.finish()
        self.module.body.block.add_op(fn)
        self.by_key[key] = name
        return name

    def _add_global(self, name: str, t: MemRefType, value: DenseIntOrFPElementsAttr) -> None:
        g = memref.GlobalOp.get(StringAttr(name), t, value, StringAttr("private"), UnitAttr(), 64)
        where = (
            InsertPoint.at_start(self.module.body.block)
            if self._last_global is None
            else InsertPoint.after(self._last_global)
        )
        Rewriter.insert_op(g, where)
        self._last_global = g

    def table(self, typ: Attribute, values: object) -> str:
        """A private constant 1-D global holding `values` (deduplicated)."""
        vals = tuple(values)  # type: ignore[call-overload]
        key = ("table", attr_text(typ), vals)
        if key not in self.by_key:
            name = self.fresh("rlx_table")
            t = MemRefType(typ, [len(vals)])
            self._add_global(name, t, _dense_1d(typ, vals))
            self.by_key[key] = name
        return self.by_key[key]

    def constant(self, value: DenseIntOrFPElementsAttr) -> tuple[str, MemRefType]:
        """A private constant global holding a dense tensor value (deduplicated)."""
        tt = value.type
        assert isinstance(tt, TensorType)
        t = memref_of(tt)
        raw = value.data.data
        n = int(np.prod(tt.get_shape(), dtype=np.int64))
        if len(value) == 1 and n != 1:
            raw = raw * n
        key = ("const", str(t), raw)
        if key not in self.by_key:
            name = self.fresh("rlx_const")
            dense = DenseIntOrFPElementsAttr(
                TensorType(t.element_type, tt.get_shape()), BytesAttr(raw)
            )
            self._add_global(name, t, dense)
            self.by_key[key] = name
        return self.by_key[key], t


def _dense_1d(typ: Attribute, vals: tuple[object, ...]) -> DenseIntOrFPElementsAttr:
    """`DenseIntOrFPElementsAttr.from_list(tensor<n x typ>, vals)`; signless i64 values
    already in the signed range (the geometry tables) are packed directly: `from_list`
    normalises each value one by one, the same values."""
    tt = TensorType(typ, [len(vals)])
    if (
        isinstance(typ, IntegerType)
        and typ.width.data == 64
        and typ.signedness.data == Signedness.SIGNLESS
        and all(type(v) is int and -(2**63) <= v < 2**63 for v in vals)
    ):
        return DenseIntOrFPElementsAttr(tt, BytesAttr(typ.pack(vals)))  # type: ignore[arg-type]
    return DenseIntOrFPElementsAttr.from_list(tt, list(vals))  # type: ignore[arg-type]


def copy_kernel(kernels: Kernels, t: MemRefType) -> str:
    """Kernel copying one buffer into another of the same type."""

    def build(kb: KernelBuilder, args: list[SSAValue]) -> None:
        n = len(t.get_shape())
        kb.generic(
            [args[0]],
            [args[1]],
            [identity(n), identity(n)],
            [PARALLEL] * n,
            lambda x, _o: [x],
            compute=False,
        )

    return kernels.kernel(("copy", attr_text(t)), [t, t], build, "copy")
