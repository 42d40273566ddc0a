"""The allocation half of ``convert-memref-to-llvm`` (`convert_memref_to_llvm` has the
policy in its docstring): ``memref.alloc`` -> ``aligned_alloc`` or, small and not
escaping, an entry-block ``llvm.alloca``; ``memref.alloca`` -> ``llvm.alloca`` (hoisted
unless it escapes); ``memref.dealloc`` -> ``free`` (dropped for stack buffers). Also the
memref type helpers both halves use (`memref_type`, `layout`, `numel`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.lowering.llvm_common import (
    PTR,
    constant,
    convert_type,
    element_byte_size,
    ensure_llvm_func,
    fail,
    int_attr,
    llvm_operand,
    make,
    replace_with_llvm,
    static_layout,
)

BUFFER_ALIGNMENT = 64
"""Alignment of heap, stack and global buffers created by this pass."""

_VIEW_LIKE = (
    memref.SubviewOp,
    memref.CastOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.AssumeAlignmentOp,
    memref.ViewOp,
)
_ACCESS = (memref.LoadOp, memref.StoreOp, memref.DimOp, memref.CopyOp)


PASS = "convert-memref-to-llvm"


def memref_type(value: SSAValue, op: Operation) -> MemRefType:
    """The type of memref `value` (a located error naming `op` otherwise)."""
    t = value.type
    if not isinstance(t, MemRefType):
        fail(op, f"{PASS}: expected a ranked memref, got {t}")
    return t  # pyright: ignore[reportUnknownVariableType]


def layout(t: MemRefType, op: Operation) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) of static `t` (an error naming `op` otherwise)."""
    return static_layout(t, f"{PASS}: '{op.name}'", op)


def numel(shape: tuple[int, ...]) -> int:
    """Elements of a static shape."""
    n = 1
    for d in shape:
        n *= d
    return n


def _non_escaping_deallocs(root: SSAValue) -> list[memref.DeallocOp] | None:
    """The deallocs of ``root`` if it is only accessed, viewed or freed; None if it escapes."""
    deallocs: list[memref.DeallocOp] = []
    work = [root]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, memref.DeallocOp):
                deallocs.append(user)
            elif isinstance(user, _VIEW_LIKE) and use.index == 0:
                work.extend(user.results)
            elif isinstance(user, memref.StoreOp) and use.index != 0:
                continue  # the buffer is the store target (index 0 would store the memref)
            elif isinstance(user, _ACCESS) and not isinstance(user, memref.StoreOp):
                continue
            elif isinstance(user, llvm.LoadOp | llvm.StoreOp | llvm.GEPOp):
                continue
            else:
                return None
    return deallocs


def _entry_block(op: Operation) -> Block:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    if parent is None or not parent.regions[0].blocks:
        fail(op, f"{PASS}: '{op.name}' is not inside a function")
    block = parent.regions[0].blocks.first
    assert block is not None
    return block


def _alloca(size: SSAValue, mt: MemRefType) -> llvm.AllocaOp:
    props = {
        "elem_type": convert_type(mt.element_type),
        "alignment": int_attr(BUFFER_ALIGNMENT, i64),
    }
    return make(llvm.AllocaOp, (size,), (PTR,), props)


def _stack_buffer(
    op: memref.AllocOp | memref.AllocaOp, mt: MemRefType, rewriter: PatternRewriter
) -> SSAValue:
    """An ``llvm.alloca`` for ``mt`` in the function's entry block."""
    shape, _, _ = layout(mt, op)
    size = constant(numel(shape), i64)
    alloca = _alloca(size.result, mt)
    rewriter.insert([size, alloca], InsertPoint.at_start(_entry_block(op)))
    return alloca.res


def _entry_stack_bytes(block: Block) -> int:
    """Bytes of the constant-size allocas already in a function's entry block."""
    total = 0
    for o in block.ops:
        if isinstance(o, llvm.AllocaOp):
            size = o.size.owner
            value = size.properties.get("value") if isinstance(size, Operation) else None
            if isinstance(value, IntegerAttr):
                total += value.value.data * element_byte_size(o.elem_type)
    return total


@dataclass(frozen=True)
class AllocOpLowering(RewritePattern):
    """memref.alloc -> aligned_alloc call, or an entry-block alloca when small and local."""

    max_alloca_bytes: int = 16384
    max_stack_bytes: int = 131072

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter, /) -> None:
        mt = memref_type(op.memref, op)
        if op.dynamic_sizes or op.symbol_operands:
            fail(op, f"{PASS}: '{op.name}' with dynamic sizes is not supported")
        shape, _, _ = layout(mt, op)
        nbytes = numel(shape) * element_byte_size(mt.element_type, op)
        if nbytes <= self.max_alloca_bytes and (
            _entry_stack_bytes(_entry_block(op)) + nbytes <= self.max_stack_bytes
        ):
            deallocs = _non_escaping_deallocs(op.memref)
            if deallocs is not None:
                for d in deallocs:
                    rewriter.erase(d)
                replace_with_llvm(rewriter, op, [], [_stack_buffer(op, mt, rewriter)])
                return
        ensure_llvm_func(op, "aligned_alloc", llvm.LLVMFunctionType([i64, i64], PTR), rewriter)
        align = constant(BUFFER_ALIGNMENT, i64)
        rounded = -(-max(nbytes, 1) // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
        size = constant(rounded, i64)
        call = llvm.CallOp("aligned_alloc", align.result, size.result, return_type=PTR)
        replace_with_llvm(rewriter, op, [align, size, call], [call.returned])  # pyright: ignore


class AllocaOpLowering(RewritePattern):
    """memref.alloca -> llvm.alloca (hoisted to the entry block unless it escapes)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /) -> None:
        mt = memref_type(op.memref, op)
        if op.dynamic_sizes or op.symbol_operands:
            fail(op, f"{PASS}: '{op.name}' with dynamic sizes is not supported")
        if _non_escaping_deallocs(op.memref) is not None:
            replace_with_llvm(rewriter, op, [], [_stack_buffer(op, mt, rewriter)])
            return
        shape, _, _ = layout(mt, op)
        size = constant(numel(shape), i64)
        alloca = _alloca(size.result, mt)
        replace_with_llvm(rewriter, op, [size, alloca], [alloca.res])


class DeallocOpLowering(RewritePattern):
    """memref.dealloc -> free (dropped for buffers that were put on the stack)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        ptr = llvm_operand(op.memref, new_ops)
        if isinstance(ptr.owner, llvm.AllocaOp):
            rewriter.erase(op)
            return
        ensure_llvm_func(op, "free", llvm.LLVMFunctionType([PTR], llvm.LLVMVoidType()), rewriter)
        new_ops.append(llvm.CallOp("free", ptr))
        rewriter.replace(op, new_ops, [])
