"""MLIR-style diagnostics for RLX tools: located errors, rendering, `--verify-diagnostics`.

Why this exists: xDSL's exceptions carry no source location of the offending op, and
xDSL's `--verify-diagnostics` only prints the error. RLX tools want what `mlir-opt` does:

* every diagnostic is `file:line:col: error: message`, followed by the source line and a
  caret (see `render`);
* passes report a failure *at an op* by raising `OpError(op, "message")` (a
  `PassFailedException`, so it survives xDSL's pattern walker unchanged) and emit
  warnings/remarks with `emit_warning(op, ...)` / `emit_remark(op, ...)`;
* tests put the expectations into the input (`// expected-error @+1 {{substring}}`) and
  `verify_expectations` checks emitted against expected diagnostics (`expectations`).

Only light xDSL modules are imported here so that importing this module stays cheap.
"""

from rlx.diagnostics.core import (
    SEVERITIES,
    Diagnostic,
    DiagnosticEngine,
    InternalError,
    OpError,
    Severity,
    SourceLoc,
    SourceManager,
    diagnostic_from_exception,
    emit_remark,
    emit_warning,
    loc_from_attr,
    op_loc,
    op_name,
    render,
)
from rlx.diagnostics.expectations import (
    ExpectedDiagnostic,
    parse_expectations,
    verify_expectations,
)

__all__ = [
    "SEVERITIES", "Diagnostic", "DiagnosticEngine", "ExpectedDiagnostic", "InternalError",
    "OpError", "Severity", "SourceLoc", "SourceManager", "diagnostic_from_exception",
    "emit_remark", "emit_warning", "loc_from_attr", "op_loc", "op_name",
    "parse_expectations", "render", "verify_expectations",
]  # fmt: skip
