"""Lowering of `rlx_rt.parallel_call` to the llvm dialect (part of `convert-func-to-llvm`).

    rlx_rt.parallel_call @k(%a, %b) {tasks = T, strides = [sa, sb], max_threads = M}

becomes, in the caller, an array of the operands' base pointers on the stack and

    llvm.call @rlx_parallel_for(@k_task_<sa>_<sb>, %ctx, T, M)

plus (once per callee and strides) an internal task function

    llvm.func internal @k_task_<sa>_<sb>(%ctx: !llvm.ptr, %begin: i64, %end: i64) {
      for t in [begin, end): llvm.call @k(ctx[0] + t * sa, ctx[1] + t * sb)
    }

`rlx_parallel_for(task, ctx, tasks, max_threads)` is the runtime's (`rlx.runtime.parallel`):
it splits `[0, tasks)` into ranges over its persistent thread pool (or runs
`task(ctx, 0, tasks)` itself when one thread is enough).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i1, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from rlx.dialects.rlx_rt import ParallelCallOp
from rlx.lowering.llvm_common import (
    NSW,
    PTR,
    constant,
    ensure_llvm_func,
    fail,
    find_symbol,
    gep,
    index_array,
    int_attr,
    llvm_operands,
    make,
)

RUNTIME_SYMBOL = "rlx_parallel_for"
"""void rlx_parallel_for(void (*task)(void **ctx, i64 begin, i64 end), void **ctx,
i64 tasks, i64 max_threads): provided by `rlx.runtime.parallel`."""

_SLT = IntegerAttr(2, i64)
_I8 = IntegerType(8)
_LOAD = {"ordering": int_attr(0, i64), "alignment": int_attr(8, i64)}


def _add(ops: list[Operation], op: Operation) -> SSAValue:
    ops.append(op)
    return op.results[0]


def _build_task(name: str, callee: str, strides: tuple[int, ...]) -> llvm.FuncOp:
    """The task function: calls `callee` for every task index in [begin, end)."""
    entry = Block(arg_types=[PTR, i64, i64])
    head = Block(arg_types=[i64])
    body = Block()
    exit_ = Block()
    ctx, begin, end = entry.args
    ops: list[Operation] = []
    bases = [
        _add(ops, make(llvm.LoadOp, (_add(ops, gep(ctx, i, PTR)),), (PTR,), dict(_LOAD)))
        for i in range(len(strides))
    ]
    ops.append(llvm.BrOp.create(operands=[begin], successors=[head]))
    entry.add_ops(ops)

    t = head.args[0]
    cond = make(llvm.ICmpOp, (t, end), (i1,), {"predicate": _SLT})
    head.add_ops(
        [
            cond,
            llvm.CondBrOp.create(
                operands=[cond.results[0]],
                properties={"operandSegmentSizes": index_array((1, 0, 0))},
                successors=[body, exit_],
            ),
        ]
    )

    ops = []
    args: list[SSAValue] = []
    for base, stride in zip(bases, strides, strict=True):
        if stride == 0:
            args.append(base)
            continue
        off = _add(ops, make(llvm.MulOp, (t, _add(ops, constant(stride, i64))), (i64,),
                             {"overflowFlags": NSW}))  # fmt: skip
        args.append(_add(ops, gep(base, off, _I8)))
    ops.append(llvm.CallOp(callee, *args))
    one = _add(ops, constant(1, i64))
    nxt = _add(ops, make(llvm.AddOp, (t, one), (i64,), {"overflowFlags": NSW}))
    ops.append(llvm.BrOp.create(operands=[nxt], successors=[head]))
    body.add_ops(ops)
    exit_.add_op(llvm.ReturnOp.create())
    return llvm.FuncOp(
        name,
        llvm.LLVMFunctionType([PTR, i64, i64]),
        linkage=llvm.LinkageAttr("internal"),
        body=Region([entry, head, body, exit_]),
    )


def task_name(callee: str, strides: tuple[int, ...]) -> str:
    return f"{callee}_task_" + "_".join(str(s) for s in strides)


class ParallelCallLowering(RewritePattern):
    """rlx_rt.parallel_call -> a task function plus a call of `rlx_parallel_for`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ParallelCallOp, rewriter: PatternRewriter, /) -> None:
        module = op.get_toplevel_object()
        if not isinstance(module, ModuleOp):
            fail(op, f"'{op.name}' is not nested in a builtin.module")
        callee = op.callee.string_value()
        strides = op.stride_values()
        name = task_name(callee, strides)
        if find_symbol(module, name) is None:
            rewriter.insert(
                _build_task(name, callee, strides), InsertPoint.at_end(module.body.block)
            )
        ensure_llvm_func(op, RUNTIME_SYMBOL, llvm.LLVMFunctionType([PTR, PTR, i64, i64]), rewriter)
        new_ops: list[Operation] = []
        ptrs = llvm_operands(op.args, new_ops)
        n = _add(new_ops, constant(len(ptrs), i64))
        ctx = _add(new_ops, llvm.AllocaOp(n, PTR, alignment=8))
        for i, p in enumerate(ptrs):
            slot = _add(new_ops, gep(ctx, i, PTR))
            new_ops.append(make(llvm.StoreOp, (p, slot), (), dict(_LOAD)))
        task = _add(new_ops, llvm.AddressOfOp(name, PTR))
        tasks = _add(new_ops, constant(op.tasks.value.data, i64))
        threads = _add(new_ops, constant(op.max_threads.value.data, i64))
        new_ops.append(llvm.CallOp(RUNTIME_SYMBOL, task, ctx, tasks, threads))
        rewriter.replace(op, new_ops, [])


__all__ = ["RUNTIME_SYMBOL", "ParallelCallLowering", "task_name"]
