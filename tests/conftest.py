"""Test-session setup: the on-disk compile cache goes to a temporary directory, so tests
never read or pollute the user's cache (~/.cache/rlx)."""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_compile_cache() -> object:
    with tempfile.TemporaryDirectory(prefix="rlx-test-cache-") as d:
        old = os.environ.get("RLX_CACHE_DIR")
        os.environ["RLX_CACHE_DIR"] = d
        yield
        if old is None:
            os.environ.pop("RLX_CACHE_DIR", None)
        else:
            os.environ["RLX_CACHE_DIR"] = old
