"""`RlxOptMain`: the implementation of `rlx-opt` (imported lazily by `rlx.tools.rlx_opt`).

An `xDSLOptMain` extended through its override points:

* `register_all_dialects`: rlx's dialects (rlx ops resolved one at a time through a
  `LazyOpContext`, for start-up time) plus plugin dialects;
* `register_all_passes`: upstream xDSL passes, rlx transforms and lowerings (rlx names
  win), plugin passes (`xdsl.universe` entry points, `--load-pass-plugin`);
* `register_all_targets`: only the targets that work on rlx input (`rlx.tools.targets`);
* `register_all_arguments`: rlx-opt's flags (`rlx.tools.opt_args`) and one `--PASS` flag
  per pass; `setup_pipeline`: `-p`, `--pass-pipeline` or the pass flags;
* `run`: MLIR-style located diagnostics and `--verify-diagnostics` (xDSL prints the
  exception and exits 0), instrumented passes (`rlx.tools.pass_runner`).

xDSL 0.75 blocks two things, handled without copying `__init__`: it builds its own
`argparse.ArgumentParser` (so `register_all_arguments` sets `prog`/`usage`/`allow_abbrev`
on it, and `rlx_opt.main` maps argparse's exit code 2 to 1) and parses `args` itself (so
the pass flags, which argparse cannot express, are taken out of the very argument list
handed to `xDSLOptMain.__init__`, in `register_all_arguments`).

Imports inside methods are for start-up time (a small run imports only what it uses,
tests/unit/test_startup.py), not for import cycles.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ShrinkException
from xdsl.xdsl_opt_main import xDSLOptMain

from rlx import __version__ as rlx_version
from rlx.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    InternalError,
    SourceManager,
    diagnostic_from_exception,
    parse_expectations,
    render,
    verify_expectations,
)
from rlx.parser import InputChunk, split_input
from rlx.tools import opt_args
from rlx.tools.lazy_context import LazyOpContext
from rlx.tools.opt_input import parse_chunk
from rlx.tools.pass_flags import PassFlag, PassOptionError, build_pipeline, split_pass_flags
from rlx.tools.pass_runner import (
    ChunkFailed,
    PipelineRunner,
    find_verification_failure,
    make_runner,
)

__all__ = ["RlxOptMain", "find_verification_failure"]
STDIN_NAME = "<stdin>"

if TYPE_CHECKING:
    from rlx.plugins import LoadedPlugins


def _check_print_ir_names(args: Any, registry: dict[str, Any]) -> None:
    """`--mlir-print-ir-before/after=NAMES` name registered passes (as in mlir-opt, where
    an unknown name is an error): a misspelt name would otherwise print nothing, exit 0."""
    from rlx.tools.pass_flags import unknown_pass_error

    for flag in ("mlir_print_ir_before", "mlir_print_ir_after"):
        for value in getattr(args, flag, None) or ():
            for name in (n.strip() for n in value.split(",")):
                if name and name not in registry:
                    e = unknown_pass_error(name, registry)
                    raise PassOptionError(f"--{flag.replace('_', '-')}: {e}")


class RlxOptMain(xDSLOptMain):
    """The `rlx-opt` driver: parse, run passes, print; MLIR-style diagnostics."""

    version_format: ClassVar[str] = f"rlx-opt {rlx_version} (xDSL {{xdsl_version}})"

    rlx_pass_names: set[str]
    """Names registered by rlx (transforms and lowering), for `--list-passes`."""
    plugin_names: dict[str, str]
    """Pass name -> plugin that provides it."""
    pass_flags: list[PassFlag]
    """`--PASS-NAME[=VALUE]` flags from the command line, in order."""
    passes: list[ModulePass]
    """The pipeline to run (from `-p`, `--pass-pipeline` or the pass flags)."""

    def __init__(
        self,
        description: str = "RLX modular optimizer driver (mlir-opt style)",
        args: Sequence[str] | None = None,
    ) -> None:
        self._argv = list(sys.argv[1:] if args is None else args)
        self.rlx_pass_names = set()
        self.plugin_names = {}
        self.pass_flags = []
        self._plugin_specs = opt_args.prescan_plugins(self._argv)
        self._plugins: LoadedPlugins | None = None
        super().__init__(description, self._argv)

    # -- registration ------------------------------------------------------------------

    def _plugins_of(self, kind: str, registered: Iterable[str]) -> dict[str, Callable[[], Any]]:
        """The plugins' passes or dialects (loaded once); exits on a load error or clash."""
        from rlx.plugins import PluginError, load_plugins

        try:
            if self._plugins is None:
                self._plugins = load_plugins(*self._plugin_specs.values())
            return self._plugins.new_items(kind, registered)
        except PluginError as e:
            sys.stderr.write(f"rlx-opt: error: {e}\n")
            raise SystemExit(1) from None

    def register_all_dialects(self) -> None:
        """rlx's dialects (ops resolved lazily), then the plugins' (registered on first use).

        xDSLOptMain created a plain `Context`; it is replaced by a `LazyOpContext`.
        """
        from rlx.dialects import get_all_dialects
        from rlx.dialects.rlx import op_loaders

        self.ctx = LazyOpContext()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)
        self.ctx.register_lazy_ops("rlx", op_loaders())
        for name, factory in self._plugins_of("dialect", self.ctx.registered_dialect_names).items():
            self.ctx.add_on_demand_dialect(name, factory)

    def register_all_frontends(self) -> None:
        """Only MLIR text is read (by `LocatingParser`)."""
        from xdsl.frontend import get_all_frontends

        self.available_frontends["mlir"] = get_all_frontends()["mlir"]

    def register_all_passes(self) -> None:
        """Upstream xDSL passes, rlx transforms and lowerings (overriding), plugins."""
        from xdsl.transforms import get_all_passes as upstream_passes

        from rlx.lowering import get_all_lowering_passes
        from rlx.transforms import get_all_passes

        for name, factory in upstream_passes().items():
            self.register_pass(name, factory)
        for registry in (get_all_passes(), get_all_lowering_passes()):
            for name, factory in registry.items():
                self.register_pass(name, factory)
                self.rlx_pass_names.add(name)
        for name, factory in self._plugins_of("pass", self.available_passes).items():
            self.register_pass(name, factory)
            self.plugin_names[name] = self._plugins.origin[f"pass:{name}"]

    def register_all_targets(self) -> None:
        """Only targets that work on rlx input: mlir, llvm (LLVM IR), asm (host)."""
        from rlx.tools.targets import rlx_targets

        self.available_targets.update(rlx_targets())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """rlx-opt's flags and pass flags; the pass flags are taken out of argv here."""
        arg_parser.prog = "rlx-opt"
        arg_parser.usage = opt_args.USAGE
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter  # epilog as is
        arg_parser.allow_abbrev = False
        self._arg_parser = arg_parser
        opt_args.add_driver_arguments(arg_parser, self.available_targets, self.version_format)
        from rlx.tools.pass_index import pass_summaries
        from rlx.transforms import FLAG_ALIASES

        help_wanted = any(a in ("-h", "--help") for a in self._argv)
        summaries = pass_summaries(self.available_passes, imported=help_wanted)
        names = opt_args.add_pass_flags(arg_parser, summaries, FLAG_ALIASES)
        # xDSLOptMain.__init__ parses this same list object next.
        self._argv[:], self.pass_flags = split_pass_flags(self._argv, names)

    # -- pipeline ----------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        """Build `self.passes` from `-p`, `--pass-pipeline` or the pass flags (one of them)."""
        args, error = self.args, self._arg_parser.error
        if args.emit != "mlir":
            if args.target != "mlir":
                error(f"--emit={args.emit} cannot be combined with -t/--target {args.target}")
            args.target = opt_args.EMIT_TARGETS[args.emit]
        from rlx.transforms import FLAG_ALIASES

        try:
            self.passes = build_pipeline(
                args.passes,
                args.pass_pipeline,
                self.pass_flags,
                self.available_passes,
                FLAG_ALIASES,
            )
            _check_print_ir_names(args, self.available_passes)
        except PassOptionError as e:
            sys.stderr.write(f"rlx-opt: error: {e}\n")
            raise SystemExit(1) from None
        self.passes = [self._with_report_options(p) for p in self.passes]
        self.pipeline = PassPipeline(tuple(self.passes))

    def _with_report_options(self, pass_: ModulePass) -> ModulePass:
        """`fusion` with `report`/`assert_clean` set by --fusion-report/--assert-fusion-clean."""
        if pass_.name != "fusion" or not dataclasses.is_dataclass(pass_):
            return pass_
        changes = {
            field: True
            for field, flag in (
                ("report", "fusion_report"),
                ("assert_clean", "assert_fusion_clean"),
            )
            if getattr(self.args, flag) and hasattr(pass_, field)
        }
        return dataclasses.replace(pass_, **changes) if changes else pass_

    def make_runner(self) -> PipelineRunner:
        """The pipeline with the instrumentations the flags ask for."""
        return make_runner(self.ctx, self.args, self.passes)

    def apply_passes(self, prog: ModuleOp) -> None:
        """Run the pipeline on `prog` (xDSL API); raises `DiagnosticException` on errors."""
        engine = DiagnosticEngine()
        try:
            with engine.activate():
                self.make_runner().run(prog, engine)
        except ChunkFailed:
            errors = [d.message for d in engine.diagnostics if d.severity == "error"]
            raise DiagnosticException("; ".join(errors)) from None
        finally:
            for diag in engine.diagnostics:
                if diag.severity != "error":
                    sys.stderr.write(render(diag))

    # -- driver ------------------------------------------------------------------------

    def run(self) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Process the input; returns the exit code (0 ok, 1 errors in the input)."""
        from rlx.tools import opt_listings

        if self.args.list_passes or self.args.show_dialects:
            opt_listings.list_registry(self, sys.stdout)
            return 0
        if self.args.dump_pass_pipeline:
            sys.stderr.write(opt_listings.pipeline_text(self.passes) + "\n")
        what = "read input"
        try:
            name, text = self._read_input()
            what = "open output"
            output = self.prepare_output()
        except OSError as e:
            detail = e.strerror or str(e)
            print(f"rlx-opt: error: cannot {what} file '{e.filename}': {detail}", file=sys.stderr)
            return 1
        except UnicodeDecodeError as e:
            print(f"rlx-opt: error: input is not valid UTF-8: {e}", file=sys.stderr)
            return 1
        self.sources = SourceManager()
        self.sources.add(name, text)
        expected_all, malformed = [], []
        if self.args.verify_diagnostics:
            expected_all, malformed = parse_expectations(text, name)
        failed = self._report(malformed)
        self.runner = self.make_runner()
        try:
            for index, chunk in enumerate(split_input(text, self.args.split_input_file)):
                if index > 0:
                    output.write("// -----\n")
                engine = DiagnosticEngine()
                with engine.activate():
                    result = self._process_chunk(chunk, engine)
                if result is not None:
                    output.write(result)
                output.flush()
                if self.args.verify_diagnostics:
                    lines = range(chunk.first_line, chunk.last_line + 1)
                    expected = [e for e in expected_all if e.directive.line in lines]
                    failed |= self._report(verify_expectations(engine.diagnostics, expected, name))
                else:
                    self._report(engine.diagnostics)
                    failed |= engine.has_errors
        except ShrinkException:
            print("Success, can shrink")
            return 0
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.time_passes:
            sys.stderr.write(self.runner.timing_report())
        if self.args.shrink:
            print("Failure, can't shrink")
            return 1
        return 1 if failed else 0

    def _report(self, diagnostics: Sequence[Diagnostic]) -> bool:
        for diag in diagnostics:
            sys.stderr.write(render(diag, self.sources, self.input_name))
        return bool(diagnostics)

    def _read_input(self) -> tuple[str, str]:
        """(buffer name, text) of the input file, or of stdin for none or `-`."""
        self.input_name = self.get_input_name()
        if self.input_name == STDIN_NAME:
            return STDIN_NAME, sys.stdin.buffer.read().decode("utf-8")
        with open(self.input_name, "rb") as f:
            return self.input_name, f.read().decode("utf-8")

    def get_input_name(self) -> str:
        """The file name used in locations (`<stdin>` for standard input)."""
        path = self.args.input_file
        return STDIN_NAME if path is None or path == "-" else path

    def _process_chunk(self, chunk: InputChunk, engine: DiagnosticEngine) -> str | None:
        """Parse, verify, run passes, print. None when the chunk failed (see engine)."""
        runner = self.runner
        try:
            start = time.perf_counter()
            module = parse_chunk(self.ctx, chunk, self.input_name, self.args, engine, self.sources)
            runner.timings.append(("parse", time.perf_counter() - start))
            if module is None:
                return None
            runner.verify(module, engine, after="parsing")
            runner.run(module, engine)
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
            runner.timings.append(("output", time.perf_counter() - start))
            return text
        except ChunkFailed:
            return None

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The output text through the -t target, or the DOT graph (--view-op-graph)."""
        if self.args.view_op_graph:
            from rlx.tools.op_graph import module_to_dot

            return module_to_dot(prog)
        return super().output_resulting_program(prog)
