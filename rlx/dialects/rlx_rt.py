"""The `rlx_rt` dialect: runtime constructs of the lowered (memref-level) graph.

`rlx_rt.parallel_call` runs one kernel over disjoint chunks of its buffers, on the runtime's
persistent thread pool. `convert-rlx-to-linalg` emits it for large row-parallel ops
(elementwise, softmax, the normalizations): the callee is the op's kernel specialised to a
chunk of rows, so the same chunking that spreads work over threads also keeps each chunk of
a multi-pass kernel (max / sum / scale of softmax) in cache. `convert-func-to-llvm` lowers it
to an outlined task function and a call of the runtime's `rlx_parallel_for`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FlatSymbolRefAttrConstr,
    IntegerAttr,
    MemRefType,
    i64,
)
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, var_operand_def
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from rlx.dtypes import numpy_dtype


@irdl_op_definition
class ParallelCallOp(IRDLOperation):
    """Call `callee` once per task `t` in `[0, tasks)`, in any order and possibly
    concurrently, with operand `i` advanced by `t * strides[i]` bytes.

    The callee's argument types describe one chunk: an operand with stride 0 is passed
    whole to every task (a broadcast operand); the chunks of an operand with a non-zero
    stride must not overlap (`strides[i]` at least the chunk's byte size) and the last one
    must end inside the buffer. `max_threads` caps the threads the runtime may use (1: run
    the tasks in order on the calling thread)."""

    name = "rlx_rt.parallel_call"

    args = var_operand_def(MemRefType)
    callee = prop_def(FlatSymbolRefAttrConstr)
    tasks = prop_def(IntegerAttr[i64])
    strides = prop_def(DenseArrayBase)
    max_threads = prop_def(IntegerAttr[i64])

    def __init__(
        self,
        callee: str,
        args: list,
        tasks: int,
        strides: list[int],
        max_threads: int,
    ) -> None:
        from xdsl.dialects.builtin import SymbolRefAttr

        super().__init__(
            operands=[args],
            properties={
                "callee": SymbolRefAttr(callee),
                "tasks": IntegerAttr(tasks, i64),
                "strides": DenseArrayBase.from_list(i64, strides),
                "max_threads": IntegerAttr(max_threads, i64),
            },
        )

    def stride_values(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.strides.get_values())

    def verify_(self) -> None:
        strides = self.stride_values()
        if len(strides) != len(self.args):
            raise VerifyException(f"has {len(self.args)} operands but {len(strides)} strides")
        if self.tasks.value.data < 1:
            raise VerifyException("needs tasks >= 1")
        if self.max_threads.value.data < 1:
            raise VerifyException("needs max_threads >= 1")
        if any(s < 0 for s in strides):
            raise VerifyException("strides must be >= 0")
        module = self.get_toplevel_object()
        callee = SymbolTable.lookup_symbol(self, self.callee) if module is not self else None
        if callee is None:
            raise VerifyException(f"callee @{self.callee.string_value()} is not defined")
        ftype = getattr(callee, "function_type", None)
        inputs: list[Attribute] = list(ftype.inputs.data) if ftype is not None else []
        if len(inputs) != len(self.args):
            raise VerifyException(
                f"callee @{self.callee.string_value()} takes {len(inputs)} "
                f"arguments, {len(self.args)} given"
            )
        n = self.tasks.value.data
        for i, (v, chunk, s) in enumerate(zip(self.args, inputs, strides, strict=True)):
            whole = v.type
            if not isinstance(chunk, MemRefType) or not isinstance(whole, MemRefType):
                raise VerifyException(f"argument #{i} must be a memref")
            if chunk.element_type != whole.element_type:
                raise VerifyException(
                    f"argument #{i}: element type {whole.element_type} but "
                    f"the callee takes {chunk.element_type}"
                )
            whole_n, chunk_n = _elements(whole), _elements(chunk)
            width = _byte_width(whole.element_type)
            if width is None:
                continue
            chunk_bytes, whole_bytes = chunk_n * width, whole_n * width
            if s == 0 and chunk_bytes > whole_bytes:
                raise VerifyException(
                    f"argument #{i}: the chunk ({chunk}) is larger than the buffer ({whole})"
                )
            if s != 0 and (s < chunk_bytes or (n - 1) * s + chunk_bytes > whole_bytes):
                raise VerifyException(
                    f"argument #{i}: {n} chunks of {chunk} at a stride of "
                    f"{s} bytes do not fit in {whole} without overlapping"
                )


def _elements(t: MemRefType) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _byte_width(t: Attribute) -> int | None:
    """Storage bytes of one element (`rlx.dtypes`: its NumPy dtype), None if it has none."""

    try:
        return numpy_dtype(t).itemsize
    except ValueError:
        return None


RlxRt = Dialect("rlx_rt", [ParallelCallOp], [])
