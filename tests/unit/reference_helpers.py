"""Shared helpers of the reference-interpreter tests: run generic-form MLIR both as
unregistered ops and with the rlx dialect loaded (the verifier then checks the IR too);
the two runs must agree bit for bit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlx.interpreter import multi_op_module, parse_module, run, single_op_module


def run_both(text: str, inputs: Sequence[np.ndarray], **kw: Any) -> list[np.ndarray]:
    """Outputs of `text`, parsed without and with the rlx dialect; they must agree."""
    out = run(parse_module(text, with_rlx=False), list(inputs), **kw)
    for a, b in zip(out, run(parse_module(text), list(inputs), **kw), strict=True):
        np.testing.assert_array_equal(a, b)
    return out


def run1(
    name: str, operands: Sequence[np.ndarray], result: Any = None, attrs: str = "", **kw: Any
) -> np.ndarray:
    """Run one op (generic form) on arrays; `result` is an array or (shape, dtype)."""
    result = operands[0] if result is None else result
    (out,) = run_both(single_op_module(name, list(operands), [result], attrs), operands, **kw)
    return out


def run_many(inputs: Sequence[np.ndarray], calls: Any, **kw: Any) -> list[np.ndarray]:
    """Many ops in one function: `calls` as for `multi_op_module`."""
    return run_both(multi_op_module(inputs, calls), inputs, **kw)


def ints(*vals: int) -> str:
    """An `array<i64: ...>` attribute."""
    return "array<i64" + (": " + ", ".join(map(str, vals)) if vals else "") + ">"


def assert_close(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    """`got` matches the reference `want` in f64: relative `tol`, absolute `tol` scaled by
    the reference's magnitude (at least 1), so low-precision results of large values are
    judged by their own rounding, not by a fixed absolute bound."""
    g64, w64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * max(1.0, float(np.abs(w64).max())))
