"""Data-dependent run-time errors shared by compiled code and the reference interpreter.

Why one module: the same bad input (an index out of range, an integer division by zero)
must raise the same kind of error whether a graph is interpreted (`rlx.reference`), folded
(`constant-folding` leaves such an op for run time) or compiled (`CompiledGraph.run`
decodes the status record the generated code wrote, see docs/runtime.md). Both classes
are `ValueError`s, so callers catching bad input keep working.

The status record (`memref<STATUS_WORDS x i64>`, argument kind `status`) holds:
word 0 the error code (0: none), 1 the failing site (index into the function's
`rlx.error_sites`), 2 the bad value, 3 the bound (axis size), 4 the site about to run
(written by the caller before each checked kernel call).
"""

from __future__ import annotations

import re


class RlxRunError(ValueError):
    """Base of the errors a run raises for bad data (as opposed to a bad program)."""


class RlxIndexError(RlxRunError, IndexError):
    """An index outside `[-n, n)` of the axis it indexes (gather)."""


class IntegerDivisionError(RlxRunError, ZeroDivisionError):
    """An integer division or remainder by zero, a signed `INT_MIN / -1`, or an integer
    mean over no elements: results with no defined value."""


class IntegerPowError(RlxRunError, ArithmeticError):
    """An integer `pow` with a negative exponent."""


STATUS_WORDS = 5
CODE, SITE, VALUE, BOUND, CURRENT = range(STATUS_WORDS)

INDEX_OUT_OF_RANGE = 1
DIVISION_BY_ZERO = 2
DIVISION_OVERFLOW = 3
EMPTY_MEAN = 4
NEGATIVE_POW = 5


_QUOTED = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(?:\.\.\.)?"""
_FROM = re.compile(
    rf"^(.*?) (\[(?:computed )?from inputs? {_QUOTED}(?:, {_QUOTED})*(?:, \.\.\. \(\d+ inputs\))?\])$",
    re.S,
)
"""The inputs part of a site (`traps.find_sites`): `... [from input 'idx']`, each name a
Python `repr` (`traps.quote_name`), so the list is found even where a name or the op's
location holds `[from input` or a quote: the shortest prefix whose rest is such a list."""


def status_error(site: str, code: int, value: int, bound: int) -> RlxRunError:
    """The exception for one decoded status record (`site` names the op and its location,
    then, in brackets, the inputs its checked operands come from: moved to the end)."""
    m = _FROM.match(site)
    if m is None:
        return _status_error(site, code, value, bound)
    e = _status_error(m.group(1), code, value, bound)
    return type(e)(f"{e} {m.group(2)}")


def _status_error(site: str, code: int, value: int, bound: int) -> RlxRunError:
    if code == INDEX_OUT_OF_RANGE:
        return RlxIndexError(f"{site}: index {value} is out of range for an axis of size {bound}")
    if code == DIVISION_BY_ZERO:
        return IntegerDivisionError(f"{site}: integer division by zero (dividend {value})")
    if code == DIVISION_OVERFLOW:
        return IntegerDivisionError(f"{site}: integer division overflow ({value} / -1)")
    if code == EMPTY_MEAN:
        return IntegerDivisionError(f"{site}: integer mean over no elements")
    if code == NEGATIVE_POW:
        return IntegerPowError(f"{site}: integer pow with a negative exponent ({value})")
    return RlxRunError(f"{site}: run-time error code {code} (value {value}, bound {bound})")
