"""``convert-func-to-llvm``: func.func/call/return -> llvm.func/call/return (bare pointers),
and ``rlx_rt.parallel_call`` -> a task function + ``rlx_parallel_for`` (``convert_parallel_to_llvm``).

Calling convention ("bare pointer", like MLIR's ``use-bare-ptr-memref-call-conv``): each
statically shaped memref argument or result becomes one ``!llvm.ptr`` to the *base* of its
buffer (the element at all-zero indices when the layout offset is 0); ``index`` becomes
``i64``; other scalars keep their type. Zero results give ``void``, one result is returned
as is, several are packed into an ``!llvm.struct``.

Public function definitions (the graph entry points) get ``llvm.noalias`` and
``llvm.dereferenceable = <bytes>`` on every memref argument, and ``llvm.align =
<entry-align>`` on every memref argument but those marked ``rlx.kind = "input"`` (the
caller's arrays, passed without copying): callers must pass distinct buffers, aligned where
promised. Private definitions get ``internal`` linkage and no such promises; a
``passthrough`` attribute on a func (e.g. ``["noinline"]`` on shared kernels) is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrankedMemRefType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rlx.lowering.convert_parallel_to_llvm import ParallelCallLowering
from rlx.lowering.llvm_common import (
    convert_block_signature,
    convert_function_type,
    convert_module,
    convert_type,
    extract_value,
    fail,
    insert_value,
    llvm_operands,
    memref_extent_bytes,
    replace_with_llvm,
    static_layout,
)


def _entry_arg_attrs(
    op: func.FuncOp, entry_align: int, noalias: bool
) -> ArrayAttr[DictionaryAttr] | None:
    """Argument attributes of the lowered function: kept ``llvm.*`` ones plus our promises."""
    inputs = op.function_type.inputs.data
    old = op.arg_attrs.data if op.arg_attrs is not None else [None] * len(inputs)
    public = op.sym_visibility is None or op.sym_visibility.data == "public"
    dicts: list[DictionaryAttr] = []
    any_attr = False
    for typ, attrs in zip(inputs, old, strict=True):
        entries: dict[str, Attribute] = {}
        if attrs is not None:
            entries.update((k, v) for k, v in attrs.data.items() if k.startswith("llvm."))
        if public and op.body.blocks and isinstance(typ, MemRefType):
            if noalias:
                entries.setdefault("llvm.noalias", UnitAttr())
            # Run-time inputs are the caller's arrays, passed without copying: only buffers
            # the runtime allocates itself (params, outputs, arena) are promised aligned.
            kind = attrs.data.get("rlx.kind") if attrs is not None else None
            if entry_align > 0 and kind != StringAttr("input"):
                entries.setdefault("llvm.align", IntegerAttr(entry_align, i64))
            extent = memref_extent_bytes(typ)
            if extent:
                entries.setdefault("llvm.dereferenceable", IntegerAttr(extent, i64))
        any_attr |= bool(entries)
        dicts.append(DictionaryAttr(entries))
    return ArrayAttr(dicts) if any_attr else None


@dataclass(frozen=True)
class FuncOpLowering(RewritePattern):
    """func.func -> llvm.func; converts the entry block signature."""

    entry_align: int = 64
    noalias: bool = True
    private_noinline: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /) -> None:
        ft = op.function_type
        for t in (*ft.inputs.data, *ft.outputs.data):
            if isinstance(t, MemRefType):
                static_layout(t, f"convert-func-to-llvm: @{op.sym_name.data}", op)
            elif isinstance(t, UnrankedMemRefType):
                fail(
                    op,
                    f"convert-func-to-llvm: @{op.sym_name.data}: unranked memrefs are not supported",
                )
        is_decl = not op.body.blocks
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if private and not is_decl else "external"
        props: dict[str, Attribute | None] = {}
        if (arg_attrs := _entry_arg_attrs(op, self.entry_align, self.noalias)) is not None:
            props["arg_attrs"] = arg_attrs
        if "passthrough" in op.attributes:  # e.g. noinline on kernels shared by several calls
            props["passthrough"] = op.attributes["passthrough"]
        elif self.private_noinline and private and not is_decl:
            props["passthrough"] = ArrayAttr([StringAttr("noinline")])
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new_func = llvm.FuncOp(
            op.sym_name,
            convert_function_type(op.function_type),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
            other_props=props,
        )
        if not is_decl:
            convert_block_signature(body.blocks.first, rewriter)  # pyright: ignore
        rewriter.replace(op, new_func)


class ReturnOpLowering(RewritePattern):
    """func.return -> llvm.return (several values are packed into a struct)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        values = llvm_operands(op.arguments, new_ops)
        if not values:
            new_ops.append(llvm.ReturnOp())
        elif len(values) == 1:
            new_ops.append(llvm.ReturnOp(values[0]))
        else:
            struct = llvm.LLVMStructType.from_type_list([v.type for v in values])
            agg: SSAValue = _append(new_ops, llvm.UndefOp(struct))
            for i, v in enumerate(values):
                agg = _append(new_ops, insert_value(agg, v, i))
            new_ops.append(llvm.ReturnOp(agg))
        rewriter.replace(op, new_ops)


class CallOpLowering(RewritePattern):
    """func.call -> llvm.call (several results are unpacked from a struct)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        args = llvm_operands(op.arguments, new_ops)
        res_types = [convert_type(r.type) for r in op.res]
        if not res_types:
            new_ops.append(llvm.CallOp(op.callee, *args))
            rewriter.replace(op, new_ops, [])
            return
        if len(res_types) == 1:
            call = llvm.CallOp(op.callee, *args, return_type=res_types[0])
            new_ops.append(call)
            replace_with_llvm(rewriter, op, new_ops, [call.results[0]])
            return
        struct = llvm.LLVMStructType.from_type_list(res_types)
        call = llvm.CallOp(op.callee, *args, return_type=struct)
        new_ops.append(call)
        values = [
            _append(new_ops, extract_value(call.results[0], i, t)) for i, t in enumerate(res_types)
        ]
        replace_with_llvm(rewriter, op, new_ops, values)


def _append(new_ops: list[Operation], op: Operation) -> SSAValue:
    new_ops.append(op)
    return op.results[0]


def func_to_llvm_patterns(
    entry_align: int = 64, noalias: bool = True, private_noinline: bool = False
) -> list[RewritePattern]:
    """The patterns of this pass (also used by ``convert-to-llvm``)."""
    return [
        FuncOpLowering(entry_align, noalias, private_noinline),
        ReturnOpLowering(),
        CallOpLowering(),
        ParallelCallLowering(),
    ]


DIALECTS: tuple[str, ...] = ("func", "rlx_rt")
"""The dialects this pass converts completely."""


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lower func.func/call/return to the llvm dialect with bare-pointer memref arguments."""

    name = "convert-func-to-llvm"

    entry_align: int = 64
    """Alignment promised for memref arguments of public functions (0: none)."""

    noalias: bool = True
    """Mark memref arguments of public functions ``noalias``."""

    private_noinline: bool = False
    """Mark private definitions ``noinline``: LLVM then optimises each kernel on its own
    instead of inlining all of them into one huge graph function (about 2x less LLVM time
    on a 300-kernel graph; kernels lose the caller's aliasing facts)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = func_to_llvm_patterns(self.entry_align, self.noalias, self.private_noinline)
        convert_module(op, patterns, DIALECTS, self.name)
