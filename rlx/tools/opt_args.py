"""The command-line flags of `rlx-opt` (used by `RlxOptMain.register_all_arguments`).

rlx-opt defines its flags itself rather than calling `xDSLOptMain.register_all_arguments`:
the names and `args` destinations are xdsl-opt's (so `xDSLOptMain`'s methods that read
`self.args` work unchanged) but several meanings differ (`--verify-diagnostics` checks
MLIR-style `expected-*` directives instead of printing and exiting 0; `-p`'s help would
list ~150 pass names on one line). mlir-opt's spellings sit beside them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

from rlx.tools.cli import int_at_least

EMIT_CHOICES = ("mlir", "llvm-ir", "asm")
"""`--emit` values: MLIR text (default), the LLVM module, host assembly (O3)."""
EMIT_TARGETS = {"llvm-ir": "llvm", "asm": "asm"}
"""`--emit=X` is `-t EMIT_TARGETS[X]`."""
PLUGIN_FLAGS = ("--load-pass-plugin", "--load-dialect-plugin")

USAGE = "rlx-opt [options] [input-file | -] [-o output-file]"
PASS_FLAGS_HELP = (
    "--PASS runs a pass with defaults, --PASS='key=value ...' sets its options, "
    "--PASS=VALUE sets its main option; flags run in command-line order and cannot be "
    "mixed with -p; options of each pass: --list-passes"
)


def _flag(parser: argparse.ArgumentParser, *names: str, help: str, **kw: object) -> None:
    """A `store_true` flag unless `kw` says otherwise."""
    kw.setdefault("action", "store_true")
    parser.add_argument(*names, help=help, **kw)  # type: ignore[arg-type]


def add_driver_arguments(
    parser: argparse.ArgumentParser, targets: Iterable[str], version_format: str
) -> None:
    """Every non-pass flag of rlx-opt, on `parser`."""
    from xdsl.xdsl_opt_main import VersionAction

    add = parser.add_argument
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
        "--pass-pipeline",
        default="",
        metavar="PIPELINE",
        help="MLIR textual pipeline, e.g. 'builtin.module(fusion{swiglu=false},dce)'; "
        "func.func(...) nesting is accepted (rlx passes run on the whole module)",
    )
    add(
        "-t",
        "--target",
        default="mlir",
        help="output format: " + ", ".join(sorted(targets)) + " (default: mlir)",
    )
    add("-f", "--frontend", help="input format (only 'mlir')")
    add(
        "--emit",
        choices=EMIT_CHOICES,
        default="mlir",
        help="what to print: mlir (default), llvm-ir (the LLVM module, = -t llvm) or asm "
        "(host assembly, O3 for the host CPU, = -t asm); llvm-ir and asm need the llvm "
        "dialect (add --lower-to-llvm)",
    )
    for name in PLUGIN_FLAGS:
        what = {"pass": "passes", "dialect": "dialects"}[name.split("-")[-2]]
        add(
            name,
            action="append",
            default=[],
            metavar="MODULE",
            help=f"load the {what} of an xDSL Universe from MODULE (a dotted module name "
            "or a .py path defining a Universe); repeatable",
        )
    _flag(
        parser, "--fusion-report", help="print the fusion report (fused ops, near misses) to stderr"
    )
    _flag(
        parser,
        "--dispatch-report",
        help="print the kernel dispatch report (how each op kind runs) to stderr",
    )
    _flag(
        parser,
        "--assert-fusion-clean",
        help="fail if fusion leaves a near miss (fusion{assert-clean=true})",
    )
    _flag(
        parser,
        "--check-equivalence",
        help="translation validation: run the reference interpreter on seeded random inputs "
        "before and after every pass; fail at the first pass that changes the results "
        "beyond its tolerance",
    )
    add(
        "--check-equivalence-seed",
        type=int_at_least(0, "a non-negative integer"),
        default=0,
        metavar="N",
        help="seed of --check-equivalence's inputs",
    )
    _flag(
        parser,
        "--split-input-file",
        help="process each '// -----'-separated chunk of the input on its own",
    )
    _flag(
        parser,
        "--verify-diagnostics",
        help="check the diagnostics against the input's 'expected-error/warning/note/remark' "
        "directives (MLIR-style); exit 0 iff they match",
    )
    _flag(
        parser,
        "--parsing-diagnostics",
        help="print parse errors to stdout and exit 0 (xdsl-opt compatibility)",
    )
    _flag(parser, "--print-op-generic", help="print ops in generic form")
    _flag(parser, "--print-debuginfo", help="print op locations (loc(...))")
    _flag(parser, "--print-no-properties", help="print properties as attributes")
    _flag(
        parser,
        "--print-ir-after-all",
        "--mlir-print-ir-after-all",
        help="print the IR to stderr after each pass, after a header line "
        "'// -----// IR Dump After <pass> //----- //'",
    )
    _flag(parser, "--mlir-print-ir-before-all", help="print the IR to stderr before each pass")
    _flag(
        parser,
        "--mlir-print-ir-after-change",
        help="print the IR after a pass only if the pass changed it",
    )
    for when in ("before", "after"):
        add(
            f"--mlir-print-ir-{when}",
            action="append",
            default=[],
            metavar="PASS",
            help=f"print the IR to stderr {when} the named pass(es) (comma-separated, repeatable)",
        )
    _flag(
        parser,
        "--print-between-passes",
        help="same as --print-ir-after-all (xdsl-opt compatibility)",
    )
    _flag(
        parser,
        "--verbose",
        help="log each pass with op counts before/after and its time to stderr (also with RLX_VERBOSE=1)",
    )
    _flag(
        parser,
        "--time-passes",
        "--mlir-timing",
        help="print a wall-time report (parse, passes, verifier, output) to stderr",
    )
    _flag(
        parser, "--dump-pass-pipeline", help="print the pass pipeline (MLIR textual form) to stderr"
    )
    _flag(parser, "--show-dialects", help="list the registered dialects and exit")
    _flag(
        parser,
        "--view-op-graph",
        help="print each function as a Graphviz DOT graph (ops as nodes, values as edges) "
        "instead of the IR",
    )
    _flag(
        parser,
        "--list-passes",
        help="list every registered pass (name, [rlx]/[xdsl]/[plugin], summary, options) and exit",
    )
    _flag(parser, "--disable-verify", help="do not verify the IR after parsing and after each pass")
    _flag(parser, "--allow-unregistered-dialect", help="accept ops of unregistered dialects")
    _flag(parser, "--no-implicit-module", help="require a top-level builtin.module in the input")
    _flag(parser, "--syntax-highlight", help="colour the printed IR")
    _flag(parser, "--shrink", help="shrinkray interestingness test mode")
    add(
        "-v",
        "--version",
        action=VersionAction,
        version_format=version_format,
        help="print the rlx and xDSL versions and exit",
    )


def add_pass_flags(
    parser: argparse.ArgumentParser,
    summaries: dict[str, str],
    aliases: dict[str, str],
) -> list[str]:
    """Declare one `--NAME[=OPTIONS]` flag per pass; returns the usable names.

    The flags are taken out of argv by `split_pass_flags` before argparse runs, so argparse
    only reserves their names (a pass whose name collides with a driver flag gets no flag).
    `--help` lists them in the epilog, one line per pass: `--NAME  summary`.
    """
    names: list[str] = []
    lines: list[str] = []
    for name in sorted(summaries):
        try:
            parser.add_argument(
                f"--{name}", action="store_true", dest=f"_pass_{name}", help=argparse.SUPPRESS
            )
        except argparse.ArgumentError:
            continue
        names.append(name)
        if not name.startswith("test-"):
            lines.append((f"--{name}", summaries[name]))
    for alias, target in sorted(aliases.items()):
        if target in summaries and alias not in summaries:
            parser.add_argument(f"--{alias}", action="store_true", help=argparse.SUPPRESS)
            names.append(alias)
            lines.append((f"--{alias}", f"alias of --{target}"))
    width = max((len(flag) for flag, _ in lines), default=0)
    parser.epilog = (
        "pass flags ("
        + PASS_FLAGS_HELP
        + "):\n"
        + "\n".join(f"  {flag:<{width}}  {summary}".rstrip() for flag, summary in sorted(lines))
    )
    return names


def prescan_plugins(argv: Sequence[str]) -> dict[str, list[str]]:
    """`--load-{pass,dialect}-plugin` values, read before argparse runs.

    Plugins must be loaded while passes and dialects are registered, which xDSLOptMain
    does before it parses the command line.
    """
    found: dict[str, list[str]] = {flag: [] for flag in PLUGIN_FLAGS}
    args = list(argv)
    for index, arg in enumerate(args):
        if arg == "--":
            break
        flag, eq, value = arg.partition("=")
        if flag in found:
            if eq:
                found[flag].append(value)
            elif index + 1 < len(args):
                found[flag].append(args[index + 1])
    return found
