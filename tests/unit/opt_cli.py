"""Helpers of the in-process rlx-opt CLI tests (`test_rlx_opt_stages.py`,
`test_rlx_opt_reports.py`): write an input file, run `rlx-opt` and capture its output."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlx.tools.rlx_opt import main


def write(tmp_path: Path, text: str, name: str = "in.mlir") -> Path:
    """`text` as the file `name` in `tmp_path`."""
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `rlx-opt args...`, run in-process."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
