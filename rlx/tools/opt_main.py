"""`RlxOptMain`: the implementation of `rlx-opt` (imported lazily by `rlx.tools.rlx_opt`).

A closed-world `xDSLOptMain`: exactly the dialects of `rlx.dialects.get_all_dialects()`
(rlx ops resolved one at a time through a `LazyOpContext`, for start-up time),
the upstream xDSL passes plus the rlx transform and lowering passes (rlx names win), the
upstream targets. On top of xdsl-opt it adds MLIR-style behaviour: located diagnostics
with source excerpts, `--verify-diagnostics` with `expected-*` directives, one
`--PASS-NAME[=VALUE]` flag per pass, `--print-ir-after-all`, `--list-passes`; and RLX's
own outputs: `--emit=llvm-ir|asm` (after `--lower-to-llvm`), `--fusion-report`,
`--dispatch-report`, `--assert-fusion-clean`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from typing import IO, ClassVar, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from rlx import __version__ as rlx_version
from rlx.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    ExpectedDiagnostic,
    InternalError,
    SourceLoc,
    SourceManager,
    diagnostic_from_exception,
    parse_expectations,
    render,
    verify_expectations,
)
from rlx.parser import InputChunk, LocatingParser, split_input
from rlx.tools.lazy_context import LazyOpContext
from rlx.tools.pass_flags import (
    PassFlag,
    PassOptionError,
    build_pass_from_flag,
    first_doc_line,
    parse_pipeline_string,
    split_pass_flags,
    unknown_pass_error,
)

STDIN_NAME = "<stdin>"
IR_DUMP_HEADER = "// -----// IR Dump After {name} //----- //"
IR_DUMP_FAILED_HEADER = "// -----// IR Dump After {name} Failed //----- //"
EMIT_CHOICES = ("mlir", "llvm-ir", "asm")
"""`--emit` values: MLIR text (default), the LLVM module, host assembly (O3)."""
LOWERING_BOUNDARY = frozenset({"convert-rlx-to-linalg", "lower-to-llvm"})
"""Passes that leave the rlx dialect: graph reports describe the module just before them."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but usage errors exit with 1 (2 is reserved for internal errors)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


class _ChunkFailed(Exception):
    """Processing of the current chunk stopped; its diagnostics are in the engine."""


class RlxOptMain(xDSLOptMain):
    """The `rlx-opt` driver: parse, run passes, print; MLIR-style diagnostics."""

    version_format: ClassVar[str] = f"rlx-opt {rlx_version} (xDSL {{xdsl_version}})"

    rlx_pass_names: set[str]
    """Names registered by rlx (transforms and lowering), for `--list-passes`."""
    pass_flags: list[PassFlag]
    """`--PASS-NAME[=VALUE]` flags from the command line, in order."""
    passes: list[ModulePass]
    """The pipeline to run (from `-p` or from the pass flags)."""

    def __init__(
        self,
        description: str = "RLX modular optimizer driver (mlir-opt style)",
        args: Sequence[str] | None = None,
    ) -> None:
        # Mirrors xDSLOptMain.__init__, which cannot be reused: pass flags must be taken
        # out of argv before argparse sees it, and usage errors must not exit with 2.
        argv = list(sys.argv[1:] if args is None else args)
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.rlx_pass_names = set()

        self.ctx = LazyOpContext()
        self.register_all_dialects()
        self.register_all_frontends()
        self.register_all_passes()
        self.register_all_targets()

        self._arg_parser = arg_parser = _ArgumentParser(
            prog="rlx-opt",
            description=description,
            usage="rlx-opt [options] [input-file | -] [-o output-file]",
            allow_abbrev=False,
            epilog="Pass flags: --PASS-NAME runs a pass with defaults; "
            "--PASS-NAME='key=value ...' sets options; --PASS-NAME=VALUE sets the "
            "pass's main option. Pass flags run in command-line order.",
        )
        self.register_all_arguments(arg_parser)
        flag_names = self._register_pass_flag_arguments(arg_parser)
        argv, self.pass_flags = split_pass_flags(argv, flag_names)
        self.args = arg_parser.parse_args(argv)

        from xdsl.utils.arg_spec import parse_spec
        from xdsl.utils.exceptions import ArgSpecParseError

        try:
            target_name = parse_spec(self.args.target).name
        except ArgSpecParseError as e:
            arg_parser.error(f"invalid target '{self.args.target}': {e}")
        if target_name not in self.available_targets:
            arg_parser.error(
                f"argument -t/--target: invalid choice: '{target_name}' "
                f"(choose from {', '.join(self.available_targets)})"
            )
        if self.args.emit != "mlir" and target_name != "mlir":
            arg_parser.error(
                f"--emit={self.args.emit} cannot be combined with -t/--target {self.args.target}"
            )
        if self.args.frontend and self.args.frontend != "mlir":
            arg_parser.error(
                f"argument -f/--frontend: invalid choice: '{self.args.frontend}' "
                "(rlx-opt reads MLIR only)"
            )
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        self.setup_pipeline()

    # ----------------------------------------------------------------------------------
    # Registration (closed world)
    # ----------------------------------------------------------------------------------

    def register_all_dialects(self) -> None:
        """Exactly `rlx.dialects.get_all_dialects()` (no entry-point discovery).

        rlx ops are resolved one by one (see `LazyOpContext`): a module using a few rlx
        ops only imports the submodules defining them.
        """
        from rlx.dialects import get_all_dialects

        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)
        if isinstance(self.ctx, LazyOpContext) and "rlx" in self.ctx.registered_dialect_names:
            from rlx.dialects.rlx import op_loaders

            self.ctx.register_lazy_ops("rlx", op_loaders())

    def register_all_frontends(self) -> None:
        """Only MLIR text is read (by `LocatingParser`)."""
        from xdsl.frontend import get_all_frontends

        self.available_frontends.update(get_all_frontends())

    def register_all_passes(self) -> None:
        """Upstream xDSL passes, then rlx transforms and lowerings (overriding)."""
        from xdsl.transforms import get_all_passes as upstream_passes

        from rlx.lowering import get_all_lowering_passes
        from rlx.transforms import get_all_passes

        for name, factory in upstream_passes().items():
            self.register_pass(name, factory)
        for registry in (get_all_passes(), get_all_lowering_passes()):
            for name, factory in registry.items():
                self.register_pass(name, factory)
                self.rlx_pass_names.add(name)

    def register_all_targets(self) -> None:
        """The upstream xDSL output targets (mlir, llvm, ...)."""
        from xdsl.targets import get_all_targets

        for name, factory in get_all_targets().items():
            self.available_targets.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """xdsl-opt's arguments (same names and destinations) with rlx-opt's semantics."""
        from xdsl.xdsl_opt_main import VersionAction

        add = arg_parser.add_argument
        add("input_file", nargs="?", help="input file (MLIR text); '-' or none: stdin")
        add("-o", "--output-file", help="write the output here instead of stdout")
        add(
            "-p",
            "--passes",
            default="",
            help="pass pipeline, e.g. 'canonicalize,cse,my-pass{key=value list=1,2}' "
            "(cannot be combined with pass flags; see --list-passes)",
        )
        add(
            "-t",
            "--target",
            default="mlir",
            help="output format: " + ", ".join(sorted(self.available_targets)) + " (default: mlir)",
        )
        add("-f", "--frontend", help="input format (only 'mlir')")
        add(
            "--emit",
            choices=EMIT_CHOICES,
            default="mlir",
            help="what to print: mlir (default), llvm-ir (the LLVM module) or asm (host "
            "assembly, O3 for the host CPU); llvm-ir and asm need the llvm dialect "
            "(add --lower-to-llvm)",
        )
        add(
            "--fusion-report",
            action="store_true",
            help="print the fusion report (fused ops, near misses) to stderr",
        )
        add(
            "--dispatch-report",
            action="store_true",
            help="print the kernel dispatch report (how each op kind runs) to stderr",
        )
        add(
            "--assert-fusion-clean",
            action="store_true",
            help="fail if fusion leaves a near miss (fusion{assert-clean=true})",
        )
        add(
            "--split-input-file",
            action="store_true",
            help="process each '// -----'-separated chunk of the input on its own",
        )
        add(
            "--verify-diagnostics",
            action="store_true",
            help="check the diagnostics against the input's 'expected-error/warning/"
            "note/remark' directives (MLIR-style); exit 0 iff they match",
        )
        add(
            "--parsing-diagnostics",
            action="store_true",
            help="print parse errors to stdout and exit 0 (xdsl-opt compatibility)",
        )
        add("--print-op-generic", action="store_true", help="print ops in generic form")
        add("--print-debuginfo", action="store_true", help="print op locations (loc(...))")
        add("--print-no-properties", action="store_true", help="print properties as attributes")
        add(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR to stderr after each pass, after a header line "
            "'// -----// IR Dump After <pass> //----- //'",
        )
        add(
            "--print-between-passes",
            action="store_true",
            help="same as --print-ir-after-all (xdsl-opt compatibility)",
        )
        add(
            "--verbose",
            action="store_true",
            help="log each pass with op counts before/after and its time to stderr "
            "(also with RLX_VERBOSE=1)",
        )
        add(
            "--time-passes",
            action="store_true",
            help="print a wall-time report (parse, passes, verifier, output) to stderr",
        )
        add(
            "--list-passes",
            action="store_true",
            help="list every registered pass (name, [rlx]/[xdsl], summary) and exit",
        )
        add(
            "--disable-verify",
            action="store_true",
            help="do not verify the IR after parsing and after each pass",
        )
        add(
            "--allow-unregistered-dialect",
            action="store_true",
            help="accept ops of unregistered dialects",
        )
        add(
            "--no-implicit-module",
            action="store_true",
            help="require a top-level builtin.module in the input",
        )
        add("--syntax-highlight", action="store_true", help="colour the printed IR")
        add("--shrink", action="store_true", help="shrinkray interestingness test mode")
        add(
            "-v",
            "--version",
            action=VersionAction,
            version_format=self.version_format,
            help="print the rlx and xDSL versions and exit",
        )

    def _register_pass_flag_arguments(self, arg_parser: argparse.ArgumentParser) -> list[str]:
        """Document one `--NAME[=VALUE]` flag per pass in `--help`; returns usable names.

        The flags are taken out of argv by `split_pass_flags` (so argparse only lists
        them). A pass whose name collides with a driver flag gets no flag.
        """
        group = arg_parser.add_argument_group(
            "pass flags",
            "--PASS runs a pass with defaults, --PASS='key=value ...' sets its options, "
            "--PASS=VALUE sets its main option; flags run in command-line order and "
            "cannot be mixed with -p (see --list-passes)",
        )
        names: list[str] = []
        for name in sorted(self.available_passes):
            try:
                group.add_argument(
                    f"--{name}",
                    action="store_true",
                    dest=f"_pass_flag_{name}",
                    help=argparse.SUPPRESS if name.startswith("test-") else None,
                )
            except argparse.ArgumentError:
                continue
            names.append(name)
        from rlx.transforms import FLAG_ALIASES

        for alias, target in sorted(FLAG_ALIASES.items()):
            if target in self.available_passes and alias not in self.available_passes:
                group.add_argument(f"--{alias}", action="store_true", help=f"alias of --{target}")
                names.append(alias)
        return names

    # ----------------------------------------------------------------------------------
    # Pipeline
    # ----------------------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        """Build `self.passes` from `-p` or from the pass flags (not both)."""
        registry = self.available_passes
        try:
            if self.args.passes and self.pass_flags:
                raise PassOptionError(
                    f"-p/--passes cannot be combined with pass flags "
                    f"({', '.join(f.spelling for f in self.pass_flags)}); "
                    "use one or the other"
                )
            if self.args.passes:
                self.passes = parse_pipeline_string(self.args.passes, registry)
            else:
                self.passes = []
                from rlx.transforms import FLAG_ALIASES

                for flag in self.pass_flags:
                    name = FLAG_ALIASES.get(flag.name, flag.name)
                    if name not in registry:
                        raise unknown_pass_error(flag.name, registry)
                    self.passes.append(build_pass_from_flag(registry[name](), flag))
        except PassOptionError as e:
            sys.stderr.write(f"rlx-opt: error: {e}\n")
            raise SystemExit(1) from None
        self.passes = [self._with_report_options(p) for p in self.passes]
        self.pipeline = PassPipeline(tuple(self.passes))

    def _with_report_options(self, pass_: ModulePass) -> ModulePass:
        """`fusion` with `report`/`assert_clean` set by --fusion-report/--assert-fusion-clean."""
        if pass_.name != "fusion" or not dataclasses.is_dataclass(pass_):
            return pass_
        changes: dict[str, bool] = {}
        if getattr(self.args, "fusion_report", False) and hasattr(pass_, "report"):
            changes["report"] = True
        if getattr(self.args, "assert_fusion_clean", False) and hasattr(pass_, "assert_clean"):
            changes["assert_clean"] = True
        return dataclasses.replace(pass_, **changes) if changes else pass_

    def _has_fusion_pass(self) -> bool:
        return any(p.name == "fusion" for p in self.passes)

    def apply_passes(self, prog: ModuleOp) -> None:
        """Run the pipeline on `prog` (xDSL API); diagnostics go to stderr.

        Raises `DiagnosticException` if a pass or the verifier fails.
        """
        engine = DiagnosticEngine()
        self._timings = []
        self.sources = SourceManager()
        try:
            with engine.activate():
                self.apply_passes_with_diagnostics(prog, engine)
        except _ChunkFailed:
            raise DiagnosticException(
                "; ".join(d.message for d in engine.diagnostics if d.severity == "error")
            ) from None
        finally:
            for diag in engine.diagnostics:
                if diag.severity != "error":
                    sys.stderr.write(render(diag))

    # ----------------------------------------------------------------------------------
    # Driver
    # ----------------------------------------------------------------------------------

    def run(self) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Process the input; returns the exit code (0 ok, 1 errors in the input)."""
        if self.args.list_passes:
            self.list_passes(sys.stdout)
            return 0

        try:
            name, text = self._read_input()
        except OSError as e:
            detail = e.strerror or str(e)
            print(
                f"rlx-opt: error: cannot read input file '{e.filename}': {detail}", file=sys.stderr
            )
            return 1
        except UnicodeDecodeError as e:
            print(f"rlx-opt: error: input is not valid UTF-8: {e}", file=sys.stderr)
            return 1

        self.sources = SourceManager()
        self.sources.add(name, text)
        self.input_name = name
        self._timings: list[tuple[str, float]] = []
        expected_all: list[ExpectedDiagnostic] = []
        failed = False
        if self.args.verify_diagnostics:
            expected_all, malformed = parse_expectations(text, name)
            for diag in malformed:
                sys.stderr.write(render(diag, self.sources, self.input_name))
            failed = bool(malformed)

        try:
            output = self.prepare_output()
        except OSError as e:
            print(
                f"rlx-opt: error: cannot open output file '{e.filename}': {e.strerror}",
                file=sys.stderr,
            )
            return 1
        try:
            for index, chunk in enumerate(split_input(text, self.args.split_input_file)):
                if index > 0:
                    output.write("// -----\n")
                engine = DiagnosticEngine()
                with engine.activate():
                    result = self._process_chunk(chunk, name, engine)
                if result is not None:
                    output.write(result)
                output.flush()
                if self.args.verify_diagnostics:
                    expected = [
                        e
                        for e in expected_all
                        if chunk.first_line <= e.directive.line <= chunk.last_line
                    ]
                    problems = verify_expectations(engine.diagnostics, expected, name)
                    for diag in problems:
                        sys.stderr.write(render(diag, self.sources, self.input_name))
                    failed |= bool(problems)
                else:
                    for diag in engine.diagnostics:
                        sys.stderr.write(render(diag, self.sources, self.input_name))
                    failed |= engine.has_errors
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.time_passes:
            self._print_timing_report()
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        return 1 if failed else 0

    def _read_input(self) -> tuple[str, str]:
        """(buffer name, text) of the input file, or of stdin for none or `-`."""
        path = self.args.input_file
        if path is None or path == "-":
            return STDIN_NAME, sys.stdin.buffer.read().decode("utf-8")
        with open(path, "rb") as f:
            return path, f.read().decode("utf-8")

    def get_input_name(self) -> str:
        """The file name used in locations (`<stdin>` for standard input)."""
        path = self.args.input_file
        return STDIN_NAME if path is None or path == "-" else path

    def _process_chunk(self, chunk: InputChunk, name: str, engine: DiagnosticEngine) -> str | None:
        """Parse, verify, run passes, print. None when the chunk failed (see engine)."""
        try:
            start = time.perf_counter()
            module = self._parse(chunk, name, engine)
            self._timings.append(("parse", time.perf_counter() - start))
            if module is None:
                return None
            self._verify(module, engine, after="parsing")
            self.apply_passes_with_diagnostics(module, engine)
            start = time.perf_counter()
            try:
                text = self.output_resulting_program(module)
            except DiagnosticException as e:
                engine.emit(diagnostic_from_exception(e))
                return None
            except ShrinkException:
                raise
            except Exception as e:
                emit = self.args.emit
                what = f"--emit={emit}" if emit != "mlir" else f"-t {self.args.target}"
                raise InternalError(f"while printing the output with {what}", e) from e
            self._timings.append(("output", time.perf_counter() - start))
            return text
        except _ChunkFailed:
            return None

    def _parse(self, chunk: InputChunk, name: str, engine: DiagnosticEngine) -> ModuleOp | None:
        if chunk.is_blank():
            return ModuleOp([])
        parser = LocatingParser(self.ctx, chunk.text, name)
        try:
            return parser.parse_located_module(not self.args.no_implicit_module)
        except ParseError as e:
            diag = self._parse_error_diagnostic(e, parser)
            if self.args.parsing_diagnostics:
                sys.stdout.write(render(diag, self.sources, self.input_name))
                return None
            engine.emit(diag)
            return None
        except DiagnosticException as e:
            # e.g. an attribute verifier failing while the op is being built
            loc = None
            if parser.failed_op_position is not None:
                line, col = parser.position_to_line_col(parser.failed_op_position)
                loc = SourceLoc(name, line, col)
            engine.emit(Diagnostic("error", str(e), loc))
            return None
        except ShrinkException:
            raise
        except Exception as e:
            where = ""
            if parser.failed_op_position is not None:
                line, col = parser.position_to_line_col(parser.failed_op_position)
                where = f" at {name}:{line}:{col}"
            raise InternalError(f"while parsing{where}", e) from e

    def _parse_error_diagnostic(self, e: ParseError, parser: LocatingParser) -> Diagnostic:
        line, col = parser.position_to_line_col(e.span.start)
        diag = Diagnostic("error", e.msg, SourceLoc(self.input_name, line, col))
        for ref_span, ref_msg in getattr(e, "refs", ()):
            ref_line, ref_col = parser.position_to_line_col(ref_span.start)
            diag.notes.append(
                Diagnostic(
                    "note", ref_msg or "see here", SourceLoc(self.input_name, ref_line, ref_col)
                )
            )
        return diag

    def _verify(self, module: ModuleOp, engine: DiagnosticEngine, after: str) -> None:
        """Verify unless --disable-verify; a failure is reported at the failing op."""
        if self.args.disable_verify:
            return
        start = time.perf_counter()
        try:
            failure = find_verification_failure(module)
        except Exception as e:
            raise InternalError(f"while verifying the IR after {after}", e) from e
        self._timings.append(("verifier", time.perf_counter() - start))
        if failure is not None:
            op, exc = failure
            engine.emit(diagnostic_from_exception(exc, op))
            raise _ChunkFailed

    def apply_passes_with_diagnostics(self, module: ModuleOp, engine: DiagnosticEngine) -> None:
        """Run every pass; verify after each; dump IR if asked. Raises _ChunkFailed.

        With --fusion-report/--dispatch-report/--assert-fusion-clean, the graph reports
        compare the module before the pipeline with the module just before its first
        lowering pass (or after the whole pipeline if it does not lower).
        """
        before = module.clone() if self._graph_reports_wanted() else None
        for pass_ in self.passes:
            if before is not None and pass_.name in LOWERING_BOUNDARY:
                self._graph_reports(before, module, engine)
                before = None
            verbose = self._verbose()
            ops_before = _count_ops(module) if verbose else 0
            start = time.perf_counter()
            try:
                pass_.apply(self.ctx, module)
            except DiagnosticException as e:
                engine.emit(diagnostic_from_exception(e))
                self._dump_ir(module, pass_.name, failed=True)
                raise _ChunkFailed from None
            except ShrinkException:
                raise
            except Exception as e:
                raise InternalError(f"while running pass '{pass_.name}'", e) from e
            self._timings.append((pass_.name, time.perf_counter() - start))
            if verbose:
                sys.stderr.write(
                    f"[rlx] pass {pass_.name}: {ops_before} -> {_count_ops(module)} ops, "
                    f"{(time.perf_counter() - start) * 1e3:.1f} ms\n"
                )
            try:
                self._verify(module, engine, after=f"pass '{pass_.name}'")
            except _ChunkFailed:
                self._dump_ir(module, pass_.name, failed=True)
                raise
            self._dump_ir(module, pass_.name, failed=False)
        if before is not None:
            self._graph_reports(before, module, engine)

    def _verbose(self) -> bool:
        env = os.environ.get("RLX_VERBOSE", "").strip().lower()
        return bool(getattr(self.args, "verbose", False)) or env not in (
            "",
            "0",
            "false",
            "no",
            "off",
        )

    def _graph_reports_wanted(self) -> bool:
        args = self.args
        no_fusion = not self._has_fusion_pass()
        return bool(
            getattr(args, "dispatch_report", False)
            or (no_fusion and getattr(args, "fusion_report", False))
            or (no_fusion and getattr(args, "assert_fusion_clean", False))
        )

    def _graph_reports(self, before: ModuleOp, after: ModuleOp, engine: DiagnosticEngine) -> None:
        """Print the requested graph reports of `before` -> `after` to stderr.

        The fusion report and check come from the `fusion` passes themselves when the
        pipeline has one (see `_with_report_options`); without one they are computed
        here. An unclean --assert-fusion-clean raises _ChunkFailed.
        """
        try:
            if not self._has_fusion_pass() and (
                self.args.fusion_report or self.args.assert_fusion_clean
            ):
                from rlx.transforms.fusion_report import analyze_fusion

                report = analyze_fusion(before, after)
                if self.args.fusion_report:
                    sys.stderr.write(report.format() + "\n")
                if self.args.assert_fusion_clean and report.missed:
                    engine.emit(diagnostic_from_exception(report.contract_error()))
                    raise _ChunkFailed
            if self.args.dispatch_report:
                sys.stderr.write(self._dispatch_report(before, after))
            sys.stderr.flush()
        except (_ChunkFailed, ShrinkException):
            raise
        except DiagnosticException as e:
            engine.emit(diagnostic_from_exception(e))
            raise _ChunkFailed from None
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

        return report.format() + gemm_lines(after)

    # ----------------------------------------------------------------------------------
    # Output
    # ----------------------------------------------------------------------------------

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The output text: MLIR (through the -t target), LLVM IR, or host assembly."""
        emit = self.args.emit
        if emit == "mlir":
            return super().output_resulting_program(prog)
        offender = next(
            (op for op in prog.walk() if op is not prog and not op.name.startswith("llvm.")), None
        )
        if offender is not None:
            raise DiagnosticException(
                f"--emit={emit} needs the llvm dialect: add --lower-to-llvm "
                f"(the module still has '{offender.name}')"
            )
        from rlx.runtime.jit import JitModule, to_llvm_ir

        ir = to_llvm_ir(prog)
        text = ir if emit == "llvm-ir" else JitModule(ir, opt_level=3).asm
        return text if text.endswith("\n") else text + "\n"

    def _dump_ir(self, module: ModuleOp, pass_name: str, failed: bool) -> None:
        """--print-ir-after-all: header line and the module, to stderr (as mlir-opt)."""
        if not (self.args.print_ir_after_all or self.args.print_between_passes):
            return
        from xdsl.printer import Printer

        header = IR_DUMP_FAILED_HEADER if failed else IR_DUMP_HEADER
        sys.stderr.write(header.format(name=pass_name) + "\n")
        printer = Printer(
            stream=sys.stderr,
            print_generic_format=self.args.print_op_generic or failed,
            print_debuginfo=self.args.print_debuginfo,
        )
        try:
            printer.print_op(module)
        except Exception as e:  # invalid IR may not print; the dump is best effort
            sys.stderr.write(f"<cannot print IR: {type(e).__name__}: {e}>")
        sys.stderr.write("\n\n")
        sys.stderr.flush()

    def _print_timing_report(self) -> None:
        """--time-passes: an mlir-opt-like wall-time report on stderr."""
        totals: dict[str, float] = {}
        for name, seconds in self._timings:
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
        sys.stderr.write("\n".join(lines) + "\n")

    # ----------------------------------------------------------------------------------
    # --list-passes
    # ----------------------------------------------------------------------------------

    def list_passes(self, stream: IO[str]) -> None:
        """Every registered pass, sorted: name, [rlx] or [xdsl], docstring summary."""
        names = sorted(self.available_passes)
        width = max((len(n) for n in names), default=0)
        for name in names:
            origin = "[rlx]" if name in self.rlx_pass_names else "[xdsl]"
            try:
                summary = first_doc_line(self.available_passes[name]())
            except Exception as e:  # a broken pass must not break the listing
                summary = f"<failed to load: {type(e).__name__}: {e}>"
            stream.write(f"{name:<{width}}  {origin:<6}  {summary}".rstrip() + "\n")


def find_verification_failure(
    op: Operation,
) -> tuple[Operation, DiagnosticException] | None:
    """Verify `op` and everything nested (xDSL verifiers, dominance, shape bounds); return
    the first failing op and its error (see `rlx.ir_checks.find_failure`)."""
    from rlx.ir_checks import find_failure

    return find_failure(op)


def _count_ops(module: ModuleOp) -> int:
    """Ops in the module below its top level (what --verbose reports per pass)."""
    return sum(1 for _ in module.walk()) - 1
