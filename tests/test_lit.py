"""Run the lit/FileCheck suite (tests/filecheck) from pytest, one test per lit file.

So that plain `pytest` at the repository root runs both suites, each `.mlir` file of
tests/filecheck is its own test (parametrized: pytest-xdist spreads them over the cores);
a failing test carries lit's output for that file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).resolve().parent / "filecheck"
EXCLUDED_DIRS = {"Inputs", "Output"}


def lit_files() -> list[Path]:
    """Every lit test file (lit.cfg: suffix .mlir, not under Inputs/ or Output/)."""
    return sorted(
        p
        for p in FILECHECK_DIR.rglob("*.mlir")
        if not EXCLUDED_DIRS & set(p.relative_to(FILECHECK_DIR).parts)
    )


@pytest.mark.parametrize("path", lit_files(), ids=lambda p: str(p.relative_to(FILECHECK_DIR)))
def test_lit(path: Path) -> None:
    """One lit file passes (with this interpreter's venv on PATH, see lit.cfg)."""
    cmd = [
        sys.executable,
        "-c",
        "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()",
        "-sv",  # succinct: full output of a failing test only
        "--no-progress-bar",
        str(path),
    ]
    result = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600
    )
    if "Unsupported: 1" in result.stdout or "UNSUPPORTED:" in result.stdout:
        pytest.skip("lit: UNSUPPORTED (a REQUIRES feature is missing)")
    if result.returncode != 0:
        raise AssertionError(
            f"lit failed (exit code {result.returncode}); rerun with `lit -v {path}`\n\n"
            f"--- lit stdout ---\n{result.stdout}\n--- lit stderr ---\n{result.stderr}"
        )


def test_lit_files_found() -> None:
    """The suite is not silently empty (a moved directory would make it so)."""
    assert len(lit_files()) > 50
