"""`rlx-bake`: bake weights into a graph and write one `.rlx` artifact.

    rlx-bake MODEL.mlir --weights FILE(.safetensors|.npz|.gguf) [--opt PROFILE] [-o OUT.rlx]
             [--dim-binding NAME=N,...] [--entry main] [--target-cpu NAME | --no-code]
             [fine flags]
    rlx-bake inspect MODEL.rlx [--no-verify]
    rlx-bake --list-profiles

Errors print one line `rlx-bake: error: ...` and exit with 1 (RLX_DEBUG=1 for a traceback).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlx.tools.cli import Parser, UsageError, run_main

PROG = "rlx-bake"


def _parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        description="Bake weights into an RLX graph and write one .rlx artifact "
        "(`rlx-bake inspect FILE.rlx` prints an artifact's header and weight table).",
    )
    p.add_argument("model", nargs="?", help="the .mlir graph")
    p.add_argument("--weights", "-w", metavar="FILE", help=".safetensors, .npz or .gguf")
    p.add_argument("--opt", default="exact", metavar="PROFILE", help="merge | fold | exact | size")
    p.add_argument("-o", "--output", metavar="OUT.rlx", help="default: MODEL with suffix .rlx")
    p.add_argument("--dim-binding", metavar="NAME=N,...", help="bind named dynamic dims first")
    p.add_argument("--entry", default="main", help="entry function (default: main)")
    p.add_argument("--list-profiles", action="store_true", help="print the profiles and exit")
    f = p.add_argument_group("fine flags (override single parts of the profile)")
    f.add_argument("--no-skip-zero", dest="skip_zero", action="store_false", default=None)
    f.add_argument("--no-ternary", dest="ternary", action="store_false", default=None)
    f.add_argument("--quant", action=argparse.BooleanOptionalAction, default=None,
                   help="Q8_0-pack the remaining matmul weights (lossy)")  # fmt: skip
    f.add_argument("--cleanup", action=argparse.BooleanOptionalAction, default=None,
                   help="simplify + DCE + constant folding")  # fmt: skip
    f.add_argument("--no-dedupe", dest="dedupe", action="store_false", default=None)
    f.add_argument("--keep-folded-bindings", action=argparse.BooleanOptionalAction, default=None)
    f.add_argument("--memory", metavar="MODE", help="compact | duplex | runtime")
    c = p.add_argument_group("native code (stored beside the IR; see docs/artifact.md)")
    c.add_argument("--target-cpu", action="append", metavar="NAME",
                   help="compile for this CPU: host (default) or x86-64, x86-64-v2/v3/v4; "
                        "repeat for several")  # fmt: skip
    c.add_argument("--no-code", action="store_true", help="store the IR only (no object code)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")  # fmt: skip
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    return p


def overrides_from_args(a: argparse.Namespace) -> dict[str, Any]:
    """BakeOptions overrides from the fine flags (unset flags keep the profile's value)."""
    kw: dict[str, Any] = {}
    for name in ("skip_zero", "ternary", "quant", "dedupe", "keep_folded_bindings", "memory"):
        if getattr(a, name) is not None:
            kw[name] = getattr(a, name)
    if a.cleanup is not None:
        kw.update(simplify=a.cleanup, dce=a.cleanup, constant_folding=a.cleanup)
    return kw


class _Bar:
    """A one-line progress bar on stderr."""

    def __init__(self, on: bool) -> None:
        self.on, self.t0 = on, time.perf_counter()

    def __call__(self, stage: str, i: int, n: int) -> None:
        if self.on:
            done = int(20 * (i + 1) / n)
            sys.stderr.write(f"\r[{'#' * done}{'.' * (20 - done)}] {i + 1}/{n} {stage:<14}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.on:
            sys.stderr.write(f"\r{' ' * 50}\r")
            sys.stderr.flush()


def list_profiles() -> str:
    from rlx.bake.profiles import BakeProfile

    rows = [
        f"{p.value:<6} {p.intent}" + (f"  [aliases: {', '.join(p.aliases)}]" if p.aliases else "")
        + ("  (default)" if p is BakeProfile.EXACT else "")
        for p in BakeProfile
    ]  # fmt: skip
    return "\n".join(rows)


def _inspect(argv: Sequence[str]) -> int:
    p = Parser(prog=f"{PROG} inspect", description="Print an artifact's header and weights.")
    p.add_argument("file")
    p.add_argument("--no-verify", action="store_true", help="skip the weight checksums")
    a = p.parse_args(argv)
    from rlx.bake.loader import inspect

    print(inspect(a.file, verify=not a.no_verify))
    return 0


def run(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "inspect":
        return _inspect(argv[1:])
    a = _parser().parse_args(argv)
    if a.list_profiles:
        print(list_profiles())
        return 0
    if a.model is None:
        raise UsageError("missing MODEL.mlir (or `inspect FILE.rlx`, or --list-profiles)")
    from rlx.bake.bake import bake_with_report, resolve_options
    from rlx.transforms.bind_dims import parse_binding
    from rlx.transforms.bind_params import LossyBindingWarning

    opts = resolve_options(a.opt, overrides_from_args(a))
    if a.weights is None and opts.memory != "runtime":
        raise UsageError("--weights FILE is required (except with --memory runtime)")
    if not Path(a.model).is_file():
        raise ValueError(f"no such file: {a.model}")
    dims = parse_binding(a.dim_binding) if a.dim_binding else None
    out = Path(a.output) if a.output else Path(a.model).with_suffix(".rlx")
    show = sys.stderr.isatty() if a.progress is None else a.progress
    bar = _Bar(show and not a.quiet)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LossyBindingWarning)
            path, report = bake_with_report(
                Path(a.model), a.weights, opts, out, dim_binding=dims, entry=a.entry,
                progress=bar, targets=() if a.no_code else (a.target_cpu or ["host"]),
            )  # fmt: skip
    finally:
        bar.close()
    for w in caught:  # as `rlx-bake: warning: ...` lines, not Python's file:line form
        if issubclass(w.category, LossyBindingWarning):
            print(f"{PROG}: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if not a.quiet:
        print(f"wrote {path}")
        for line in report.lines():
            print(f"  {line}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: returns the exit code (0 ok, 1 error)."""
    return run_main(PROG, run, argv)


if __name__ == "__main__":
    sys.exit(main())
