"""Running a pipeline with MLIR-style diagnostics and instrumentation (for `rlx-opt`).

`run_pipeline` applies the passes one by one, verifies after each, and turns failures
into located diagnostics: a pass error is reported at the op it names (`OpError`), or else
at the op a rewrite pattern was working on (found in the traceback,
so a `PassFailedException` raised in a rewrite pattern's `match_and_rewrite(op, ...)` is
located at that op). Instrumentations observe each pass (MLIR's PassInstrumentation): IR dumps
(`--mlir-print-ir-*`), `--verbose` logging, graph reports, `--check-equivalence`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, ShrinkException

from rlx.diagnostics import (
    DiagnosticEngine,
    InternalError,
    diagnostic_from_exception,
    op_loc,
)

IR_DUMP_HEADER = "// -----// IR Dump {when} {name} //----- //"


class ChunkFailed(Exception):
    """Processing of the current chunk stopped; its diagnostics are in the engine."""


class Instrumentation:
    """Hooks around each pass; the default hooks do nothing.

    A hook may raise `DiagnosticException` (reported at its op; the chunk fails).
    """

    def before_pipeline(self, module: ModuleOp) -> None:
        """Called once before the first pass."""

    def before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        """Called before `pass_` runs."""

    def after_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        """Called after `pass_` succeeded and the IR verified."""

    def after_failed(self, pass_: ModulePass, module: ModuleOp) -> None:
        """Called after `pass_` failed (or left invalid IR)."""

    def after_pipeline(self, module: ModuleOp) -> None:
        """Called once after the last pass."""


def _print(module: ModuleOp, generic: bool, debuginfo: bool) -> str:
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    try:
        Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(
            module
        )
    except Exception as e:  # invalid IR may not print; dumps are best effort
        out.write(f"<cannot print IR: {type(e).__name__}: {e}>")
    return out.getvalue()


class IRPrinter(Instrumentation):
    """`--mlir-print-ir-{before,after}[-all|-change]`: headed IR dumps on stderr."""

    def __init__(self, args: argparse.Namespace) -> None:
        def names(values: Sequence[str]) -> set[str]:
            return {n.strip() for v in values for n in v.split(",") if n.strip()}

        self.args = args
        self.before_all = args.mlir_print_ir_before_all
        self.after_all = args.print_ir_after_all or args.print_between_passes
        self.after_change = args.mlir_print_ir_after_change
        self.before = names(args.mlir_print_ir_before)
        self.after = names(args.mlir_print_ir_after)
        self._text_before = ""

    @property
    def active(self) -> bool:
        return bool(
            self.before_all or self.after_all or self.after_change or self.before or self.after
        )

    def _dump(self, when: str, name: str, module: ModuleOp, failed: bool = False) -> None:
        text = _print(module, self.args.print_op_generic or failed, self.args.print_debuginfo)
        sys.stderr.write(IR_DUMP_HEADER.format(when=when, name=name) + "\n" + text + "\n\n")
        sys.stderr.flush()

    def before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        if self.after_change:
            self._text_before = _print(module, True, False)
        if self.before_all or pass_.name in self.before:
            self._dump("Before", pass_.name, module)

    def after_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        if self.after_all or pass_.name in self.after:
            self._dump("After", pass_.name, module)
        elif self.after_change and _print(module, True, False) != self._text_before:
            self._dump("After", pass_.name, module)

    def after_failed(self, pass_: ModulePass, module: ModuleOp) -> None:
        if self.after_all or self.after_change or pass_.name in self.after:
            self._dump("After", f"{pass_.name} Failed", module, failed=True)


class VerboseLog(Instrumentation):
    """`--verbose` / RLX_VERBOSE=1: op counts and time per pass on stderr."""

    def before_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self._ops = count_ops(module)
        self._start = time.perf_counter()

    def after_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        ms = (time.perf_counter() - self._start) * 1e3
        sys.stderr.write(
            f"[rlx] pass {pass_.name}: {self._ops} -> {count_ops(module)} ops, {ms:.1f} ms\n"
        )


def verbose_requested(args: argparse.Namespace) -> bool:
    env = os.environ.get("RLX_VERBOSE", "").strip().lower()
    return bool(getattr(args, "verbose", False)) or env not in ("", "0", "false", "no", "off")


def count_ops(module: ModuleOp) -> int:
    """Ops in the module below its top level (what --verbose reports per pass)."""
    return sum(1 for _ in module.walk()) - 1


def op_from_traceback(exc: BaseException) -> Operation | None:
    """The `op` of the innermost `match_and_rewrite(op, rewriter)` that `exc` went through.

    That is the op an xDSL rewrite pattern was rewriting when it raised.
    """
    found: Operation | None = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        candidate = frame.f_locals.get("op")
        if (
            frame.f_code.co_name == "match_and_rewrite"
            and isinstance(candidate, Operation)
            and not isinstance(candidate, ModuleOp)
            and op_loc(candidate) is not None
        ):
            found = candidate
        tb = tb.tb_next
    return found


def pass_error(exc: DiagnosticException) -> Any:
    """The located diagnostic of a pass failure (see the module docstring)."""
    return diagnostic_from_exception(exc, op_from_traceback(exc))


def find_verification_failure(
    op: Operation,
) -> tuple[Operation, DiagnosticException] | None:
    """Verify `op` and everything nested (xDSL verifiers, dominance, shape bounds); return
    the first failing op and its error (see `rlx.ir_checks.find_failure`)."""
    from rlx.ir_checks import find_failure

    return find_failure(op)


class PipelineRunner:
    """Runs passes on modules, reporting to a `DiagnosticEngine`; records timings."""

    def __init__(
        self,
        ctx: Any,
        passes: Sequence[ModulePass],
        verify: bool,
        instrumentations: Sequence[Instrumentation] = (),
    ) -> None:
        self.ctx = ctx
        self.passes = list(passes)
        self.verify_ir = verify
        self.instrumentations = list(instrumentations)
        self.timings: list[tuple[str, float]] = []

    def verify(self, module: ModuleOp, engine: DiagnosticEngine, after: str) -> None:
        """Verify (unless disabled); a failure is reported at the failing op."""
        if not self.verify_ir:
            return
        start = time.perf_counter()
        try:
            failure = find_verification_failure(module)
        except Exception as e:
            raise InternalError(f"while verifying the IR after {after}", e) from e
        self.timings.append(("verifier", time.perf_counter() - start))
        if failure is not None:
            op, exc = failure
            engine.emit(diagnostic_from_exception(exc, op))
            raise ChunkFailed

    def _hook(self, engine: DiagnosticEngine, hook: str, *args: Any) -> None:
        for inst in self.instrumentations:
            try:
                getattr(inst, hook)(*args)
            except DiagnosticException as e:
                engine.emit(pass_error(e))
                raise ChunkFailed from None

    def run(self, module: ModuleOp, engine: DiagnosticEngine) -> None:
        """Every pass in order, verifying after each. Raises ChunkFailed on errors."""
        self._hook(engine, "before_pipeline", module)
        for pass_ in self.passes:
            self._hook(engine, "before_pass", pass_, module)
            start = time.perf_counter()
            try:
                pass_.apply(self.ctx, module)
            except DiagnosticException as e:
                engine.emit(pass_error(e))
                self._hook(engine, "after_failed", pass_, module)
                raise ChunkFailed from None
            except (ShrinkException, ChunkFailed):
                raise
            except Exception as e:
                raise InternalError(f"while running pass '{pass_.name}'", e) from e
            self.timings.append((pass_.name, time.perf_counter() - start))
            try:
                self.verify(module, engine, after=f"pass '{pass_.name}'")
            except ChunkFailed:
                self._hook(engine, "after_failed", pass_, module)
                raise
            self._hook(engine, "after_pass", pass_, module)
        self._hook(engine, "after_pipeline", module)

    def timing_report(self) -> str:
        """`--time-passes` / `--mlir-timing`: an mlir-opt-like wall-time report."""
        totals: dict[str, float] = {}
        for name, seconds in self.timings:
            totals[name] = totals.get(name, 0.0) + seconds
        total = sum(totals.values()) or 1e-12
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            "... Execution time report ...".center(79).rstrip(),
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, seconds in totals.items():
            lines.append(f"  {seconds:8.4f} ({100 * seconds / total:5.1f}%)  {name}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


def make_runner(ctx: Any, args: argparse.Namespace, passes: Sequence[ModulePass]) -> PipelineRunner:
    """A runner of `passes` with the instrumentations rlx-opt's `args` ask for."""
    from rlx.tools import graph_reports

    insts: list[Instrumentation] = []
    if args.check_equivalence:
        insts.append(EquivalenceCheck(args.check_equivalence_seed))
    if graph_reports.wanted(args, passes):
        insts.append(graph_reports.GraphReports(args, passes))
    if verbose_requested(args):
        insts.append(VerboseLog())
    printer = IRPrinter(args)
    if printer.active:
        insts.append(printer)
    return PipelineRunner(ctx, passes, not args.disable_verify, insts)


class EquivalenceCheck(Instrumentation):
    """`--check-equivalence`: `rlx.runtime.equivalence.EquivalenceChecker` per chunk."""

    def __init__(self, seed: int) -> None:
        from rlx.runtime.equivalence import EquivalenceChecker

        self.checker = EquivalenceChecker(seed)

    def before_pipeline(self, module: ModuleOp) -> None:
        self.checker.start(module)

    def after_pass(self, pass_: ModulePass, module: ModuleOp) -> None:
        self.checker.after_pass(pass_, module)
