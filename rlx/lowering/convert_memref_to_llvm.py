"""``convert-memref-to-llvm``: statically shaped memrefs -> bare ``!llvm.ptr`` + GEP/load/store.

A memref value lowers to the pointer to the *base* of its buffer; the static offset and
strides of its type are applied at each access, so ``subview``, ``cast``,
``reinterpret_cast``, ``collapse_shape``, ``expand_shape`` and ``assume_alignment`` are free
(they forward the pointer, the result type carries the new layout). Accesses use one
``getelementptr inbounds`` on the linearised index ``offset + sum(i_k * stride_k)``.

Allocation policy:

* ``memref.alloca`` -> ``llvm.alloca`` (64-byte aligned). A non-escaping alloca (used only by
  loads, stores, views and deallocs, never passed to a call, branch or return) is hoisted
  to the function's entry block so it is allocated once.
* ``memref.alloc`` -> ``aligned_alloc(64, bytes rounded up to 64)``; ``memref.dealloc`` ->
  ``free``. An alloc of at most ``max-alloca-bytes`` bytes (default 16 KiB) that does not
  escape becomes an entry-block ``llvm.alloca`` instead and its deallocs are dropped, as
  long as the function's promoted buffers stay within ``max-stack-bytes`` (128 KiB).
* ``memref.view`` (typed view at a byte offset into an i8 arena) -> ``getelementptr i8``.
* ``memref.global`` -> ``llvm.mlir.global`` (a flat array, 64-byte aligned, dense initializer
  kept, ``private`` stays private, uninitialised ones are zero-filled);
  ``memref.get_global`` -> ``llvm.mlir.addressof``.
* ``memref.copy`` of two contiguous buffers -> ``llvm.memcpy``; ``memref.dim`` -> constant.

Dynamic shapes, strides or offsets raise PassFailedException.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    NoneAttr,
    UnitAttr,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from rlx.lowering.llvm_common import (
    NSW,
    PTR,
    call_intrinsic,
    constant,
    convert_module,
    convert_type,
    element_byte_size,
    fail,
    gep,
    int_attr,
    llvm_operand,
    llvm_operands,
    make,
    replace_with_llvm,
)
from rlx.lowering.memref_alloc_to_llvm import (
    BUFFER_ALIGNMENT,
    PASS,
    AllocaOpLowering,
    AllocOpLowering,
    DeallocOpLowering,
    layout,
    memref_type,
    numel,
)

__all__ = ["BUFFER_ALIGNMENT", "DIALECTS", "ConvertMemRefToLLVMPass", "memref_to_llvm_patterns"]


def _linear_index(
    indices: list[SSAValue], strides: tuple[int, ...], offset: int, new_ops: list[Operation]
) -> SSAValue | int:
    """``offset + sum(i_k * stride_k)`` as i64 ops (nsw), or an int when fully constant."""
    nsw = {"overflowFlags": NSW}
    acc: SSAValue | None = None
    for idx, stride in zip(indices, strides, strict=True):
        if stride == 0:
            continue
        owner = idx.owner
        if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
            offset += owner.value.value.data * stride  # constant index: fold into the offset
            continue
        term = idx
        if stride != 1:
            c = constant(stride, i64)
            mul = make(llvm.MulOp, (idx, c.result), (i64,), nsw)
            new_ops += [c, mul]
            term = mul.res
        if acc is None:
            acc = term
        else:
            add = make(llvm.AddOp, (acc, term), (i64,), nsw)
            new_ops.append(add)
            acc = add.res
    if acc is None:
        return offset
    if offset:
        c = constant(offset, i64)
        add = make(llvm.AddOp, (acc, c.result), (i64,), nsw)
        new_ops += [c, add]
        acc = add.res
    return acc


def _element_address(
    op: memref.LoadOp | memref.StoreOp, new_ops: list[Operation]
) -> tuple[SSAValue, Attribute, int]:
    """(address, llvm element type, natural alignment) of a load/store."""
    mt = memref_type(op.memref, op)
    _, strides, offset = layout(mt, op)
    ptr = llvm_operand(op.memref, new_ops)
    indices = llvm_operands(op.indices, new_ops)
    elem = convert_type(mt.element_type)
    linear = _linear_index(indices, strides, offset, new_ops)
    if linear == 0:
        return ptr, elem, element_byte_size(mt.element_type, op)
    addr = gep(ptr, linear, elem)
    new_ops.append(addr)
    return addr.result, elem, element_byte_size(mt.element_type, op)


class LoadOpLowering(RewritePattern):
    """memref.load -> getelementptr inbounds + llvm.load."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        addr, elem, align = _element_address(op, new_ops)
        props = {"ordering": int_attr(0, i64), "alignment": int_attr(align, i64)}
        load = make(llvm.LoadOp, (addr,), (elem,), props)
        new_ops.append(load)
        replace_with_llvm(rewriter, op, new_ops, [load.dereferenced_value])


class StoreOpLowering(RewritePattern):
    """memref.store -> getelementptr inbounds + llvm.store."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        addr, _, align = _element_address(op, new_ops)
        value = llvm_operand(op.value, new_ops)
        props: dict[str, Attribute] = {
            "ordering": int_attr(0, i64),
            "alignment": int_attr(align, i64),
        }
        if op.nontemporal is not None and op.nontemporal.value.data:
            props["nontemporal"] = UnitAttr()
        new_ops.append(make(llvm.StoreOp, (value, addr), (), props))
        rewriter.replace(op, new_ops, [])


class ViewLikeOpLowering(RewritePattern):
    """subview/cast/reinterpret_cast/collapse/expand/assume_alignment forward the pointer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: memref.SubviewOp
        | memref.CastOp
        | memref.ReinterpretCastOp
        | memref.CollapseShapeOp
        | memref.ExpandShapeOp
        | memref.AssumeAlignmentOp,
        rewriter: PatternRewriter,
        /,
    ) -> None:
        result = op.results[0]
        layout(memref_type(result, op), op)
        if isinstance(op, memref.SubviewOp | memref.ReinterpretCastOp) and (
            op.offsets or op.sizes or op.strides
        ):
            fail(op, f"{PASS}: '{op.name}' with dynamic offsets, sizes or strides is not supported")
        new_ops: list[Operation] = []
        source = op.operands[0]
        ptr = llvm_operand(source, new_ops)
        replace_with_llvm(rewriter, op, new_ops, [ptr])


class ViewOpLowering(RewritePattern):
    """memref.view -> getelementptr i8 at the byte shift."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.ViewOp, rewriter: PatternRewriter, /) -> None:
        if op.sizes:
            fail(op, f"{PASS}: '{op.name}' with dynamic sizes is not supported")
        layout(memref_type(op.result, op), op)
        new_ops: list[Operation] = []
        base, shift = llvm_operands((op.source, op.byte_shift), new_ops)
        addr = gep(base, shift, i8)
        new_ops.append(addr)
        replace_with_llvm(rewriter, op, new_ops, [addr.result])


class GlobalOpLowering(RewritePattern):
    """memref.global -> llvm.mlir.global of a flat array (dense initializer kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter, /) -> None:
        mt = op.type
        shape, _, _ = layout(mt, op)
        elem = convert_type(mt.element_type)
        value = op.initial_value if isinstance(op.initial_value, DenseIntOrFPElementsAttr) else None
        if op.sym_visibility.data == "private":
            linkage = "private"
        else:  # uninitialised public globals are zero-filled definitions, not declarations
            linkage = "external" if value is not None else "common"
        alignment = op.alignment.value.data if op.alignment is not None else BUFFER_ALIGNMENT
        new = llvm.GlobalOp(
            llvm.LLVMArrayType(numel(shape), elem),
            op.sym_name,
            linkage,
            constant=op.constant is not None,
            value=value,
            alignment=max(alignment, BUFFER_ALIGNMENT),
        )
        rewriter.replace(op, new)


class GetGlobalOpLowering(RewritePattern):
    """memref.get_global -> llvm.mlir.addressof."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter, /) -> None:
        new = llvm.AddressOfOp(op.name_.root_reference, PTR)
        replace_with_llvm(rewriter, op, [new], [new.result])


class CopyOpLowering(RewritePattern):
    """memref.copy between identity-layout buffers -> llvm.memcpy."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CopyOp, rewriter: PatternRewriter, /) -> None:
        src_t = memref_type(op.source, op)
        dst_t = memref_type(op.destination, op)
        if not (isinstance(src_t.layout, NoneAttr) and isinstance(dst_t.layout, NoneAttr)):
            fail(op, f"{PASS}: '{op.name}' is only supported between identity layouts")
        shape, _, _ = layout(src_t, op)
        new_ops: list[Operation] = []
        src, dst = llvm_operands((op.source, op.destination), new_ops)
        size = constant(numel(shape) * element_byte_size(src_t.element_type, op), i64)
        volatile = constant(0, i1)
        new_ops += [size, volatile]
        new_ops.append(
            call_intrinsic("llvm.memcpy.p0.p0.i64", [dst, src, size.result, volatile.result], None)
        )
        rewriter.replace(op, new_ops, [])


class DimOpLowering(RewritePattern):
    """memref.dim with a constant index on a static memref -> constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DimOp, rewriter: PatternRewriter, /) -> None:
        mt = memref_type(op.source, op)
        shape, _, _ = layout(mt, op)
        idx_op = op.index.owner
        value = idx_op.properties.get("value") if isinstance(idx_op, Operation) else None
        if not isinstance(value, IntegerAttr):
            fail(op, f"{PASS}: '{op.name}' needs a constant dimension index")
        c = constant(shape[value.value.data], i64)
        replace_with_llvm(rewriter, op, [c], [c.result])


class ExtractAlignedPointerLowering(RewritePattern):
    """memref.extract_aligned_pointer_as_index -> llvm.ptrtoint."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: memref.ExtractAlignedPointerAsIndexOp, rewriter: PatternRewriter, /
    ) -> None:
        new_ops: list[Operation] = []
        ptr = llvm_operand(op.source, new_ops)
        cast = llvm.PtrToIntOp(ptr, i64)
        new_ops.append(cast)
        replace_with_llvm(rewriter, op, new_ops, [cast.output])


def memref_to_llvm_patterns(
    max_alloca_bytes: int = 16384, max_stack_bytes: int = 131072
) -> list[RewritePattern]:
    """The patterns of this pass (also used by ``convert-to-llvm``)."""
    return [
        LoadOpLowering(),
        StoreOpLowering(),
        ViewLikeOpLowering(),
        ViewOpLowering(),
        AllocOpLowering(max_alloca_bytes, max_stack_bytes),
        AllocaOpLowering(),
        DeallocOpLowering(),
        GlobalOpLowering(),
        GetGlobalOpLowering(),
        CopyOpLowering(),
        DimOpLowering(),
        ExtractAlignedPointerLowering(),
    ]


DIALECTS: tuple[str, ...] = ("memref",)
"""The dialects this pass converts completely."""


@dataclass(frozen=True)
class ConvertMemRefToLLVMPass(ModulePass):
    """Lower statically shaped memref ops to bare pointers, GEP, loads/stores and malloc."""

    name = "convert-memref-to-llvm"

    max_alloca_bytes: int = 16384
    """memref.alloc of at most this many bytes that does not escape goes on the stack."""

    max_stack_bytes: int = 131072
    """Stack budget per function for such promoted allocs (the rest uses aligned_alloc)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if min(self.max_alloca_bytes, self.max_stack_bytes) < 0:
            raise PassFailedException(
                f"{self.name}: max-alloca-bytes and max-stack-bytes must be >= 0, got "
                f"{self.max_alloca_bytes} and {self.max_stack_bytes}"
            )
        patterns = memref_to_llvm_patterns(self.max_alloca_bytes, self.max_stack_bytes)
        convert_module(op, patterns, DIALECTS, self.name)
