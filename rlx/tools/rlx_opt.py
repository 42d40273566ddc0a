"""`rlx-opt`: the RLX modular optimizer driver, in the style of `mlir-opt` / `xdsl-opt`.

    rlx-opt [input.mlir | -] [-p 'a,b{k=v}' | --PASS[=OPTIONS|VALUE] ...] [-o out.mlir]

This module is the console-script entry point and is kept import-light: `--version`
answers without importing xDSL's IR machinery, and `RlxOptMain` (in
`rlx.tools.opt_main`) is imported on first use.

Exit codes: 0 success; 1 errors in the input or on the command line (parse, verifier
and pass errors, unmet `--verify-diagnostics` expectations, bad flags: argparse's own exit
code 2 is mapped to 1); 2 internal error (an unexpected exception; set `RLX_DEBUG=1` to see
its traceback).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlx.env import env_flag

if TYPE_CHECKING:
    from rlx.tools.opt_main import RlxOptMain

__all__ = ["RlxOptMain", "main", "version_string"]

BUG_REPORT_HINT = (
    "This is a bug in rlx-opt or in one of its passes; please report it together with "
    "the input and the command line."
)


def __getattr__(name: str) -> Any:
    """Lazy `RlxOptMain` (PEP 562), so importing this module stays fast."""
    if name == "RlxOptMain":
        from rlx.tools.opt_main import RlxOptMain

        return RlxOptMain
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _xdsl_version() -> str:
    """xDSL's version, read from its dist-info directory name (fast) if possible."""
    import importlib.util

    spec = importlib.util.find_spec("xdsl")
    if spec is not None and spec.origin is not None:
        site = os.path.dirname(os.path.dirname(spec.origin))
        try:
            for entry in os.listdir(site):
                if entry.startswith("xdsl-") and entry.endswith(".dist-info"):
                    return entry[len("xdsl-") : -len(".dist-info")]
        except OSError:
            pass
    from importlib.metadata import version

    return version("xdsl")


def version_string() -> str:
    """`rlx-opt <rlx version> (xDSL <xdsl version>)`."""
    from rlx import __version__

    return f"rlx-opt {__version__} (xDSL {_xdsl_version()})"


def _wants_version(args: Sequence[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg in ("-h", "--help"):
            return False
        if arg in ("-v", "--version"):
            return True
    return False


def _debug_enabled() -> bool:
    return env_flag("RLX_DEBUG")


def _report_internal_error(exc: BaseException) -> int:
    """Print `rlx-opt: internal error: ...` (and the traceback under RLX_DEBUG=1)."""
    import traceback

    from rlx.diagnostics import InternalError

    cause = exc.cause if isinstance(exc, InternalError) else exc
    context = f" ({exc.context})" if isinstance(exc, InternalError) else ""
    if _debug_enabled():
        traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)
    message = str(cause).strip().splitlines()
    first = message[0] if message else ""
    sys.stderr.write(
        f"rlx-opt: internal error{context}: {type(cause).__name__}"
        + (f": {first}" if first else "")
        + "\n"
    )
    sys.stderr.write(f"rlx-opt: {BUG_REPORT_HINT}\n")
    if not _debug_enabled():
        sys.stderr.write("rlx-opt: set RLX_DEBUG=1 to see the Python traceback.\n")
    return 2


def _pause_gc() -> bool:
    """Stop the cyclic GC for start-up; returns whether it was enabled.

    Start-up creates ~50k long-lived GC-tracked objects (xDSL's and rlx's classes,
    dataclasses, IRDL definitions); the collector would walk them again and again
    (about 7 % of a small run's instructions, more of its CPU time).
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def _resume_gc(was_enabled: bool) -> None:
    """Freeze what start-up created (later collections skip it), then restore the GC."""
    import gc

    gc.freeze()
    if was_enabled:
        gc.enable()


def main(argv: Sequence[str] | None = None, *, tool_class: type[RlxOptMain] | None = None) -> int:
    """Run rlx-opt on `argv` (default: `sys.argv[1:]`); returns the exit code.

    `tool_class` substitutes a subclass of `RlxOptMain` (e.g. one registering extra
    passes, as the unit tests do) while keeping main's error handling.

    As the process entry point (`argv` None) the cyclic GC is paused while the driver is
    imported and set up, and the objects created so far are frozen (`gc.freeze`); an
    in-process call with an explicit `argv` (tests, embedding) leaves the GC alone.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if _wants_version(args):
        print(version_string())
        return 0
    try:
        gc_was_enabled = _pause_gc() if argv is None else None
        try:
            if tool_class is None:
                from rlx.tools.opt_main import RlxOptMain as tool_class
            tool = tool_class(args=args)
        finally:
            if gc_was_enabled is not None:
                _resume_gc(gc_was_enabled)
        return tool.run()
    except SystemExit as e:  # argparse: --help, usage errors (argparse exits with 2)
        if e.code is None:
            return 0
        return 1 if e.code == 2 or not isinstance(e.code, int) else e.code
    except KeyboardInterrupt:
        sys.stderr.write("rlx-opt: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`rlx-opt ... | head`): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence flush at exit
        except OSError:
            pass
        return 0
    except Exception as e:
        try:
            return _report_internal_error(e)
        except Exception:  # never let a traceback escape, even from the reporter
            sys.stderr.write(f"rlx-opt: internal error: {type(e).__name__}: {e}\n")
            return 2
    except BaseException as e:  # xDSL's ArgSpecParseError (a BaseException): bad -t spec
        if type(e).__name__ != "ArgSpecParseError":
            raise
        sys.stderr.write(
            f"rlx-opt: error: invalid -t/--target: {str(e).strip().splitlines()[-1].strip()}\n"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
