"""Run the lit/FileCheck suite (tests/filecheck) from pytest.

So that plain `pytest` at the repository root runs both suites: this test fails when any
lit test fails, and its failure message carries lit's output for the failing tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FILECHECK_DIR = Path(__file__).resolve().parent / "filecheck"


def test_lit_suite() -> None:
    """All of tests/filecheck passes under lit (with this interpreter's venv on PATH)."""
    # lit.cfg puts os.path.dirname(sys.executable) first on PATH, so running lit with
    # this interpreter makes `rlx-opt` and `filecheck` resolve from the same venv.
    cmd = [
        sys.executable,
        "-c",
        "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()",
        "-sv",  # succinct: no line per passing test; full output of failing ones
        "--no-progress-bar",
        str(FILECHECK_DIR),
    ]
    result = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=3600
    )
    if result.returncode != 0:
        raise AssertionError(
            f"lit failed (exit code {result.returncode}); rerun with "
            f"`lit -v {FILECHECK_DIR}`\n\n--- lit stdout ---\n{result.stdout}"
            f"\n--- lit stderr ---\n{result.stderr}"
        )
