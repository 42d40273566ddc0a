"""`lower-to-llvm`: stages 1-3 of the lowering as one pass (rlx -> llvm dialect).

Runs `convert-rlx-to-linalg`, `plan-memory{alignment=...}`, `split-graph{max-calls=...}`,
then `LOOPS_TO_LLVM` (`convert-linalg-to-loops`, `convert-scf-to-cf`,
`expand-small-floats`, `convert-to-llvm`, `retype-small-floats`, `reconcile-unrealized-casts`), in that order, as `rlx.compile` does after the graph
passes. `rlx-opt model.mlir --lower-to-llvm` prints the llvm-dialect module;
`--emit=llvm-ir` / `--emit=asm` print its LLVM IR / host assembly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from rlx.lowering.convert_rlx_to_linalg import ConvertRlxToLinalgPass
from rlx.lowering.convert_to_llvm import ConvertToLLVMPass
from rlx.lowering.expand_small_floats import ExpandSmallFloatsPass, RetypeSmallFloatsPass
from rlx.lowering.loop_hints import ConvertScfToCfPass
from rlx.lowering.plan_memory import PlanMemoryPass
from rlx.lowering.split_graph import SplitGraphPass

LOOPS_TO_LLVM: tuple[ModulePass, ...] = (
    ConvertLinalgToLoopsPass(),
    ConvertScfToCfPass(),
    ExpandSmallFloatsPass(),
    ConvertToLLVMPass(),
    RetypeSmallFloatsPass(),
    ReconcileUnrealizedCastsPass(),
)
"""Everything after rlx -> linalg: memref linalg ops -> loops -> cf -> llvm dialect
(fp8/fp6/fp4 values become byte codes around convert-to-llvm: `expand_small_floats`)."""


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """Lower an rlx module to the llvm dialect: convert-rlx-to-linalg, plan-memory,
    split-graph, loops, llvm."""

    name = "lower-to-llvm"
    main_option: ClassVar[str] = "alignment"

    alignment: int = 64
    """Arena byte alignment, forwarded to `plan-memory` (a power of two)."""

    max_calls: int = 256
    """Most kernel calls per outlined part of a graph function, forwarded to `split-graph`."""

    def pipeline(self) -> tuple[ModulePass, ...]:
        """The passes this pass runs, in order."""
        return (
            ConvertRlxToLinalgPass(),
            PlanMemoryPass(alignment=self.alignment),
            SplitGraphPass(max_calls=self.max_calls),
            *LOOPS_TO_LLVM,
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pass_ in self.pipeline():
            pass_.apply(ctx, op)


__all__ = ["LOOPS_TO_LLVM", "LowerToLLVMPass"]
