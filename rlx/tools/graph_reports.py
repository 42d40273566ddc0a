"""`rlx-opt --fusion-report / --assert-fusion-clean / --dispatch-report` as an instrumentation.

The reports describe the rlx graph, so they are printed just before the first pass that
leaves the rlx dialect (or after the pipeline if it does not lower). Each report compares
the module with a snapshot taken just before the passes it describes:

* the fusion report (only when the pipeline has no `fusion` pass; the pass prints its own
  otherwise) compares with the module at the start of the pipeline;
* the dispatch report compares with the module just before the first `kernel-dispatch` /
  `legalize` pass, so rewrites by earlier passes (fusion) are not reported as dispatch's;
  without such a pass nothing was dispatched, and every kind is reported as it is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from rlx.diagnostics import InternalError
from rlx.tools.pass_runner import Instrumentation

LOWERING_BOUNDARY = frozenset({"convert-rlx-to-linalg", "lower-to-llvm"})
"""Passes that leave the rlx dialect: graph reports describe the module just before them."""
DISPATCH_PASSES = frozenset({"kernel-dispatch", "legalize"})


def wanted(args: argparse.Namespace, passes: Sequence[ModulePass]) -> bool:
    """Whether the driver must compute a graph report itself."""
    no_fusion = not any(p.name == "fusion" for p in passes)
    return bool(
        args.dispatch_report or (no_fusion and (args.fusion_report or args.assert_fusion_clean))
    )


class GraphReports(Instrumentation):
    """Prints the requested graph reports once per chunk (see the module docstring)."""

    def __init__(self, args: argparse.Namespace, passes: Sequence[ModulePass]) -> None:
        self.args = args
        self.passes = list(passes)
        no_fusion = not any(p.name == "fusion" for p in passes)
        self.fusion = no_fusion and (args.fusion_report or args.assert_fusion_clean)
        self.dispatch = args.dispatch_report
        self.start: ModuleOp | None = None
        self.dispatch_before: ModuleOp | None = None
        self.done = False

    def before_pipeline(self, module: ModuleOp) -> None:
        self.done = False
        self.start = module.clone() if self.fusion else None
        self.dispatch_before = None

    def before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        if self.done:
            return
        if pass_.name in LOWERING_BOUNDARY:
            self.report(module)
        elif self.dispatch and self.dispatch_before is None and pass_.name in DISPATCH_PASSES:
            self.dispatch_before = module.clone()

    def after_pipeline(self, module: ModuleOp) -> None:
        if not self.done:
            self.report(module)

    def report(self, module: ModuleOp) -> None:
        """Print the reports of the graph `module`; an unclean assert raises."""
        self.done = True
        try:
            if self.fusion and self.start is not None:
                from rlx.transforms.fusion_report import analyze_fusion

                fusion = analyze_fusion(self.start, module)
                if self.args.fusion_report:
                    sys.stderr.write(fusion.format() + "\n")
                if self.args.assert_fusion_clean and fusion.missed:
                    raise fusion.contract_error()
            if self.dispatch:
                before = self.dispatch_before if self.dispatch_before is not None else module
                sys.stderr.write(self._dispatch_report(before, module))
            sys.stderr.flush()
        except DiagnosticException:
            raise
        except Exception as e:
            raise InternalError("while computing the graph reports", e) from e

    def _dispatch_report(self, before: ModuleOp, after: ModuleOp) -> str:
        """`dispatch_report(before, after).format()`, configured like the pipeline's
        `kernel-dispatch` (policy, forced kinds, supported ops) and `legalize` passes."""
        from rlx.transforms.dispatch_report import dispatch_report

        policy = "prefer-native"
        force_common: tuple[str, ...] = ()
        force_native: tuple[str, ...] = ()
        supported: tuple[str, ...] = ()
        for pass_ in self.passes:
            if pass_.name == "kernel-dispatch":
                policy = str(getattr(pass_, "policy", policy))
                force_common = tuple(getattr(pass_, "force_common_kinds", ()))
                force_native = tuple(getattr(pass_, "force_native_kinds", ()))
                supported = tuple(getattr(pass_, "supported_ops", ())) or supported
            elif pass_.name == "legalize":
                supported = tuple(getattr(pass_, "supported_ops", ())) or supported
        report = dispatch_report(
            before,
            after,
            supported_ops=supported,
            policy=policy,
            force_common_kinds=force_common,
            force_native_kinds=force_native,
        )
        from rlx.lowering.gemm.report import gemm_lines
        from rlx.lowering.rlx_to_linalg.attention_report import attention_lines

        return report.format() + gemm_lines(after) + attention_lines(after)
