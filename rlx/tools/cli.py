"""What the `rlx-run` and `rlx-bake` command lines share: an argument parser whose usage
errors are ordinary errors, and a `main` wrapper that turns every failure into one
`PROG: error: ...` line and exit code 1 (never a traceback, unless RLX_DEBUG=1)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn


class UsageError(Exception):
    """A bad command line (reported like every other error, exit code 1)."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises `UsageError` instead of exiting with code 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse `type=` for an integer >= `minimum` (`what` names it in the error): a
    negative seed or a run count of 0 is a usage error, not an internal error or a run
    that silently does nothing."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, got {n}")
        return n

    return parse


def one_line(e: BaseException) -> str:
    """The first non-empty line of an error message, without a nested `: error:`."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()] or [type(e).__name__]
    return lines[0].replace(": error: ", ": ", 1)


def run_main(
    prog: str, run: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None
) -> int:
    """Call `run(argv)`; map errors to `prog: error: ...` on stderr and exit code 1."""
    try:
        return run(argv)
    except KeyboardInterrupt:
        return 130
    except SystemExit as e:  # --help, --version
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    except Exception as e:
        if os.environ.get("RLX_DEBUG"):
            raise
        kind = "" if isinstance(e, ValueError | UsageError | OSError) else f"{type(e).__name__}: "
        sys.stderr.write(f"{prog}: error: {kind}{one_line(e)}\n")
        return 1
