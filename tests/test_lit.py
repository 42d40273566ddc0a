"""Run the lit/FileCheck suite (tests/filecheck) from pytest, one test per lit file.

So that plain `pytest` at the repository root runs both suites, each `.mlir` file of
tests/filecheck is its own test (parametrized; under pytest-xdist they share one worker,
the `lit` group); a failing test carries lit's output for that file.

`lit`, `rlx-opt` and `filecheck` are served by a fork server (tests/tool_server.py, one
per pytest process, started by the first lit test): each run is a fork of an interpreter
that has imported the tools already, which saves ~0.2-0.4 s of CPU per `rlx-opt` and
~0.1 s per `filecheck`/`lit` (~700 processes; their clients, tests/tool_client.py). `RLX_LIT_TOOL_SERVER=0` runs every tool
as a fresh process instead (what `lit -v tests/filecheck` always does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).resolve().parent / "filecheck"
EXCLUDED_DIRS = {"Inputs", "Output"}
SERVER = Path(__file__).resolve().parent / "tool_server.py"
SERVED_TOOLS = ("lit", "rlx-opt", "filecheck")
FRESH_LIT = [
    sys.executable,
    "-c",
    "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()",
]
MAX_SOCKET_PATH = 100
"""AF_UNIX paths are limited to 107 bytes on Linux."""

# Every lit file runs on one pytest-xdist worker (`--dist loadgroup`, pyproject.toml): one
# tool server (its preload: ~3 s of CPU) serves them all, not one per worker.
pytestmark = pytest.mark.xdist_group("lit")


def lit_files() -> list[Path]:
    """Every lit test file (lit.cfg: suffix .mlir, not under Inputs/ or Output/)."""
    return sorted(
        p
        for p in FILECHECK_DIR.rglob("*.mlir")
        if not EXCLUDED_DIRS & set(p.relative_to(FILECHECK_DIR).parts)
    )


def _start_server(directory: str) -> subprocess.Popen[bytes] | None:
    """Start tests/tool_server.py listening in `directory` and write its clients there;
    None if it cannot serve here (the tools then run as fresh processes)."""
    sys.path.insert(0, str(SERVER.parent))
    try:
        import tool_client
    finally:
        sys.path.remove(str(SERVER.parent))
    socket_path = os.path.join(directory, "socket")
    reals = {
        tool: shutil.which(tool, path=os.path.dirname(sys.executable)) for tool in SERVED_TOOLS
    }
    if len(socket_path) > MAX_SOCKET_PATH or not all(reals.values()):
        return None
    with open(os.path.join(directory, "server.log"), "wb") as log:
        server = subprocess.Popen(
            [sys.executable, str(SERVER), socket_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    assert server.stdout is not None
    if server.stdout.readline() != b"ready\n":
        server.wait(timeout=60)
        with open(os.path.join(directory, "server.log"), errors="replace") as log_text:
            message = f"tool server failed, lit runs fresh processes: {log_text.read()}"
        warnings.warn(message, stacklevel=2)
        return None
    tool_client.write_clients(directory, socket_path, {t: str(r) for t, r in reals.items()})
    return server


@pytest.fixture(scope="session")
def lit_command() -> Iterator[tuple[list[str], dict[str, str]]]:
    """How to run lit: (command, environment); through the tool server if it can run."""
    if os.environ.get("RLX_LIT_TOOL_SERVER", "1").strip() == "0" or not hasattr(os, "fork"):
        yield FRESH_LIT, dict(os.environ)
        return
    directory = tempfile.mkdtemp(prefix="rlx-lit-")
    server = None
    try:
        server = _start_server(directory)
        if server is None:
            yield FRESH_LIT, dict(os.environ)
        else:
            env = dict(os.environ, RLX_LIT_TOOL_DIR=directory)
            yield [os.path.join(directory, "lit")], env
    finally:
        if server is not None:
            assert server.stdin is not None
            server.stdin.close()  # the server reaps its children and exits
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:  # a run that hangs (its test failed)
                server.kill()
                server.wait()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("path", lit_files(), ids=lambda p: str(p.relative_to(FILECHECK_DIR)))
def test_lit(path: Path, lit_command: tuple[list[str], dict[str, str]]) -> None:
    """One lit file passes (with this interpreter's venv on PATH, see lit.cfg)."""
    command, env = lit_command
    cmd = [
        *command,
        "-sv",  # succinct: full output of a failing test only
        "--no-progress-bar",
        str(path),
    ]
    result = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600, env=env
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
